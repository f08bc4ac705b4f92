package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/dynblock"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	hcljson "github.com/hashicorp/hcl/v2/json"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
	"github.com/zclconf/go-cty/cty/function"
	ctyjson "github.com/zclconf/go-cty/cty/json"

	"github.com/nexus-mcp/nexus/internal/bounded"
	"github.com/nexus-mcp/nexus/internal/diag"
	"github.com/nexus-mcp/nexus/internal/option"
)

// The HCL front end compiles nexus.hcl (and its JSON syntax, nexus.hcl.json)
// into the same model as the JSON dialects. It decodes in phases, as Packer
// and Terraform do: variables first (they depend on nothing but the
// environment), then locals in dependency order (a cycle is an error), then
// every other block with `dynamic` blocks expanded.
//
// Secrets: a value computed from a sensitive variable or env() is evaluated
// twice, once for real and once with every secret replaced by a sentinel.
// The second result is the value's Template ("Bearer ${TOKEN}"), which is
// what compile-down writes. cty marks say which values need the second pass.

var (
	topSchema = &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{
		{Type: "nexus"},
		{Type: "variable", LabelNames: []string{"name"}},
		{Type: "locals"},
		{Type: "server", LabelNames: []string{"name"}},
		{Type: "plugin", LabelNames: pluginBlock.Options.Shape().Labels()},
		{Type: "filter", LabelNames: filterBlock.Options.Shape().Labels()},
		{Type: "agent", LabelNames: agentBlock.Options.Shape().Labels()},
		{Type: "rule", LabelNames: ruleBlock.Options.Shape().Labels()},
		{Type: "gateway"},
		{Type: "sampling"},
		{Type: "lock"},
		{Type: "audit"},
		{Type: "telemetry"},
	}}
	earlySchema = &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{
		{Type: "variable", LabelNames: []string{"name"}},
		{Type: "locals"},
	}}
	variableSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{
		{Name: "default"}, {Name: "sensitive"}, {Name: "description"}, {Name: "env"},
	}}
	nexusSchema  = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "roots"}}}
	serverSchema = &hcl.BodySchema{
		Attributes: []hcl.AttributeSchema{{Name: "enabled"}, {Name: "timeout"}, {Name: "fail_if_no_tools"}, {Name: "prefix"}, {Name: "confirm"}, {Name: "start"}},
		Blocks:     []hcl.BlockHeaderSchema{{Type: "stdio"}, {Type: "http"}, {Type: "plugin"}, {Type: "oauth"}},
	}
	stdioSchema           = blockSchema(stdioOptions.HCLKeys(), hcl.AttributeSchema{Name: "command", Required: true}, hcl.AttributeSchema{Name: "args"})
	httpSchema            = blockSchema(httpOptions.HCLKeys(), hcl.AttributeSchema{Name: "url", Required: true}, hcl.AttributeSchema{Name: "legacy_sse"})
	pluginTransportSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "name", Required: true}, {Name: "config"}}}
	oauthSchema           = blockSchema(oauthOptions.HCLKeys())
)

// secretMark marks values that came from a sensitive variable or env().
type secretMark struct{}

// Sentinels stand for secrets in the template pass: private-use code points
// that no config text contains.
const (
	sentOpen  = "\uE000"
	sentClose = "\uE001"
	sentDef   = "\uE002"
)

func sentinel(name, def string, hasDef bool) string {
	if hasDef {
		return sentOpen + name + sentDef + def + sentClose
	}
	return sentOpen + name + sentClose
}

type hclFile struct {
	*file
	ld    *loader
	dir   string
	real  *hcl.EvalContext
	tmpl  *hcl.EvalContext
	known map[string]string // sentinel → the value it stands for
	named map[string]string // env name → the sensitive variable named so (Ref.Named)
	out   fileConfig

	unsetWarned map[string]bool
	server      string      // the server block being decoded, for reports
	ins         []insertion // what countJSONFors put into the text parsed
	early       bool        // a variable or local failed

	// inDefault is set while a variable's default is evaluated: env() of
	// an unset variable is then unknown rather than an error, since the
	// default is not needed when the environment supplies the value;
	// unsetInDefault lists those variables.
	inDefault      bool
	unsetInDefault []string
}

func (ld *loader) parseHCLFile(f *file, filename string, isJSON bool) *fileConfig {
	var (
		hf    *hcl.File
		diags hcl.Diagnostics
	)
	var ins []insertion
	if isJSON {
		var data []byte
		data, ins = countJSONFors(f.data)
		hf, diags = hcljson.Parse(data, filename)
	} else {
		hf, diags = hclsyntax.ParseConfig(f.data, filename, hcl.InitialPos)
	}
	h := &hclFile{file: f, ld: ld, dir: ld.fileDir(f.src.File), known: map[string]string{}, named: map[string]string{}, unsetWarned: map[string]bool{}, ins: ins}
	if h.diags(diags) {
		return nil
	}
	if body, ok := hf.Body.(*hclsyntax.Body); ok {
		countFors(body)
	}
	h.real, h.tmpl = h.contexts()

	early, _, diags := hf.Body.PartialContent(earlySchema)
	if h.diags(diags) {
		return nil
	}
	h.variables(early.Blocks)
	h.locals(early.Blocks)
	// After an error in a variable or local, the rest is still checked (a
	// person wants every error at once); what depended on the broken
	// value is unknown and passed over in silence.
	h.early = len(h.errs) > 0

	body := dynblock.Expand(hf.Body, h.real)
	content, diags := body.Content(topSchema)
	if h.diags(diags) {
		return nil
	}
	seen := map[string]*hcl.Block{}
	for _, b := range content.Blocks {
		if b.Type == "variable" || b.Type == "locals" {
			continue
		}
		typ := b.Type
		if typ == "rule" {
			typ = "filter" // a rule is a link of the chain: one namespace with filters
		}
		key := typ + " " + strings.Join(b.Labels, " ")
		if first, dup := seen[key]; dup {
			what := b.Type
			if len(b.Labels) > 0 {
				what = subject(b.Type, b.Labels[0])
			}
			fix := "Rename or remove one of the two blocks; within one file a name must be unique."
			if len(b.Labels) == 0 {
				fix = "Keep one " + b.Type + " block per file: merge the two."
			}
			problem := fmt.Sprintf("%s is defined twice in this file (first on line %d)", what, first.DefRange.Start.Line)
			if first.Type != b.Type {
				problem = fmt.Sprintf("%s has the name of %s on line %d: rules and filters are links of one chain, named once", what, subject(first.Type, first.Labels[0]), first.DefRange.Start.Line)
			}
			h.errRange(b.DefRange, "", problem, fix)
			continue
		}
		seen[key] = b
		switch b.Type {
		case "nexus":
			h.nexus(b)
		case "server":
			if s := h.decodeServer(b); s != nil {
				h.out.servers = append(h.out.servers, s)
			}
		case "plugin":
			if p := pluginBlock.hcl(h, b); p != nil {
				h.out.plugins = append(h.out.plugins, p)
			}
		case "filter":
			if f := filterBlock.hcl(h, b); f != nil {
				h.out.filters = append(h.out.filters, f)
			}
		case "rule":
			if f := ruleBlock.hcl(h, b); f != nil {
				h.out.filters = append(h.out.filters, f)
			}
		case "agent":
			if a := agentBlock.hcl(h, b); a != nil {
				h.out.agents = append(h.out.agents, a)
			}
		case "gateway":
			h.out.gateway = gatewayBlock.hcl(h, b)
		case "sampling":
			h.out.sampling = samplingBlock.hcl(h, b)
		case "lock":
			h.out.lock = lockBlock.hcl(h, b)
		case "audit":
			h.out.audit = auditBlock.hcl(h, b)
		case "telemetry":
			h.out.telemetry = telemetryBlock.hcl(h, b)
		default:
			if ob := owned[b.Type]; ob != nil {
				h.owned(b, ob)
			}
		}
	}
	return &h.out
}

// --- diagnostics ----------------------------------------------------------

// diags records hcl's diagnostics as reports (errors) and warnings, each
// with the file, layer, line, column and a snippet; it says whether there
// was an error.
func (h *hclFile) diags(ds hcl.Diagnostics) bool {
	bad := false
	for _, d := range ds {
		problem := d.Summary
		if d.Detail != "" {
			problem += ": " + d.Detail
		}
		if d.Severity == hcl.DiagWarning {
			src := h.src
			if d.Subject != nil {
				p := h.pos(d.Subject.Start)
				src.Line, src.Column = p.Line, p.Column
			}
			h.warns = append(h.warns, Warning{Source: src, Message: problem})
			continue
		}
		bad = true
		if d.Subject == nil {
			h.err(problem)
			continue
		}
		h.errRange(*d.Subject, "", problem)
	}
	return bad
}

func (h *hclFile) errRange(rng hcl.Range, server, problem string, fix ...string) *diag.Report {
	at := h.site(rng)
	if server == "" {
		server = h.server
	}
	r := &diag.Report{Title: errTitle, Server: server, Source: at.src, Problem: problem, Fix: fix}
	r.Details = []diag.Section{{Lines: at.lines}}
	h.errs = append(h.errs, r)
	return r
}

// site is where rng is, with its snippet.
func (h *hclFile) site(rng hcl.Range) *site {
	src := h.src
	start, end := h.pos(rng.Start), h.pos(rng.End)
	src.Line, src.Column = start.Line, start.Column
	width := 1
	if end.Line == start.Line {
		width = end.Column - start.Column
	} else {
		width = 1 << 20 // to the end of the line
	}
	return &site{src, snippet(h.data, src.Line, src.Column, width, "")}
}

func article(w string) string {
	if strings.ContainsRune("aeiouh", rune(w[0])) {
		return "an " + w
	}
	return "a " + w
}

// pos is p in the file as written (see countJSONFors).
func (h *hclFile) pos(p hcl.Pos) hcl.Pos { return unshift(p, h.ins) }

func (h *hclFile) warnRange(rng hcl.Range, subj, format string, args ...any) {
	src := h.src
	p := h.pos(rng.Start)
	src.Line, src.Column = p.Line, p.Column
	h.warns = append(h.warns, Warning{Source: src, Subject: subj, Message: fmt.Sprintf(format, args...)})
}

// --- evaluation contexts --------------------------------------------------

func (h *hclFile) contexts() (real, tmpl *hcl.EvalContext) {
	real = &hcl.EvalContext{Variables: map[string]cty.Value{}, Functions: functions()}
	tmpl = &hcl.EvalContext{Variables: map[string]cty.Value{}, Functions: functions()}
	real.Functions["env"] = h.envFunc(false)
	tmpl.Functions["env"] = h.envFunc(true)
	real.Functions["file"] = h.fileFunc()
	tmpl.Functions["file"] = h.fileFunc()
	// Each pass over the file has the whole budget.
	real.Functions[forCounter] = forFunc()
	tmpl.Functions[forCounter] = forFunc()
	return real, tmpl
}

// --- variables and locals -------------------------------------------------

func (h *hclFile) variables(blocks hcl.Blocks) {
	real, tmpl := map[string]cty.Value{}, map[string]cty.Value{}
	first := map[string]hcl.Range{}
	for _, b := range blocks {
		if b.Type != "variable" {
			continue
		}
		name := b.Labels[0]
		if r, dup := first[name]; dup {
			h.errRange(b.DefRange, "", fmt.Sprintf("variable %q is defined twice in this file (first on line %d)", name, r.Start.Line))
			continue
		}
		first[name] = b.DefRange
		// Unknown until decoded, so a broken variable block does not also
		// make every use of it an error.
		real[name], tmpl[name] = cty.DynamicVal, cty.DynamicVal
		if !hclsyntax.ValidIdentifier(name) {
			h.errRange(b.LabelRanges[0], "", fmt.Sprintf("variable name %q is not an identifier", name), "Use letters, digits, '_' and '-', starting with a letter.")
			continue
		}
		content, diags := b.Body.Content(variableSchema)
		if h.diags(diags) {
			continue
		}
		attrs := content.Attributes
		var (
			def       cty.Value = cty.NilVal
			defTmpl   cty.Value = cty.NilVal // the default in the template pass: env() gives its sentinel there
			sensitive bool
			envVar    string
		)
		h.unsetInDefault = nil
		if a := attrs["default"]; a != nil {
			h.inDefault = true
			v, diags := a.Expr.Value(&hcl.EvalContext{Functions: h.real.Functions})
			if !diags.HasErrors() {
				if tv, diags := a.Expr.Value(&hcl.EvalContext{Functions: h.tmpl.Functions}); !diags.HasErrors() {
					defTmpl = tv
				}
			}
			h.inDefault = false
			if h.diags(diags) {
				continue
			}
			def = v
		}
		if a := attrs["sensitive"]; a != nil {
			sensitive, _ = h.boolean(a)
		}
		if a := attrs["description"]; a != nil {
			h.plain(a, cty.String)
		}
		if a := attrs["env"]; a != nil {
			if v, ok := h.plain(a, cty.String); ok {
				envVar = v.AsString()
				if !envName.MatchString(envVar) {
					h.errRange(a.Expr.Range(), "", fmt.Sprintf("%q is not an environment variable name", envVar))
				}
			}
		}
		if envVar == "" && sensitive {
			// A secret's compiled reference, and where Nexus reads it: the
			// variable its default reads (default = env("GITHUB_TOKEN") is
			// $GITHUB_TOKEN, which the client's environment supplies), else
			// the variable's own name (variable "gh_token" is $GH_TOKEN).
			if envVar = soleEnv(attrs["default"]); envVar == "" {
				envVar = envSafe(name)
				h.named[envVar] = name
			}
		}
		if sensitive && def != cty.NilVal && !def.IsNull() && def.Type() != cty.String && def.Type() != cty.DynamicPseudoType { // marks do not change a type
			h.errRange(attrs["default"].Expr.Range(), "", fmt.Sprintf("sensitive variable %q must be a string, so that it can be written as ${%s}", name, envVar))
			continue
		}

		// Where the value comes from, first match wins.
		val, found, fromDefault := cty.NilVal, false, false
		if s, ok := h.ld.lookup("NEXUS_VAR_" + name); ok {
			val, found = h.fromEnv(b, name, s, def), true
		} else if s, ok := h.ld.lookup(envVar); ok && envVar != "" {
			val, found = h.fromEnv(b, name, s, def), true
		} else if def != cty.NilVal {
			val, found, fromDefault = def, true, true
		}
		if !found {
			if sensitive && h.ld.opts.AllowUnset {
				h.warnRange(b.DefRange, subject("variable", name), "has no value in this environment (set %s)", envVar)
				val = cty.StringVal("")
			} else {
				fix := []string{"Give it a value: export NEXUS_VAR_" + name + "=..."}
				if envVar != "" {
					fix = append(fix, "or export "+envVar+"=...")
				}
				fix = append(fix, "or add default = ... to the variable block.")
				h.errRange(b.DefRange, "", fmt.Sprintf("variable %q has no value", name), fix...)
				val = cty.DynamicVal
			}
		}
		if fromDefault && len(h.unsetInDefault) > 0 {
			unset := h.unsetInDefault[0]
			fix := []string{"export " + unset + "=...", "or export NEXUS_VAR_" + name + "=..."}
			if envVar != "" && envVar != unset {
				fix = append(fix, "or export "+envVar+"=...")
			}
			h.errRange(attrs["default"].Expr.Range(), "", fmt.Sprintf("variable %q has no value: its default comes from env(%q), and %s is not set", name, unset, unset), fix...)
			val = cty.NilVal
		}
		if val == cty.NilVal {
			val = cty.DynamicVal // its error is reported
		}
		real[name], tmpl[name] = val, val
		if fromDefault && defTmpl != cty.NilVal && !sensitive {
			// A default from env() is a secret: its uses compile to ${X},
			// as env("X") itself does.
			tmpl[name] = defTmpl
		}
		if sensitive && val.IsKnown() {
			// The value may carry env()'s mark already (a default of
			// env("X")); the variable's own reference replaces it.
			plain, _ := val.Unmark()
			if plain.IsNull() || plain.Type() != cty.String {
				h.errRange(b.DefRange, "", fmt.Sprintf("sensitive variable %q must be a string", name))
				continue
			}
			s := sentinel(envVar, "", false)
			h.known[s] = plain.AsString()
			real[name] = plain.Mark(secretMark{})
			tmpl[name] = cty.StringVal(s).Mark(secretMark{})
		}
	}
	h.real.Variables["var"] = cty.ObjectVal(real)
	h.tmpl.Variables["var"] = cty.ObjectVal(tmpl)
}

// fromEnv turns an environment value into a variable's value: a string, or
// for a variable whose default is a number, bool, list or map, an HCL
// expression such as 3, true or ["a", "b"].
func (h *hclFile) fromEnv(b *hcl.Block, name, s string, def cty.Value) cty.Value {
	if def == cty.NilVal || def.IsNull() || def.Type() == cty.String {
		return cty.StringVal(s)
	}
	expr, diags := hclsyntax.ParseExpression([]byte(s), "NEXUS_VAR_"+name, hcl.InitialPos)
	if !diags.HasErrors() {
		countFors(expr)
		ctx := &hcl.EvalContext{Functions: map[string]function.Function{forCounter: forFunc()}}
		if v, diags := expr.Value(ctx); !diags.HasErrors() {
			return v
		}
	}
	h.errRange(b.DefRange, "", fmt.Sprintf("the environment's value for variable %q, %q, is not an HCL value like its default (%s)", name, s, friendly(def.Type())),
		`Write it as HCL: 3, true, ["a", "b"] or {a = "b"}.`)
	return cty.NilVal
}

func (h *hclFile) locals(blocks hcl.Blocks) {
	attrs := map[string]*hcl.Attribute{}
	for _, b := range blocks {
		if b.Type != "locals" {
			continue
		}
		as, diags := b.Body.JustAttributes()
		if h.diags(diags) {
			continue
		}
		for name, a := range as {
			if old, dup := attrs[name]; dup {
				h.errRange(a.NameRange, "", fmt.Sprintf("local %q is defined twice (first on line %d)", name, old.NameRange.Start.Line))
				continue
			}
			attrs[name] = a
		}
	}
	deps := map[string][]string{}
	for name, a := range attrs {
		for _, t := range a.Expr.Variables() {
			if t.RootName() != "local" || len(t) < 2 {
				continue
			}
			if s, ok := t[1].(hcl.TraverseAttr); ok {
				if _, known := attrs[s.Name]; known {
					deps[name] = append(deps[name], s.Name)
				}
			}
		}
		sort.Strings(deps[name])
	}
	order, cycle := topoSort(sortedKeys(attrs), deps)
	if cycle != nil {
		a := attrs[cycle[0]]
		chain := make([]string, len(cycle))
		for i, n := range cycle {
			chain[i] = "local." + n
		}
		h.errRange(a.NameRange, "", fmt.Sprintf("locals refer to each other in a cycle: %s", strings.Join(chain, " → ")),
			"A local cannot depend on itself, directly or through others; compute the shared part in a new local both can use.")
		unknown := map[string]cty.Value{}
		for name := range attrs {
			unknown[name] = cty.DynamicVal
		}
		h.real.Variables["local"] = cty.ObjectVal(unknown)
		h.tmpl.Variables["local"] = cty.ObjectVal(unknown)
		return
	}
	real, tmpl := map[string]cty.Value{}, map[string]cty.Value{}
	for _, name := range order {
		h.real.Variables["local"] = cty.ObjectVal(real)
		h.tmpl.Variables["local"] = cty.ObjectVal(tmpl)
		a := attrs[name]
		v, diags := a.Expr.Value(h.real)
		if h.diags(diags) {
			real[name], tmpl[name] = cty.DynamicVal, cty.DynamicVal
			continue
		}
		real[name], tmpl[name] = v, v
		if v.ContainsMarked() {
			if t, diags := a.Expr.Value(h.tmpl); !diags.HasErrors() {
				tmpl[name] = t
			}
		}
	}
	h.real.Variables["local"] = cty.ObjectVal(real)
	h.tmpl.Variables["local"] = cty.ObjectVal(tmpl)
}

// topoSort orders names so each comes after what it depends on, or returns
// a cycle (its first name repeated at the end).
func topoSort(names []string, deps map[string][]string) ([]string, []string) {
	const (
		unseen = iota
		active
		done
	)
	state := map[string]int{}
	var (
		order []string
		stack []string
		cycle []string
	)
	var visit func(string) bool
	visit = func(n string) bool {
		switch state[n] {
		case done:
			return true
		case active:
			for i, s := range stack {
				if s == n {
					cycle = append(append([]string{}, stack[i:]...), n)
				}
			}
			return false
		}
		state[n] = active
		stack = append(stack, n)
		for _, d := range deps[n] {
			if !visit(d) {
				return false
			}
		}
		stack = stack[:len(stack)-1]
		state[n] = done
		order = append(order, n)
		return true
	}
	for _, n := range names {
		if !visit(n) {
			return nil, cycle
		}
	}
	return order, nil
}

// --- attribute decoding ---------------------------------------------------

// eval evaluates an attribute for real; null means "not set".
func (h *hclFile) eval(a *hcl.Attribute) (cty.Value, bool) {
	v, diags := a.Expr.Value(h.real)
	if h.diags(diags) {
		return cty.NilVal, false
	}
	if !v.IsWhollyKnown() {
		if !h.early {
			h.errRange(a.Expr.Range(), "", fmt.Sprintf("%q has no known value", a.Name))
		}
		return cty.NilVal, false
	}
	return v, true
}

// typed evaluates a and converts it to want, reporting what was expected
// and what was found. The value comes back unmarked; secret says whether
// any part of it was marked.
func (h *hclFile) typed(a *hcl.Attribute, want cty.Type) (v cty.Value, secret, ok bool) {
	v, ok = h.eval(a)
	if !ok || v.IsNull() {
		return cty.NilVal, false, false
	}
	v, pvm := v.UnmarkDeepWithPaths()
	if want != cty.DynamicPseudoType {
		c, err := convert.Convert(v, want)
		if err != nil {
			h.errRange(a.Expr.Range(), "", fmt.Sprintf("Incorrect attribute value type: %q must be %s, found %s", a.Name, friendly(want), friendly(v.Type())))
			return cty.NilVal, false, false
		}
		v = c
	}
	if c, ok := anyNull(v); ok {
		h.errRange(a.Expr.Range(), "", fmt.Sprintf("%q must not contain null (at %s)", a.Name, c))
		return cty.NilVal, false, false
	}
	return v, len(pvm) > 0, true
}

func friendly(t cty.Type) string {
	switch {
	case t == cty.String:
		return "a string"
	case t == cty.Bool:
		return "a bool"
	case t == cty.Number:
		return "a number"
	case t.IsListType() && t.ElementType() == cty.String:
		return "a list of strings"
	case t.IsMapType() && t.ElementType() == cty.String:
		return "a map of strings"
	case t.IsTupleType() || t.IsListType():
		return "a list"
	case t.IsObjectType() || t.IsMapType():
		return "a map"
	}
	return t.FriendlyName()
}

// anyNull finds a null inside v, which the model has no place for.
func anyNull(v cty.Value) (string, bool) {
	var at string
	cty.Walk(v, func(p cty.Path, v cty.Value) (bool, error) {
		if at == "" && v.IsNull() && len(p) > 0 {
			at = pathString(p)
		}
		return at == "", nil
	})
	return at, at != ""
}

func pathString(p cty.Path) string {
	var b strings.Builder
	for _, s := range p {
		switch s := s.(type) {
		case cty.GetAttrStep:
			b.WriteString("." + s.Name)
		case cty.IndexStep:
			if s.Key.Type() == cty.String {
				b.WriteString(fmt.Sprintf("[%q]", s.Key.AsString()))
			} else {
				bf := s.Key.AsBigFloat()
				b.WriteString("[" + bf.Text('f', -1) + "]")
			}
		}
	}
	return strings.TrimPrefix(b.String(), ".")
}

// plain decodes a value that may not hold secrets (a path, a kind).
func (h *hclFile) plain(a *hcl.Attribute, want cty.Type) (cty.Value, bool) {
	v, secret, ok := h.typed(a, want)
	if ok && secret {
		h.errRange(a.Expr.Range(), "", fmt.Sprintf("%q cannot come from a sensitive variable or env()", a.Name),
			"Use a plain value here; secrets belong in env, headers, args, url or a filter's config.")
		return cty.NilVal, false
	}
	return v, ok
}

// templates returns the template of every string in v that came from a
// secret, keyed by its JSON pointer relative to the attribute.
func (h *hclFile) templates(a *hcl.Attribute, real cty.Value, want cty.Type) (map[string]Template, bool) {
	t, diags := a.Expr.Value(h.tmpl)
	if diags.HasErrors() {
		h.errRange(a.Expr.Range(), "", fmt.Sprintf("%q is computed from a secret in a way Nexus cannot write as a ${NAME} reference", a.Name),
			"Use the secret as it is, or inside a string: \"Bearer ${var.token}\".")
		return nil, false
	}
	t, _ = t.UnmarkDeep()
	if want != cty.DynamicPseudoType {
		var err error
		if t, err = convert.Convert(t, want); err != nil {
			h.errRange(a.Expr.Range(), "", fmt.Sprintf("%q is computed from a secret in a way Nexus cannot write as a ${NAME} reference", a.Name))
			return nil, false
		}
	}
	out := map[string]Template{}
	ok := true
	var walk func(ptr string, r, t cty.Value)
	walk = func(ptr string, r, t cty.Value) {
		if !ok {
			return
		}
		rt := r.Type()
		switch {
		case rt == cty.String:
			if t.Type() != cty.String {
				ok = false
				return
			}
			ts := t.AsString()
			if !strings.Contains(ts, sentOpen) {
				if ts != r.AsString() {
					ok = false // derived from a secret, but not by containing it
				}
				return
			}
			tmpl, val := h.parseSentinels(ts)
			if val != r.AsString() {
				ok = false
				return
			}
			out[ptr] = tmpl
		case rt.IsListType() || rt.IsTupleType() || rt.IsSetType():
			if !(t.Type().IsListType() || t.Type().IsTupleType() || t.Type().IsSetType()) || t.LengthInt() != r.LengthInt() {
				ok = false
				return
			}
			rs, ts := r.AsValueSlice(), t.AsValueSlice()
			for i := range rs {
				walk(pointer(ptr, i), rs[i], ts[i])
			}
		case rt.IsMapType() || rt.IsObjectType():
			if !(t.Type().IsMapType() || t.Type().IsObjectType()) {
				ok = false
				return
			}
			tm := t.AsValueMap()
			for k, rv := range r.AsValueMap() {
				tv, has := tm[k]
				if !has {
					ok = false
					return
				}
				walk(pointer(ptr, k), rv, tv)
			}
		}
	}
	walk("", real, t)
	if !ok {
		h.errRange(a.Expr.Range(), "", fmt.Sprintf("%q is computed from a secret in a way Nexus cannot write as a ${NAME} reference, so it could not keep the secret out of compiled configs", a.Name),
			"Use the secret as it is, or inside a string: \"Bearer ${var.token}\"; functions that change it (lower, split, ...) cannot be expressed.")
		return nil, false
	}
	return out, true
}

// soleEnv is X when a default is env("X") and nothing else, else "".
// It reads the expression, not its value: X need not be set (the variable
// may be set otherwise) for its reference to be $X.
func soleEnv(a *hcl.Attribute) string {
	if a == nil {
		return ""
	}
	call, diags := hcl.ExprCall(a.Expr)
	if diags.HasErrors() || call.Name != "env" || len(call.Arguments) != 1 {
		return ""
	}
	v, diags := call.Arguments[0].Value(nil)
	if diags.HasErrors() || !v.IsKnown() || v.IsNull() || v.Type() != cty.String || !envName.MatchString(v.AsString()) {
		return ""
	}
	return v.AsString()
}

// parseSentinels turns a template-pass string into a Template and the
// value it stands for.
func (h *hclFile) parseSentinels(s string) (Template, string) {
	var (
		t   Template
		val strings.Builder
	)
	for {
		i := strings.Index(s, sentOpen)
		if i < 0 {
			break
		}
		j := strings.Index(s[i:], sentClose)
		if j < 0 {
			break
		}
		t = t.Add(Part{Text: s[:i]})
		val.WriteString(s[:i])
		sent := s[i : i+j+len(sentClose)]
		inner := s[i+len(sentOpen) : i+j]
		ref := &Ref{Env: inner, Named: h.named[inner]}
		if name, def, ok := strings.Cut(inner, sentDef); ok {
			ref = &Ref{Env: name, Default: def, HasDefault: true}
		}
		t = t.Add(Part{Ref: ref})
		val.WriteString(h.known[sent])
		s = s[i+j+len(sentClose):]
	}
	t = t.Add(Part{Text: s})
	val.WriteString(s)
	return t, val.String()
}

// value decodes an attribute that may hold secrets; their templates go
// into refs under ptr.
func (h *hclFile) value(a *hcl.Attribute, want cty.Type, refs map[string]Template, ptr string) (cty.Value, bool) {
	v, secret, ok := h.typed(a, want)
	if !ok || !secret {
		return v, ok
	}
	ts, ok := h.templates(a, v, want)
	if !ok {
		return cty.NilVal, false
	}
	for k, t := range ts {
		refs[ptr+k] = t
	}
	return v, true
}

func (h *hclFile) str(a *hcl.Attribute, refs map[string]Template, ptr string) (string, bool) {
	var (
		v  cty.Value
		ok bool
	)
	if refs == nil {
		v, ok = h.plain(a, cty.String)
	} else {
		v, ok = h.value(a, cty.String, refs, ptr)
	}
	if !ok {
		return "", false
	}
	return v.AsString(), true
}

func (h *hclFile) strs(a *hcl.Attribute, refs map[string]Template, ptr string) ([]string, bool) {
	var (
		v  cty.Value
		ok bool
	)
	if refs == nil {
		v, ok = h.plain(a, cty.List(cty.String))
	} else {
		v, ok = h.value(a, cty.List(cty.String), refs, ptr)
	}
	if !ok {
		return nil, false
	}
	out := []string{}
	for _, e := range v.AsValueSlice() {
		out = append(out, e.AsString())
	}
	return out, true
}

func (h *hclFile) strMap(a *hcl.Attribute, refs map[string]Template, ptr string) (map[string]string, bool) {
	v, ok := h.value(a, cty.Map(cty.String), refs, ptr)
	if !ok {
		return nil, false
	}
	out := map[string]string{}
	for k, e := range v.AsValueMap() {
		out[k] = e.AsString()
	}
	return out, true
}

func (h *hclFile) boolean(a *hcl.Attribute) (bool, bool) {
	v, ok := h.plain(a, cty.Bool)
	if !ok {
		return false, false
	}
	return v.True(), true
}

func (h *hclFile) integer(a *hcl.Attribute, lo int) (int, bool) {
	v, ok := h.plain(a, cty.Number)
	if !ok {
		return 0, false
	}
	bf := v.AsBigFloat()
	n, acc := bf.Int64()
	if acc != big.Exact || n < int64(lo) || n > 1e9 {
		h.errRange(a.Expr.Range(), "", fmt.Sprintf("%q must be a whole number of at least %d, found %s", a.Name, lo, bf.Text('g', 10)))
		return 0, false
	}
	return int(n), true
}

// duration reads "30s" or a number of seconds.
func (h *hclFile) duration(a *hcl.Attribute) (time.Duration, bool) {
	v, ok := h.plain(a, cty.DynamicPseudoType)
	if !ok {
		return 0, false
	}
	var (
		d   time.Duration
		bad string
	)
	switch v.Type() {
	case cty.Number:
		f, _ := v.AsBigFloat().Float64()
		d, bad = secondsDuration(f)
	case cty.String:
		d, bad = parseDuration(v.AsString())
	default:
		bad = fmt.Sprintf("must be a number of seconds or a duration string, found %s", friendly(v.Type()))
	}
	if bad != "" {
		h.errRange(a.Expr.Range(), "", fmt.Sprintf("%q: %s", a.Name, bad), `Use seconds (30) or a duration string ("30s", "2m").`)
		return 0, false
	}
	return d, true
}

// anyValue decodes free-form settings into the values encoding/json makes.
func (h *hclFile) anyValue(a *hcl.Attribute, refs map[string]Template, ptr string) (map[string]any, bool) {
	v, ok := h.value(a, cty.DynamicPseudoType, refs, ptr)
	if !ok {
		return nil, false
	}
	if !(v.Type().IsObjectType() || v.Type().IsMapType()) {
		h.errRange(a.Expr.Range(), "", fmt.Sprintf("Incorrect attribute value type: %q must be an object, found %s", a.Name, friendly(v.Type())))
		return nil, false
	}
	raw, err := ctyjson.Marshal(v, v.Type())
	if err != nil {
		h.errRange(a.Expr.Range(), "", fmt.Sprintf("%q cannot be written as JSON: %v", a.Name, err))
		return nil, false
	}
	var out map[string]any
	json.Unmarshal(raw, &out)
	return out, true
}

func (h *hclFile) path(a *hcl.Attribute) (string, bool) {
	s, ok := h.str(a, nil, "")
	if !ok || s == "" {
		return "", ok
	}
	p, err := h.ld.confined(s, h.dir, h.src.Layer)
	if err != nil {
		h.errRange(a.Expr.Range(), "", a.Name+" "+err.Error())
		return "", false
	}
	return p, true
}

// content reads a block body against its schema; hcl reports unknown
// arguments and blocks, suggesting the nearest known name.
func (h *hclFile) content(b *hcl.Block, schema *hcl.BodySchema) (*hcl.BodyContent, bool) {
	c, diags := b.Body.Content(schema)
	for _, d := range diags {
		// hcl suggests only near spellings; other tools' names for a
		// setting (arguments for args) get theirs here.
		var name string
		if d.Summary == "Unsupported argument" && !strings.Contains(d.Detail, "Did you mean") &&
			firstQuoted(d.Detail, &name) {
			known := make([]string, len(schema.Attributes))
			for i, a := range schema.Attributes {
				known[i] = a.Name
			}
			if alt := suggestKey(name, known); alt != "" {
				d.Detail += fmt.Sprintf(" Did you mean %q?", alt)
			}
		}
	}
	if h.diags(diags) {
		return nil, false
	}
	return c, true
}

// firstQuoted reads the first quoted name in s.
func firstQuoted(s string, name *string) bool {
	i := strings.IndexByte(s, '"')
	if i < 0 {
		return false
	}
	j := strings.IndexByte(s[i+1:], '"')
	if j < 0 {
		return false
	}
	*name = s[i+1 : i+1+j]
	return true
}

// --- blocks ---------------------------------------------------------------

func (h *hclFile) nexus(b *hcl.Block) {
	c, ok := h.content(b, nexusSchema)
	if !ok {
		return
	}
	if a := c.Attributes["roots"]; a != nil {
		roots, ok := h.strs(a, nil, "")
		if !ok {
			return
		}
		for _, r := range roots {
			p, err := h.ld.confined(r, h.dir, h.src.Layer)
			if err != nil {
				h.errRange(a.Expr.Range(), "", "roots "+err.Error())
				continue
			}
			h.out.roots = append(h.out.roots, p)
		}
		h.out.hasRoots = true
	}
}

func (h *hclFile) decodeServer(b *hcl.Block) *Server {
	name := b.Labels[0]
	h.server = name
	defer func() { h.server = "" }()
	errsBefore := len(h.errs)
	if p := option.CheckName("server", name); p != "" {
		h.errRange(b.LabelRanges[0], name, p, option.NameRule)
		return nil
	}
	c, ok := h.content(b, serverSchema)
	if !ok {
		return nil
	}
	src := h.src
	p := h.pos(b.DefRange.Start)
	src.Line, src.Column = p.Line, p.Column
	s := &Server{Name: name, Enabled: true, Source: src}
	refs := map[string]Template{}
	if a := c.Attributes["enabled"]; a != nil {
		s.Enabled, _ = h.boolean(a)
	}
	if a := c.Attributes["timeout"]; a != nil {
		s.Timeout, _ = h.duration(a)
	}
	if a := c.Attributes["fail_if_no_tools"]; a != nil {
		s.FailIfNoTools, _ = h.boolean(a)
	}
	if a := c.Attributes["confirm"]; a != nil {
		if v, ok := h.str(a, nil, ""); ok {
			if bad := checkConfirm(v); bad != "" {
				h.errRange(a.Expr.Range(), name, bad, `For example confirm = "tool_calls" to confirm only tool calls.`)
			}
			s.Confirm = v
		}
	}
	if a := c.Attributes["start"]; a != nil {
		if v, ok := h.str(a, nil, ""); ok {
			if bad := checkStart(v); bad != "" {
				h.errRange(a.Expr.Range(), name, bad, `For example start = "lazy" to start the server on first use.`)
			}
			s.Start = v
		}
	}
	if a := c.Attributes["prefix"]; a != nil {
		if p, ok := h.str(a, nil, ""); ok {
			if bad := checkPrefix(p); bad != "" {
				h.errRange(a.Expr.Range(), name, bad, `For example prefix = "gh_", or prefix = "" for the tools' own names.`)
			}
			s.Prefix = &p
		}
	}

	var transports []*hcl.Block
	var oauth *hcl.Block
	for _, blk := range c.Blocks {
		switch blk.Type {
		case "oauth":
			if oauth != nil {
				h.errRange(blk.DefRange, name, "a server has at most one oauth block")
				continue
			}
			oauth = blk
		default:
			transports = append(transports, blk)
		}
	}
	switch len(transports) {
	case 0:
		h.errRange(b.DefRange, name, "Server has no transport configured",
			"Every server needs exactly one of a stdio block (launch a subprocess), an http block (connect to a running server) or a plugin block (a transport plugin).",
			"Example stdio server:\nserver \""+name+"\" {\n  stdio {\n    command = \"nexus\"\n    args    = [\"testserver\"]\n  }\n}",
			"Example HTTP server:\nserver \""+name+"\" {\n  http {\n    url = \"http://localhost:3000/mcp\"\n  }\n}")
		return nil
	case 1:
	default:
		h.errRange(transports[1].DefRange, name, fmt.Sprintf("server %q has both %s block (line %d) and %s block: a server has exactly one transport",
			name, article(transports[0].Type), transports[0].DefRange.Start.Line, article(transports[1].Type)),
			"Keep the one you mean; define a second server for the other.")
		return nil
	}
	t := transports[0]
	switch t.Type {
	case "stdio":
		h.stdio(t, s, refs)
	case "http":
		h.http(t, s, refs)
	case "plugin":
		s.Type = TypePlugin
		if tc, ok := h.content(t, pluginTransportSchema); ok {
			s.Plugin = &PluginTransport{}
			s.Plugin.Name, _ = h.str(tc.Attributes["name"], nil, "")
			if a := tc.Attributes["config"]; a != nil {
				s.Plugin.Config, _ = h.anyValue(a, refs, "/plugin/config")
			}
		}
	}
	if oauth != nil {
		if s.Type != TypeHTTP && s.Type != TypeSSE {
			h.errRange(oauth.DefRange, name, "oauth only applies to an http server")
		} else if oc, ok := h.content(oauth, oauthSchema); ok {
			o := &OAuth{}
			hclDecode(h, oc, s, refs, "oauth", oauthOptions, o)
			s.OAuth = o
		}
	}
	if len(refs) > 0 {
		s.Refs = refs
	}
	if len(h.errs) > errsBefore {
		return nil
	}
	return s
}

func (h *hclFile) stdio(b *hcl.Block, s *Server, refs map[string]Template) {
	c, ok := h.content(b, stdioSchema)
	if !ok {
		return
	}
	s.Type = TypeStdio
	cmd := c.Attributes["command"]
	v, ok := h.value(cmd, cty.DynamicPseudoType, refs, "/command")
	if !ok {
		return
	}
	switch {
	case v.Type() == cty.String:
		s.Command = []string{v.AsString()}
		if t, has := refs["/command"]; has {
			delete(refs, "/command")
			refs["/command/0"] = t
		}
	case v.Type().IsListType() || v.Type().IsTupleType():
		l, err := convert.Convert(v, cty.List(cty.String))
		if err != nil || l.LengthInt() == 0 {
			h.errRange(cmd.Expr.Range(), s.Name, `"command" as a list must hold at least one string`)
			return
		}
		for _, e := range l.AsValueSlice() {
			s.Command = append(s.Command, e.AsString())
		}
	default:
		h.errRange(cmd.Expr.Range(), s.Name, fmt.Sprintf(`Incorrect attribute value type: "command" must be a string (with args) or a list of strings, found %s`, friendly(v.Type())))
		return
	}
	if strings.TrimSpace(s.Command[0]) == "" {
		h.errRange(cmd.Expr.Range(), s.Name, `"command" is empty`)
		return
	}
	// A relative path to a program starts at this file's directory; a bare
	// name is looked up in PATH.
	if c0 := s.Command[0]; !filepath.IsAbs(c0) && strings.ContainsAny(c0, `/\`) && !hasRef(refs, "/command/0") {
		s.Command[0] = resolvePath(c0, h.dir, h.ld.home)
	}
	if a := c.Attributes["args"]; a != nil {
		if len(s.Command) > 1 {
			h.errRange(a.NameRange, s.Name, `"command" is a list and "args" is set too`,
				`Either put the arguments into the command list, or make "command" a string and keep "args".`)
			return
		}
		argRefs := map[string]Template{}
		if args, ok := h.strs(a, argRefs, ""); ok {
			for i := range args {
				if t, has := argRefs[pointer("", i)]; has {
					refs[pointer("/command", i+1)] = t
				}
			}
			s.Command = append(s.Command, args...)
		}
	}
	hclDecode(h, c, s, refs, "", stdioOptions, &s.Stdio)
}

// hclDecode reads the attributes of table's options from a block.
func hclDecode[T any](h *hclFile, c *hcl.BodyContent, s *Server, refs map[string]Template, in string, table option.Table[T], o *T) {
	for _, opt := range table {
		if a := c.Attributes[opt.HCL]; a != nil {
			opt.Decode(o, hclValue{h: h, a: a, refs: refs, who: s.Name, in: in})
		}
	}
}

// blockSchema is a transport block's schema: its options and the
// attributes the loader reads itself.
func blockSchema(options []string, own ...hcl.AttributeSchema) *hcl.BodySchema {
	for _, name := range options {
		own = append(own, hcl.AttributeSchema{Name: name})
	}
	return &hcl.BodySchema{Attributes: own}
}

func (h *hclFile) http(b *hcl.Block, s *Server, refs map[string]Template) {
	c, ok := h.content(b, httpSchema)
	if !ok {
		return
	}
	s.Type = TypeHTTP
	a := c.Attributes["url"]
	if u, ok := h.str(a, refs, "/url"); ok {
		s.URL = u
		if bad := checkURL(u); bad != "" && !hasRef(refs, "/url") {
			h.errRange(a.Expr.Range(), s.Name, bad)
		}
	}
	hclDecode(h, c, s, refs, "", httpOptions, &s.HTTP)
	if a := c.Attributes["legacy_sse"]; a != nil {
		if s.LegacySSE, _ = h.boolean(a); s.LegacySSE {
			s.Type = TypeSSE
		}
	}
}

func (h *hclFile) blockSource(b *hcl.Block) diag.Source {
	src := h.src
	p := h.pos(b.DefRange.Start)
	src.Line, src.Column = p.Line, p.Column
	return src
}

// exprStart is where the text of a string expression starts: after the
// opening quote, or on the line after a heredoc's marker.
func (h *hclFile) exprStart(rng hcl.Range) diag.Source {
	src := h.src
	start := h.pos(rng.Start)
	src.Line, src.Column = start.Line, start.Column
	if start.Byte < len(h.data) {
		switch {
		case h.data[start.Byte] == '"':
			src.Column++
		case bytes.HasPrefix(h.data[start.Byte:], []byte("<<")):
			src.Line, src.Column = src.Line+1, 1
		}
	}
	return src
}

// readLimited reads a file for file(), with the config size limit.
func readLimited(p string) ([]byte, error) {
	// Not a directory, nor a device or pipe that could be endless.
	return bounded.ReadFile(p, MaxFileSize)
}
