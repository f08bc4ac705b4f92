package registry

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/nexus-mcp/nexus/host/mcp"
)

// allowed is what LLM providers accept as a tool name.
var allowed = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

func TestExposedName(t *testing.T) {
	long := strings.Repeat("x", 80)
	for _, tc := range []struct{ server, tool, want string }{
		{"github", "create_issue", "mcp_github_create_issue"},
		{"fs", "read-file", "mcp_fs_read-file"},
		// A name that had to change carries a hash of the exact names.
		{"my server", "tool.name/v2", "mcp_my_server_tool_name_v2_8c3fa970"},
		{"s", "ünï", "mcp_s___n___b35940bf"}, // each byte of a multi-byte rune becomes '_'
		{"s", "", "mcp_s_"},
		{"s", "a\x00b\nc", "mcp_s_a_b_c_3b082664"},
	} {
		if got := ExposedName(tc.server, tc.tool); got != tc.want {
			t.Errorf("ExposedName(%q, %q) = %q, want %q", tc.server, tc.tool, got, tc.want)
		}
	}

	// Exactly 64 characters is kept whole; one more is shortened.
	fit := strings.Repeat("a", MaxNameLen-len("mcp_s_"))
	if got := ExposedName("s", fit); got != "mcp_s_"+fit {
		t.Errorf("a 64-character name was changed: %q", got)
	}
	a, b := ExposedName("s", fit+"1"), ExposedName("s", fit+"2")
	for _, n := range []string{a, b} {
		if len(n) != MaxNameLen || !allowed.MatchString(n) || !strings.HasPrefix(n, "mcp_s_aaaa") {
			t.Errorf("shortened name %q (%d chars)", n, len(n))
		}
	}
	if a == b {
		t.Errorf("two long names that differ after the cut got the same name %q", a)
	}
	if first, again := ExposedName("s", long), ExposedName("s", long); first != again {
		t.Errorf("shortening is not deterministic: %q, then %q", first, again)
	}
	// The hash covers the exact names, not their sanitized forms.
	if ExposedName("s", long+".") == ExposedName("s", long+"_") {
		t.Error("long names that sanitize alike got the same hash")
	}
}

func FuzzExposedName(f *testing.F) {
	for _, s := range [][2]string{
		{"github", "create_issue"}, {"my server", "tool.name"}, {"", ""},
		{"s", strings.Repeat("ü", 40)}, {strings.Repeat("x", 70), "t"},
		{"a", "b_c"}, {"a_b", "c"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, server, tool string) {
		name := ExposedName(server, tool)
		if !allowed.MatchString(name) {
			t.Fatalf("ExposedName(%q, %q) = %q, outside ^[a-zA-Z0-9_-]{1,64}$", server, tool, name)
		}
		if ExposedName(server, tool) != name {
			t.Fatal("not deterministic")
		}
		plain := "mcp_" + server + "_" + tool
		if allowed.MatchString(plain) && name != plain {
			t.Fatalf("a name that needs no change was changed: %q -> %q", plain, name)
		}
		// Within a catalog every tool gets its own name, and each name
		// leads back to exactly its tool, even when the server offers a
		// look-alike of it.
		twin := strings.Map(func(r rune) rune {
			if r == '_' {
				return '.'
			}
			return '_'
		}, tool)
		lists := map[string][]mcp.Tool{server: {{Name: tool}, {Name: twin}}, server + "_": {{Name: tool}}}
		checkCatalog(t, lists)
	})
}

// checkCatalog asserts every tool has a distinct, valid name that maps back
// to it exactly, by exposed name and by server.tool.
func checkCatalog(t *testing.T, lists map[string][]mcp.Tool) *Catalog {
	t.Helper()
	c := NewCatalog(lists, nil)
	seen := map[string]Ref{}
	want := 0
	for _, tools := range lists {
		uniq := map[string]bool{}
		for _, tool := range tools {
			uniq[tool.Name] = true
		}
		want += len(uniq)
	}
	if len(c.Entries) != want {
		t.Fatalf("%d entries for %d distinct tools", len(c.Entries), want)
	}
	for _, e := range c.Entries {
		if !allowed.MatchString(e.Name) {
			t.Fatalf("entry name %q is not allowed", e.Name)
		}
		if prev, dup := seen[e.Name]; dup {
			t.Fatalf("%s and %s share the name %q", prev, e.Ref, e.Name)
		}
		seen[e.Name] = e.Ref
		if got, ok := c.Lookup(e.Name); !ok || got.Ref != e.Ref || got.Tool.Name != e.Ref.Tool {
			t.Fatalf("Lookup(%q) = %v, %v; want %v", e.Name, got.Ref, ok, e.Ref)
		}
		if !strings.Contains(e.Server, ".") {
			if got, ok := c.Lookup(e.Ref.String()); !ok || got.Ref != e.Ref {
				t.Fatalf("Lookup(%q) = %v, %v", e.Ref.String(), got.Ref, ok)
			}
		}
		if n, ok := c.Name(e.Ref); !ok || n != e.Name {
			t.Fatalf("Name(%v) = %q, want %q", e.Ref, n, e.Name)
		}
	}
	return c
}

func TestCatalogCollisions(t *testing.T) {
	lists := map[string][]mcp.Tool{
		"a":      {{Name: "b_c"}, {Name: "b.c"}, {Name: "x"}},
		"a_b":    {{Name: "c"}},
		"my.srv": {{Name: "t"}},
		"my srv": {{Name: "t"}},
	}
	c := checkCatalog(t, lists)
	// a.b.c had to change, so its name carries a hash; a.b_c would be
	// mcp_a_b_c, which is a_b.c's name (the underscore ambiguity): since
	// server a_b exists, a's tools that start with b_ carry a hash and
	// a_b.c keeps its plain name. The servers with a dot and a space had
	// to change too. Nothing collides.
	if len(c.Collisions) != 0 {
		t.Fatalf("collisions: %v", c.Collisions)
	}
	if e, _ := c.Lookup("a_b.c"); e.Name != "mcp_a_b_c" {
		t.Errorf("a_b.c got %q", e.Name)
	}
	if e, _ := c.Lookup("a.b_c"); !strings.HasPrefix(e.Name, "mcp_a_b_c_") {
		t.Errorf("a.b_c got %q", e.Name)
	}
	if e, _ := c.Lookup("a.b.c"); e.Name != ExposedName("a", "b.c") || !strings.HasPrefix(e.Name, "mcp_a_b_c_") {
		t.Errorf("a.b.c got %q", e.Name)
	}
	// With the config's Namer, a name does not depend on which servers
	// are listed (up, or visible to an agent).
	namer := NewNamer([]string{"a", "a_b", "my.srv", "my srv"}, nil)
	full := NewCatalog(lists, namer)
	for _, only := range []string{"a", "a_b"} {
		part := NewCatalog(map[string][]mcp.Tool{only: lists[only]}, namer)
		for _, e := range part.Entries {
			if n, _ := full.Name(e.Ref); n != e.Name {
				t.Errorf("%v: %q with every server listed, %q with only %s", e.Ref, n, e.Name, only)
			}
		}
	}
	// A name is the same whatever else is listed.
	alone := NewCatalog(map[string][]mcp.Tool{"a": {{Name: "b.c"}}}, nil)
	if e, _ := alone.Lookup("a.b.c"); e.Name != ExposedName("a", "b.c") {
		t.Errorf("a.b.c alone: %q", e.Name)
	}
	for _, col := range c.Collisions {
		msg := col.String()
		if !strings.Contains(msg, col.First.String()) || !strings.Contains(msg, col.Then.String()) || !strings.Contains(msg, col.Renamed) {
			t.Errorf("collision report %q does not name both tools and the new name", msg)
		}
		if n, _ := c.Name(col.Then); n != col.Renamed {
			t.Errorf("%v reported renamed to %q but is named %q", col.Then, col.Renamed, n)
		}
	}

	// The same lists in another order give the same names.
	shuffled := map[string][]mcp.Tool{}
	for s, tools := range lists {
		rev := append([]mcp.Tool(nil), tools...)
		for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
			rev[i], rev[j] = rev[j], rev[i]
		}
		shuffled[s] = rev
	}
	c2 := NewCatalog(shuffled, nil)
	for _, e := range c.Entries {
		if n, _ := c2.Name(e.Ref); n != e.Name {
			t.Errorf("%v: %q in one order, %q in another", e.Ref, e.Name, n)
		}
	}

	// A server listing a name twice keeps one entry.
	dup := NewCatalog(map[string][]mcp.Tool{"s": {{Name: "t", Description: "first"}, {Name: "t"}}}, nil)
	if len(dup.Entries) != 1 || dup.Entries[0].Tool.Description != "first" {
		t.Errorf("duplicate tool: %+v", dup.Entries)
	}
	if _, ok := c.Lookup("mcp_nope"); ok {
		t.Error("Lookup found a name nobody has")
	}
	if _, ok := c.Lookup("a.nope"); ok {
		t.Error("Lookup found a tool nobody has")
	}
}

// TestCatalogMany: 10,000 tools whose long names share a prefix all get
// distinct, valid names.
func TestCatalogMany(t *testing.T) {
	prefix := strings.Repeat("very_long_tool_name_", 4)
	tools := make([]mcp.Tool, 10000)
	for i := range tools {
		tools[i].Name = fmt.Sprintf("%s%05d", prefix, i)
	}
	lists := map[string][]mcp.Tool{"big": tools}
	c := checkCatalog(t, lists)
	if len(c.Collisions) != 0 {
		t.Errorf("%d collisions among hashed names", len(c.Collisions))
	}
}

func BenchmarkNewCatalog(b *testing.B) {
	tools := make([]mcp.Tool, 10000)
	for i := range tools {
		tools[i].Name = fmt.Sprintf("tool_%05d", i)
	}
	lists := map[string][]mcp.Tool{"big": tools}
	b.ReportAllocs()
	for b.Loop() {
		NewCatalog(lists, nil)
	}
}

func TestCatalogPrefixes(t *testing.T) {
	lists := map[string][]mcp.Tool{
		"a": {{Name: "echo"}, {Name: "add"}},
		"b": {{Name: "echo"}, {Name: "sub"}},
		"c": {{Name: "echo"}},
	}
	c := NewCatalog(lists, NewNamer([]string{"a", "b", "c"}, map[string]string{"a": "", "b": ""}))
	var names []string
	for _, e := range c.Entries {
		names = append(names, e.Name+"="+e.Ref.String())
	}
	want := "add=a.add echo=a.echo sub=b.sub mcp_c_echo=c.echo"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("names %s, want %s", got, want)
	}
	if len(c.Collisions) != 1 || c.Collisions[0].Renamed != "" || c.Collisions[0].Then != (Ref{"b", "echo"}) {
		t.Fatalf("collisions %+v", c.Collisions)
	}
	msg := c.Collisions[0].String()
	for _, s := range []string{`"a"`, `"b"`, "prefix", "left out"} {
		if !strings.Contains(msg, s) {
			t.Errorf("collision message %q lacks %q", msg, s)
		}
	}
	// Names are a pure function of server and tool: the same in any order
	// and whatever else is listed.
	alone := NewCatalog(map[string][]mcp.Tool{"c": {{Name: "echo"}}}, nil)
	if e, _ := alone.Lookup("c.echo"); e.Name != "mcp_c_echo" {
		t.Errorf("alone: %q", e.Name)
	}
	if got := PrefixedName("gh_", "github", "list_repos"); got != "gh_list_repos" {
		t.Errorf("PrefixedName = %q", got)
	}
	if got := PrefixedName("", "s", strings.Repeat("x", 80)); len(got) != MaxNameLen {
		t.Errorf("long name %q", got)
	}
}
