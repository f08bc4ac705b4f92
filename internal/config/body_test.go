package config

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/nexus-mcp/nexus/internal/option"
)

// nestedBlock stands for a block with blocks inside (a filter's match and
// limits, an agent's named rules): one at most, any number, and any
// number of named ones.
type nestedBlock struct {
	Limits nestedLimits
	Match  []nestedMatch
	Steps  []*nestedStep
}

type nestedLimits struct {
	Memory  int
	Timeout time.Duration
}

type nestedMatch struct{ Tools []string }

type nestedStep struct{ Name, Run string }

var nestedTable = option.Table[nestedBlock]{
	option.Nest("limits", option.Table[nestedLimits]{
		{HCL: "memory", JSON: "memory", Example: `64`,
			Decode: func(l *nestedLimits, v option.Value) { l.Memory, _ = v.Int(1) },
			Out: func(l *nestedLimits, _ option.Writer) any {
				if l.Memory == 0 {
					return nil
				}
				return l.Memory
			}},
		{HCL: "timeout", JSON: "timeout", Example: `"2s"`,
			Decode: func(l *nestedLimits, v option.Value) { l.Timeout, _ = v.Duration() },
			Out: func(l *nestedLimits, _ option.Writer) any {
				if l.Timeout == 0 {
					return nil
				}
				return l.Timeout.String()
			}},
	}, func(b *nestedBlock) *nestedLimits { return &b.Limits }, `{"memory": 64}`),
	option.NestList("match", option.Table[nestedMatch]{
		{HCL: "tools", JSON: "tools", Example: `["read_*"]`,
			Decode: func(m *nestedMatch, v option.Value) { m.Tools, _ = v.Strings("") },
			Out:    func(m *nestedMatch, _ option.Writer) any { return m.Tools }},
	}, func(b *nestedBlock, _ option.Body) *nestedMatch {
		b.Match = append(b.Match, nestedMatch{})
		return &b.Match[len(b.Match)-1]
	}, func(b *nestedBlock) []*nestedMatch {
		out := make([]*nestedMatch, len(b.Match))
		for i := range b.Match {
			out[i] = &b.Match[i]
		}
		return out
	}, `{"tools": ["read_*"]}`),
	option.NestList("step", option.Table[nestedStep]{
		{HCL: "name", JSON: "name", Label: true, Example: `"build"`,
			Decode: func(s *nestedStep, v option.Value) {
				if s.Name, _ = v.String(""); strings.Contains(s.Name, ".") {
					v.Fail("step name "+s.Name+" has a dot", option.NameRule)
				}
			},
			Out: func(s *nestedStep, _ option.Writer) any { return s.Name }},
		{HCL: "run", JSON: "run", Required: true, Example: `"make"`,
			Decode: func(s *nestedStep, v option.Value) { s.Run, _ = v.String("") },
			Out:    func(s *nestedStep, _ option.Writer) any { return s.Run }},
	}, func(b *nestedBlock, _ option.Body) *nestedStep {
		s := &nestedStep{}
		b.Steps = append(b.Steps, s)
		return s
	}, func(b *nestedBlock) []*nestedStep { return b.Steps }, `{"name": "build", "run": "make"}`),
}

var nestedTB = tableBlock[nestedBlock]{Block: option.Block[nestedBlock]{Name: "example_nested", Options: nestedTable,
	New: func() *nestedBlock { return &nestedBlock{} }}}

func init() { RegisterBlock("example_nested", nestedTable) }

const nestedHCL = `example_nested {
  limits {
    memory  = 64
    timeout = "2s"
  }
  match {
    tools = ["read_*"]
  }
  match {
    tools = ["list_*", "get_*"]
  }
  step "build" {
    run = "make"
  }
  step "test" {
    run = "make test"
  }
}
`

const nestedJSON = `{"example_nested": {
  "limits": {"memory": 64, "timeout": "2s"},
  "match": [{"tools": ["read_*"]}, {"tools": ["list_*", "get_*"]}],
  "step": [{"name": "build", "run": "make"}, {"name": "test", "run": "make test"}]
}}`

// Blocks inside a block and their labels are read from nexus.hcl and JSON
// to the same options, and come back unchanged through nexus JSON.
func TestNestedRows(t *testing.T) {
	want := &nestedBlock{
		Limits: nestedLimits{Memory: 64, Timeout: 2 * time.Second},
		Match:  []nestedMatch{{Tools: []string{"read_*"}}, {Tools: []string{"list_*", "get_*"}}},
		Steps:  []*nestedStep{{"build", "make"}, {"test", "make test"}},
	}
	fromHCL := mustLoad(t, "nexus.hcl", nestedHCL, nil)
	if got := Owned[nestedBlock](fromHCL, "example_nested"); !reflect.DeepEqual(got, want) {
		t.Fatalf("nexus.hcl: %+v, want %+v", got, want)
	}
	if got := Owned[nestedBlock](mustLoad(t, "nexus.json", nestedJSON, nil), "example_nested"); !reflect.DeepEqual(got, want) {
		t.Fatalf("JSON: %+v, want %+v", got, want)
	}
	// One match object alone is a list of one.
	one := mustLoad(t, "nexus.json", `{"example_nested": {"match": {"tools": ["x"]}}}`, nil)
	if got := Owned[nestedBlock](one, "example_nested"); len(got.Match) != 1 || got.Match[0].Tools[0] != "x" {
		t.Errorf("one match object: %+v", got)
	}
	out, err := json.Marshal(map[string]any{"example_nested": nestedTB.out(newCompiler(fromHCL, FormatNexusJSON, true, false), want)})
	if err != nil {
		t.Fatal(err)
	}
	if got := Owned[nestedBlock](mustLoad(t, "back.json", string(out), nil), "example_nested"); !reflect.DeepEqual(got, want) {
		t.Errorf("through nexus JSON %s: %+v", out, got)
	}
}

// A nested row's mistakes are reported as a top-level row's are: at its
// line, with what is wrong and the fix, in each format's words.
func TestNestedRowErrors(t *testing.T) {
	for _, c := range []struct {
		name, src string
		want      []string
	}{
		{"nexus.hcl", "example_nested {\n  limits {\n    memory = 1\n  }\n  limits {\n    memory = 2\n  }\n}\n",
			[]string{"line 5,", "an example_nested has at most one limits block (first on line 2)", "Merge the two"}},
		{"nexus.hcl", "example_nested {\n  match {\n    tool = [\"x\"]\n  }\n}\n",
			[]string{"line 3,", `"tool"`, `Did you mean "tools"?`}},
		{"nexus.hcl", "example_nested {\n  limits {\n    memory = 0\n  }\n}\n",
			[]string{"line 3,", `"memory" must be a whole number of at least 1, found 0`}},
		{"nexus.hcl", "example_nested {\n  step \"a.b\" {\n    run = \"x\"\n  }\n}\n",
			[]string{"line 2, column 8", "step name a.b has a dot", option.NameRule}},
		{"nexus.hcl", "example_nested {\n  step \"a\" {\n  }\n}\n",
			[]string{"line 2,", `"run" is required`}},
		{"nexus.hcl", "example_nested {\n  step {\n    run = \"x\"\n  }\n}\n",
			[]string{"line 2,", "label", "name"}},
		{"nexus.json", "{\"example_nested\": {\n  \"limits\": {\"memory\": \"x\"}\n}}",
			[]string{"line 2,", `"limits.memory" must be a whole number`}},
		{"nexus.json", "{\"example_nested\": {\n  \"limits\": [{\"memory\": 1}]\n}}",
			[]string{"line 2,", `"limits" must be an object, found an array`}},
		{"nexus.json", "{\"example_nested\": {\n  \"match\": [\"x\"]\n}}",
			[]string{"line 2,", `"match" must be an object, found a string`}},
		{"nexus.json", "{\"example_nested\": {\n  \"step\": [\n    {\"name\": \"a\"}\n  ]\n}}",
			[]string{"line 3,", `step needs "run"`}},
		{"nexus.json", "{\"example_nested\": {\n  \"step\": [\n    {\"name\": \"a.b\", \"run\": \"x\"}\n  ]\n}}",
			[]string{"line 3,", "step name a.b has a dot"}},
	} {
		_, err := loadOne(t, c.name, c.src, nil)
		if err == nil {
			t.Errorf("%s:\n%s\nloaded", c.name, c.src)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(errText(err), w) {
				t.Errorf("%s:\n%s\nno %q in:\n%s", c.name, c.src, w, errText(err))
			}
		}
	}
	// An unknown member of a nested object warns in JSON, with the
	// nearest name, as at the top level.
	cfg := mustLoad(t, "nexus.json", `{"example_nested": {"match": {"tool": ["x"]}}}`, nil)
	if len(cfg.Warnings) != 1 || !strings.Contains(cfg.Warnings[0].String(), `unknown field "tool" in match is ignored; did you mean "tools"?`) {
		t.Errorf("warnings %v", cfg.Warnings)
	}
}
