package config

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/nexus-mcp/nexus/internal/diag"
	"github.com/nexus-mcp/nexus/internal/option"
)

// TestOptions for the named blocks: internal/policy's filter, rule and
// agent, internal/plugin/block's plugin, and internal/gateway/block's
// gateway (named by no label, with its tls, limits and oauth). Every row of each table, and every row of each block nested in
// one (a filter's match, limits and rule, an agent's rules), is read from
// nexus.hcl and from JSON to the same model, sets something, and comes
// back unchanged through nexus JSON. A row added to a table is checked by
// its Example alone.
func TestNamedBlockOptions(t *testing.T) {
	for _, pc := range policyCases {
		shape := pc.shape
		for _, r := range shape.Rows {
			if r.Label {
				continue
			}
			if r.Nested == nil {
				t.Run(pc.name+"/"+r.HCL, func(t *testing.T) { pc.check(t, r.HCL, nil, "") })
				continue
			}
			for _, sub := range r.Nested.Rows {
				if sub.Label {
					continue
				}
				t.Run(pc.name+"/"+r.HCL+"/"+sub.HCL, func(t *testing.T) { pc.check(t, r.HCL, &r, sub.HCL) })
			}
		}
	}
}

// node is a block to write in both formats.
type node struct {
	shape *option.Shape
	label string
	attrs map[string]string  // row (HCL name) → its value as JSON text
	kids  map[string][]*node // nested row (HCL name) → its blocks
}

// newNode is a block of shape setting its required rows and those of
// set, each to its Example (set's values win).
func newNode(shape *option.Shape, label string, set map[string]string) *node {
	n := &node{shape: shape, label: label, attrs: map[string]string{}, kids: map[string][]*node{}}
	for _, r := range shape.Rows {
		v, ok := set[r.HCL]
		if !ok && r.Required && !r.Label {
			v, ok = r.Example, true
		}
		if !ok {
			continue
		}
		if r.Nested != nil {
			n.kids[r.HCL] = append(n.kids[r.HCL], fromExample(r.Nested, v))
		} else {
			n.attrs[r.HCL] = v
		}
	}
	return n
}

// fromExample is a nested block written as its row's Example, a JSON
// object.
func fromExample(shape *option.Shape, ex string) *node {
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(ex), &m); err != nil {
		panic(fmt.Sprintf("example %s: %v", ex, err))
	}
	set, label := map[string]string{}, ""
	for _, r := range shape.Rows {
		if v, ok := m[r.JSON]; ok {
			if r.Label {
				json.Unmarshal(v, &label)
				continue
			}
			set[r.HCL] = string(v)
		}
	}
	return newNode(shape, label, set)
}

func (n *node) hcl(typ, indent string) string {
	var b strings.Builder
	b.WriteString(indent + typ)
	if n.label != "" {
		fmt.Fprintf(&b, " %q", n.label)
	}
	b.WriteString(" {\n")
	for _, r := range n.shape.Rows {
		if v, ok := n.attrs[r.HCL]; ok {
			fmt.Fprintf(&b, "%s  %s = %s\n", indent, r.HCL, v) // JSON values are HCL expressions
		}
		for _, k := range n.kids[r.HCL] {
			b.WriteString(k.hcl(r.HCL, indent+"  "))
		}
	}
	return b.String() + indent + "}\n"
}

// json is the block as a JSON object; a nested row's blocks are an array
// when it may have more than one.
func (n *node) json(withLabel bool) map[string]any {
	m := map[string]any{}
	for _, r := range n.shape.Rows {
		switch {
		case r.Label && withLabel && n.label != "":
			m[r.JSON] = n.label
		case r.Nested != nil && len(n.kids[r.HCL]) > 0:
			var items []any
			for _, k := range n.kids[r.HCL] {
				items = append(items, k.json(true))
			}
			if r.Nested.Many {
				m[r.JSON] = items
			} else {
				m[r.JSON] = items[0]
			}
		default:
			if v, ok := n.attrs[r.HCL]; ok {
				m[r.JSON] = json.RawMessage(v)
			}
		}
	}
	return m
}

// policyCase is a named block as the test writes it: its shape, the rows
// it needs beside the one tested, its JSON form and its model.
type policyCase struct {
	name  string
	shape *option.Shape
	// base is what a block testing row (and sub, a row of a nested
	// block) sets beside it, with the row or without.
	base func(row, sub string, with bool) map[string]string
	// hcl is what the file holds beside the block in nexus.hcl (a plugin
	// a filter names); json writes that too.
	hcl string
	// json wraps the block's object in its file; get is its model.
	json func(n *node) any
	get  func(*Config) any
}

// label is what the test names its block: nothing for a block without
// a label row (the gateway).
func (pc policyCase) label() string {
	if len(pc.shape.Labels()) == 0 {
		return ""
	}
	return "t1"
}

// subBase is what a nested block testing sub sets beside it: a rule's
// set is for action modify, a gateway's tls has both cert and key.
func subBase(sub string) map[string]string {
	switch sub {
	case "set":
		return map[string]string{"action": `"modify"`}
	case "cert":
		return map[string]string{"key": `"certs/gateway-key.pem"`}
	case "key":
		return map[string]string{"cert": `"certs/gateway.pem"`}
	}
	return nil
}

var policyCases = []policyCase{
	{name: "filter", shape: filterBlock.Options.Shape(),
		base: func(row, sub string, with bool) map[string]string {
			if with && sub == "set" { // a policy's rule sets a request's arguments
				return map[string]string{"kind": `"policy"`}
			}
			if with && (row == "wasm" || row == "plugin" || row == "rule") {
				return nil
			}
			return map[string]string{"wasm": `"./f.wasm"`}
		},
		hcl: "plugin \"ratelimit\" {\n  path = \"./p\"\n}\n",
		json: func(n *node) any {
			return map[string]any{"filters": []any{n.json(true)}, "plugins": map[string]any{"ratelimit": map[string]any{"path": "./p"}}}
		},
		get: func(c *Config) any { return plainFilter(c.Filters[0]) }},
	{name: "rule", shape: ruleBlock.Options.Shape(),
		base: func(row, _ string, with bool) map[string]string {
			if with {
				return subBase(row)
			}
			return nil
		},
		// JSON writes a rule block as a filter whose link is its rule.
		json: func(n *node) any {
			f, r := map[string]any{"name": n.label, "kind": json.RawMessage(`"policy"`)}, map[string]any{}
			for k, v := range n.json(false) {
				if k == "kind" || k == "mode" {
					f[k] = v
				} else {
					r[k] = v
				}
			}
			f["rule"] = r
			return map[string]any{"filters": []any{f}}
		},
		get: func(c *Config) any { return plainFilter(c.Filters[0]) }},
	{name: "plugin", shape: pluginBlock.Options.Shape(),
		base: func(string, string, bool) map[string]string { return nil },
		json: func(n *node) any { return map[string]any{"plugins": map[string]any{n.label: n.json(false)}} },
		get: func(c *Config) any {
			p := *c.Plugins[0]
			p.Source = diag.Source{}
			return p
		}},
	{name: "agent", shape: agentBlock.Options.Shape(),
		base: func(_, sub string, _ bool) map[string]string { return subBase(sub) },
		json: func(n *node) any { return map[string]any{"agents": map[string]any{n.label: n.json(false)}} },
		get:  func(c *Config) any { return plainAgent(c.Agents[0]) }},
	// The server and agents its examples name, which the checks made
	// after the layers merge look for.
	{name: "gateway", shape: gatewayBlock.Options.Shape(),
		base: func(string, string, bool) map[string]string { return nil },
		hcl:  "server \"github\" {\n  stdio { command = \"gh\" }\n}\nagent \"claude\" { permission = \"yolo\" }\nagent \"readonly\" { permission = \"trusted\" }\n",
		json: func(n *node) any {
			return map[string]any{"gateway": n.json(false), "mcpServers": map[string]any{"github": map[string]any{"command": "gh"}},
				"agents": map[string]any{"claude": map[string]any{"permission": "yolo"}, "readonly": map[string]any{"permission": "trusted"}}}
		},
		get: func(c *Config) any { return *withoutSites(c.Gateway, true) }},
}

// check loads the block setting row (or, with nested, the nested block
// row setting its row sub) from both formats and through nexus JSON.
func (pc policyCase) check(t *testing.T, row string, nested *option.Row, sub string) {
	build := func(with bool) *node {
		set := pc.base(row, sub, with)
		if set == nil {
			set = map[string]string{}
		}
		top := map[string]string{}
		for k, v := range set {
			top[k] = v
		}
		if nested == nil {
			if with {
				top[row] = rowExample(pc.shape, row)
			}
			return newNode(pc.shape, pc.label(), top)
		}
		if nested.Nested.Many || with { // a block at most once is left out without its row
			n := newNode(pc.shape, pc.label(), top)
			nset := map[string]string{}
			if with {
				nset[sub] = rowExample(nested.Nested, sub)
				for k, v := range subBase(sub) {
					nset[k] = v
				}
			}
			label := ""
			if len(nested.Nested.Labels()) > 0 {
				label = "n1"
			}
			n.kids[row] = []*node{newNode(nested.Nested, label, nset)}
			return n
		}
		return newNode(pc.shape, pc.label(), top)
	}
	dir := t.TempDir()
	load := func(name, src string) any {
		t.Helper()
		cfg, err := Load(Options{Files: []string{write(t, dir, name, src)}, Dir: dir, Home: dir, LookupEnv: env()})
		if err != nil {
			t.Fatalf("%s:\n%s\n%v", name, src, errText(err))
		}
		return pc.get(cfg)
	}
	text := func(n *node) (string, string) {
		js, err := json.MarshalIndent(pc.json(n), "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		return pc.hcl + n.hcl(pc.name, ""), string(js)
	}
	h, j := text(build(true))
	got := load("nexus.hcl", h)
	if fromJSON := load("nexus.json", j); !reflect.DeepEqual(got, fromJSON) {
		t.Fatalf("nexus.hcl:\n%s\ngave %+v\nJSON:\n%s\ngave %+v", h, got, j, fromJSON)
	}
	// A required row is in the block without it too.
	required := nested == nil && slices.ContainsFunc(pc.shape.Rows, func(r option.Row) bool { return r.HCL == row && r.Required }) ||
		nested != nil && slices.ContainsFunc(nested.Nested.Rows, func(r option.Row) bool { return r.HCL == sub && r.Required })
	bh, _ := text(build(false))
	if base := load("base.hcl", bh); !required && reflect.DeepEqual(got, base) {
		t.Fatalf("the row set nothing:\n%s", h)
	}
	cfg, err := Load(Options{Files: []string{write(t, dir, "again.hcl", h)}, Dir: dir, Home: dir, LookupEnv: env()})
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := CompileShowingSecrets(cfg, FormatNexusJSON)
	if err != nil {
		t.Fatal(err)
	}
	if back := load("back.json", string(out)); !reflect.DeepEqual(got, back) {
		t.Errorf("through nexus JSON %+v, want %+v\n%s", back, got, out)
	}
}

// rowExample is the Example of shape's row named name.
func rowExample(shape *option.Shape, name string) string {
	i := slices.IndexFunc(shape.Rows, func(r option.Row) bool { return r.HCL == name })
	return shape.Rows[i].Example
}

// plainFilter is a filter without where it was written, which differs
// from file to file, and without its compiled rule.
func plainFilter(f *Filter) Filter {
	cp := *f
	cp.Source = diag.Source{}
	if f.Rule != nil {
		r := *f.Rule
		r.When.Source, r.Compiled = diag.Source{}, nil
		r.Set = slices.Clone(r.Set)
		for i := range r.Set {
			r.Set[i].Value.Source = diag.Source{}
		}
		cp.Rule = &r
	}
	return cp
}

func plainAgent(a *Agent) Agent {
	cp := *a
	cp.Source = diag.Source{}
	cp.Rules = nil
	for _, r := range a.Rules {
		p := plainFilter(r)
		cp.Rules = append(cp.Rules, &p)
	}
	return cp
}

// A named block's mistakes are reported at their line in each format:
// the collection's shape, a missing or repeated name, a required row,
// two rules of one agent with one name, a second limits block.
func TestNamedBlockErrors(t *testing.T) {
	for _, c := range []struct {
		name, src string
		want      []string
	}{
		{"nexus.json", "{\n  \"filters\": {\"f\": {}}\n}", []string{"line 2,", `"filters" must be an array of filters, in the order they run`}},
		{"nexus.json", "{\n  \"filters\": [\n    {\"kind\": \"policy\"}\n  ]\n}", []string{"line 3,", `filter 0 has no "name"`}},
		{"nexus.json", "{\"filters\": [\n  {\"name\": \"f\", \"kind\": \"policy\", \"wasm\": \"f.wasm\"},\n  {\"name\": \"f\", \"kind\": \"policy\", \"wasm\": \"f.wasm\"}\n]}",
			[]string{"line 3,", `filter "f" is defined twice in this file`}},
		{"nexus.json", "{\"agents\": {\n  \"ci\": {\"servers\": [\"a\"]}\n}}", []string{"line 2,", `agent "ci" needs "permission"`, `"permission": "sandboxed"`}},
		{"nexus.json", "{\"agents\": {\n  \"ci\": [\"x\"]\n}}", []string{"line 2,", `agent "ci" must be an object, found an array`}},
		{"nexus.json", "{\"agents\": {\"c.i\": {\"permission\": \"yolo\"}}}", []string{`agent name "c.i" is not allowed`, "no dots"}},
		{"nexus.json", "{\"agents\": {\"ci\": {\"permission\": \"yolo\", \"rules\": [\n  {\"name\": \"r\", \"when\": \"true\", \"action\": \"deny\"},\n  {\"name\": \"r\", \"when\": \"true\", \"action\": \"deny\"}\n]}}}",
			[]string{"line 3,", `agent "ci" has two rules called "r" (first on line 2)`}},
		{"nexus.hcl", "agent \"ci\" {\n  permission = \"yolo\"\n  rule \"r\" {\n    when   = \"true\"\n    action = \"deny\"\n  }\n  rule \"r\" {\n    when   = \"true\"\n    action = \"deny\"\n  }\n}\n",
			[]string{"line 7,", `agent "ci" has two rules called "r" (first on line 3)`}},
		{"nexus.hcl", "filter \"f\" {\n  kind = \"policy\"\n  wasm = \"f.wasm\"\n  limits {\n    pool = 1\n  }\n  limits {\n    pool = 2\n  }\n}\n",
			[]string{"line 7,", "a filter has at most one limits block (first on line 4)"}},
		{"nexus.hcl", "rule \"r\" {\n  when   = \"tool.nmae == 'x'\"\n  action = \"deny\"\n}\n", []string{"line 2, column 17", `rule "r": when: undefined field 'nmae'`, "cel.dev"}},
		{"nexus.json", "{\"filters\": [{\"name\": \"r\", \"kind\": \"policy\", \"rule\": {\n  \"when\": \"tool.nmae == 'x'\", \"action\": \"deny\"}}]}", []string{"line 2, column 16", `rule "r": when: undefined field 'nmae'`}},
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
}
