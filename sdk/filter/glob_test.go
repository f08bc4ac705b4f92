package filter

import (
	"path"
	"strings"
	"testing"
)

func TestGlob(t *testing.T) {
	patterns := []string{"github.get_*", "*.delete_*", "exact.name", "*", "a*b", "*_x", "db.[a-c]?", `e\*x`, "s.*/x", "", "a*"}
	names := []string{"github.get_issue", "github.get_", "gitlab.get_issue", "x.delete_repo", "delete_repo", "exact.name", "exact.names", "ab", "axxb", "a/b", "y_x", "db.b1", "e*x", "", "a", "a/x", "s.q/x"}
	for _, p := range patterns {
		g, err := CompileGlob(p)
		if err != nil {
			t.Fatal(p, err)
		}
		for _, n := range names {
			want, _ := path.Match(p, n)
			if got := g.Match(n); got != want {
				t.Errorf("%q ~ %q: %v, path.Match says %v", p, n, got, want)
			}
		}
	}
	if _, err := CompileGlob("a["); err == nil {
		t.Fatal("bad pattern compiled")
	}
}

func FuzzGlob(f *testing.F) {
	f.Add("github.get_*", "github.get_issue")
	f.Add("*.x/*", "a.x/b")
	f.Fuzz(func(t *testing.T, p, s string) {
		g, err := CompileGlob(p)
		if err != nil {
			return
		}
		want, _ := path.Match(p, s)
		if g.Match(s) != want {
			t.Fatalf("%q ~ %q: %v, path.Match says %v", p, s, !want, want)
		}
	})
}

func TestToolGlobs(t *testing.T) {
	gs, err := ToolGlobs("allow", []string{"github.get_*", "db.query"})
	if err != nil || len(gs) != 2 || !gs[0].Match("github.get_issue") || gs[1].Match("db.query2") {
		t.Fatalf("%v %v", gs, err)
	}
	for p, want := range map[string]string{
		"github": `config: allow: "github" has no dot; write "server.tool" (use "github.*" for every tool of a server)`,
		"a.[":    `config: allow: bad glob "a.["`,
	} {
		if _, err := ToolGlobs("allow", []string{p}); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%s: %v", p, err)
		}
	}
}
