package config

import (
	"strings"
	"testing"

	"github.com/nexus-mcp/nexus/internal/option"
)

// sitesBlock keeps where each element of a list and each member of an
// object was written (option.Value's ItemSites and MemberSites).
type sitesBlock struct {
	Names   []string
	NamesAt []option.Site
	Map     map[string]string
	MapAt   map[string]option.Site
}

func init() {
	RegisterBlock("example_sites", option.Table[sitesBlock]{
		{HCL: "names", JSON: "names", Example: `["a", "b"]`,
			Decode: func(s *sitesBlock, v option.Value) {
				if s.Names, _ = v.Strings(""); s.Names != nil {
					s.NamesAt = v.ItemSites()
				}
			}},
		{HCL: "map", JSON: "map", Example: `{"k": "v"}`,
			Decode: func(s *sitesBlock, v option.Value) {
				if s.Map, _ = v.Map(""); s.Map != nil {
					s.MapAt = v.MemberSites()
				}
			}},
	})
}

// Each element and member is at its own line and column, with the lines
// around it and a mark under it, in both formats; a list or object that
// is not written out (from a variable) has its elements at the whole
// value.
func TestValueSites(t *testing.T) {
	type at struct{ line, col int }
	check := func(t *testing.T, s *sitesBlock, names []at, members map[string]at) {
		t.Helper()
		if len(s.NamesAt) != len(names) {
			t.Fatalf("%d item sites for %v, want %d", len(s.NamesAt), s.Names, len(names))
		}
		for i, w := range names {
			got := s.NamesAt[i]
			if got.Source.Line != w.line || got.Source.Column != w.col {
				t.Errorf("names[%d] at %d:%d, want %d:%d", i, got.Source.Line, got.Source.Column, w.line, w.col)
			}
			if !strings.Contains(strings.Join(got.Lines, "\n"), "^") {
				t.Errorf("names[%d] has no mark: %q", i, got.Lines)
			}
		}
		if len(s.MapAt) != len(members) {
			t.Fatalf("member sites %v, want %v", s.MapAt, members)
		}
		for k, w := range members {
			if got := s.MapAt[k]; got.Source.Line != w.line || got.Source.Column != w.col || len(got.Lines) == 0 {
				t.Errorf("map[%q] at %d:%d %q, want %d:%d", k, got.Source.Line, got.Source.Column, got.Lines, w.line, w.col)
			}
		}
	}
	t.Run("hcl", func(t *testing.T) {
		cfg := mustLoad(t, "nexus.hcl", "example_sites {\n  names = [\n    \"a\",\n      \"b\",\n  ]\n  map = {\n    x = \"1\"\n    y   = \"2\"\n  }\n}\n", nil)
		check(t, Owned[sitesBlock](cfg, "example_sites"), []at{{3, 5}, {4, 7}}, map[string]at{"x": {7, 9}, "y": {8, 11}})
	})
	t.Run("json", func(t *testing.T) {
		cfg := mustLoad(t, "nexus.json", "{\"example_sites\": {\n  \"names\": [\"a\",\n    \"b\"],\n  \"map\": {\"x\": \"1\",\n   \"y\": \"2\"}\n}}\n", nil)
		check(t, Owned[sitesBlock](cfg, "example_sites"), []at{{2, 13}, {3, 5}}, map[string]at{"x": {4, 16}, "y": {5, 9}})
	})
	t.Run("variable", func(t *testing.T) {
		cfg := mustLoad(t, "nexus.hcl", "variable \"l\" {\n  default = [\"a\", \"b\"]\n}\nvariable \"m\" {\n  default = { x = \"1\" }\n}\nexample_sites {\n  names = var.l\n  map   = var.m\n}\n", nil)
		check(t, Owned[sitesBlock](cfg, "example_sites"), []at{{8, 11}, {8, 11}}, map[string]at{"x": {9, 11}})
	})
}
