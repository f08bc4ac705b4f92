package suggest

import (
	"slices"
	"testing"
)

func TestDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		d    int
	}{{"", "", 0}, {"abc", "", 3}, {"kitten", "sitting", 3}, {"testsrever", "testserver", 1}, {"evn", "env", 1}, {"ca", "abc", 3}, {"é", "e", 1}, {"日本", "日本語", 1}} {
		if got := Distance(c.a, c.b); got != c.d {
			t.Errorf("Distance(%q, %q) = %d, want %d", c.a, c.b, got, c.d)
		}
	}
}

func TestNearest(t *testing.T) {
	if got := Nearest("testsrever", []string{"testserver", "github"}); got != "testserver" {
		t.Errorf("got %q", got)
	}
	if got := Nearest("zzzzzz", []string{"testserver"}); got != "" {
		t.Errorf("a far name suggested: %q", got)
	}
	if got := Nearest("ab", []string{"ax", "ay"}); got != "ax" {
		t.Errorf("ties: got %q, want the first", got)
	}
}

func TestRanked(t *testing.T) {
	cands := [][]string{{"ts.echo", "mcp_ts_echo"}, {"ts.add", "mcp_ts_add"}, {"gh.search", "mcp_gh_search"}, {"ts.ech0", "x"}, {"ts.echo2", "y"}}
	if got := Ranked("mcp_ts_ecoh", cands); !slices.Equal(got, []string{"ts.echo"}) {
		t.Errorf("by its second name: %v", got)
	}
	if got := Ranked("ts.echo", cands); !slices.Equal(got, []string{"ts.echo", "ts.ech0", "ts.echo2"}) {
		t.Errorf("nearest first, at most three: %v", got)
	}
	if got := Ranked("zzzzzzzzz", cands); len(got) != 0 {
		t.Errorf("far names suggested: %v", got)
	}
}
