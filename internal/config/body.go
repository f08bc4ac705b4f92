package config

import (
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/nexus-mcp/nexus/internal/diag"
	"github.com/nexus-mcp/nexus/internal/option"
)

// Bodies: a block as each format found it (option.Body), checked against
// its table's shape. Nested rows and labels go through here, so a block
// inside a block is read like its parent: hcl's schema refuses an unknown
// attribute or block with the nearest name, JSON warns about an unknown
// member the same way, and a missing required row is reported with the
// block's example.

// hclSchema is a shape's nexus.hcl schema: attributes for its plain rows,
// blocks for its nested ones (with their labels).
func hclSchema(s *option.Shape) *hcl.BodySchema {
	schema := &hcl.BodySchema{}
	for _, r := range s.Rows {
		switch {
		case r.Label:
		case r.Nested != nil:
			schema.Blocks = append(schema.Blocks, hcl.BlockHeaderSchema{Type: r.HCL, LabelNames: r.Nested.Labels()})
		default:
			schema.Attributes = append(schema.Attributes, hcl.AttributeSchema{Name: r.HCL, Required: r.Required})
		}
	}
	return schema
}

// hclBody is a nexus.hcl block read against its shape.
type hclBody struct {
	h     *hclFile
	b     *hcl.Block
	c     *hcl.BodyContent
	shape *option.Shape
	refs  map[string]Template
	who   string // the server, for a server's blocks
	subj  string // what warnings are about: `filter "pii"`
	ex    string // the example of the top-level block it is in
}

// hclBlock reads b against shape, or returns false when its content is
// wrong (reported).
func (h *hclFile) hclBlock(b *hcl.Block, shape *option.Shape, refs map[string]Template, ex string) (hclBody, bool) {
	c, ok := h.content(b, hclSchema(shape))
	if !ok {
		return hclBody{}, false
	}
	subj := b.Type
	if len(b.Labels) > 0 {
		subj = subject(b.Type, b.Labels[0])
	}
	return hclBody{h: h, b: b, c: c, shape: shape, refs: refs, subj: subj, ex: ex}, true
}

func (b hclBody) Get(r option.Row) option.Value {
	switch {
	case r.Label:
		i := slices.Index(b.shape.Labels(), r.HCL)
		if i < 0 || i >= len(b.b.Labels) {
			return nil
		}
		return hclLabel{h: b.h, s: b.b.Labels[i], rng: b.b.LabelRanges[i], who: b.who}
	case r.Nested != nil:
		var blocks []*hcl.Block
		for _, blk := range b.c.Blocks {
			if blk.Type == r.HCL {
				blocks = append(blocks, blk)
			}
		}
		if len(blocks) == 0 {
			return nil
		}
		return hclValue{h: b.h, refs: b.refs, who: b.who, subj: b.subj, in: b.b.Type, ex: b.ex, blocks: blocks, shape: r.Nested}
	}
	if a := b.c.Attributes[r.HCL]; a != nil {
		return hclValue{h: b.h, a: a, refs: b.refs, who: b.who, subj: b.subj, in: b.b.Type, ex: b.ex}
	}
	return nil
}

func (b hclBody) Source() diag.Source { return b.h.blockSource(b.b) }
func (b hclBody) Fail(problem, fix string) {
	b.h.errRange(b.b.DefRange, b.who, problem, fixes(fix)...)
}
func (b hclBody) FailExample(problem string) { b.Fail(problem, b.ex) }
func (b hclBody) FailAt(src diag.Source, problem, fix string) {
	b.h.failAt(src, b.who, problem, fixes(fix)...)
}
func (b hclBody) Warn(msg string)      { b.h.warnRange(b.b.DefRange, b.subj, "%s", msg) }
func (b hclBody) Exists(p string) bool { return b.h.ld.exists(p) }
func (b hclBody) Lenient() bool        { return b.h.ld.opts.AllowUnset }

func (b hclBody) Errors() int { return len(b.h.errs) }

// Blocks reads a nested row's blocks; a second of a row that is not
// Many is reported at the second.
func (v hclValue) Blocks() ([]option.Body, bool) {
	if !v.shape.Many && len(v.blocks) > 1 {
		v.h.errRange(v.blocks[1].DefRange, v.who, fmt.Sprintf("%s has at most one %s block (first on line %d)", article(v.in), v.blocks[1].Type, v.blocks[0].DefRange.Start.Line),
			"Merge the two into one.")
		return nil, false
	}
	var out []option.Body
	ok := true
	for _, blk := range v.blocks {
		b, good := v.h.hclBlock(blk, v.shape, v.refs, v.ex)
		if !good {
			ok = false
			continue
		}
		b.who, b.subj = v.who, v.subj
		out = append(out, b)
	}
	return out, ok
}

func (v hclValue) Scalar() (string, bool) {
	x, ok := v.h.plain(v.a, cty.DynamicPseudoType)
	switch {
	case !ok:
		return "", false
	case x.Type() == cty.Number:
		return x.AsBigFloat().Text('f', -1), true
	case x.Type() == cty.String:
		return x.AsString(), true
	}
	v.h.errRange(v.a.Expr.Range(), v.who, fmt.Sprintf("Incorrect attribute value type: %q must be a string or a number, found %s", v.a.Name, friendly(x.Type())))
	return "", false
}

func (v hclValue) Object(ptr string) (map[string]any, bool) { return v.h.anyValue(v.a, v.refs, ptr) }

// Members are in key order: an HCL map has no other.
func (v hclValue) Members() ([]option.Member, bool) {
	x, ok := v.h.plain(v.a, cty.Map(cty.String))
	if !ok {
		return nil, false
	}
	at := map[string]diag.Source{}
	if obj, isObj := v.a.Expr.(*hclsyntax.ObjectConsExpr); isObj {
		for _, it := range obj.Items {
			if k, diags := it.KeyExpr.Value(nil); !diags.HasErrors() && k.Type() == cty.String {
				at[k.AsString()] = v.h.exprStart(it.ValueExpr.Range())
			}
		}
	}
	out := []option.Member{}
	for k, e := range x.AsValueMap() {
		src, ok := at[k]
		if !ok {
			src = v.Source()
		}
		out = append(out, option.Member{Key: k, Value: e.AsString(), Source: src})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, true
}

func (v hclValue) Source() diag.Source { return v.h.exprStart(v.a.Expr.Range()) }

// item is where element i of the list is written.
func (v hclValue) item(i int) *site {
	if exprs, diags := hcl.ExprList(v.a.Expr); !diags.HasErrors() && i < len(exprs) {
		return v.h.site(exprs[i].Range())
	}
	return v.h.site(v.a.Expr.Range())
}

func (v hclValue) FailItem(i int, problem, fix string) {
	at := v.item(i)
	r := v.h.errRange(v.a.Expr.Range(), v.who, problem, fixes(fix)...)
	r.Source, r.Details = at.src, []diag.Section{{Lines: at.lines}}
}

func (v hclValue) WarnItem(i int, msg string) {
	v.h.warns = append(v.h.warns, Warning{Source: v.item(i).src, Subject: v.subj, Message: msg})
}

// hclLabel is a block's label: a string, reported at the label.
type hclLabel struct {
	h   *hclFile
	s   string
	rng hcl.Range
	who string
}

func (v hclLabel) String(string) (string, bool) { return v.s, true }
func (v hclLabel) Choice(allowed []string) (string, bool) {
	return choice(v.s, true, "label", allowed, v.Fail)
}
func (v hclLabel) Fail(problem, fix string)   { v.h.errRange(v.rng, v.who, problem, fixes(fix)...) }
func (v hclLabel) FailExample(problem string) { v.Fail(problem, "") }

// A label is text: a row that reads it as anything else is a mistake in
// its table, reported as such rather than passed over.
func (v hclLabel) notText() {
	v.Fail("a block's label is a string; this option's table reads it as another type", "")
}
func (v hclLabel) Strings(string) ([]string, bool)          { v.notText(); return nil, false }
func (v hclLabel) Map(string) (map[string]string, bool)     { v.notText(); return nil, false }
func (v hclLabel) Int(int) (int, bool)                      { v.notText(); return 0, false }
func (v hclLabel) Duration() (time.Duration, bool)          { v.notText(); return 0, false }
func (v hclLabel) Bool() (bool, bool)                       { v.notText(); return false, false }
func (v hclLabel) Path(string) (string, bool)               { v.notText(); return "", false }
func (v hclLabel) EnvFile(string) (map[string]string, bool) { v.notText(); return nil, false }
func (v hclLabel) Blocks() ([]option.Body, bool)            { v.notText(); return nil, false }

// jsonBody is an object of a JSON file read against its shape. label is
// the member that names it when the block is an object's key (agents by
// name), else nil.
type jsonBody struct {
	d      *dec
	v      *jval
	label  *jval
	shape  *option.Shape
	prefix string // before a member's name in messages: "limits."
	ex     string
}

// body checks v, an object named field, against shape (byName: an entry
// of an object of blocks by name, whose key is its label): unknown members
// warn, a missing required one is an error with need as the fix (its other
// members are still read, for their own errors). ok is false when v is
// not an object.
func (d *dec) body(v *jval, field, prefix string, shape *option.Shape, ex, need string, byName bool) (jsonBody, bool) {
	if v.kind != '{' {
		d.typeErr(v, field, "an object", ex)
		return jsonBody{}, false
	}
	keys := shape.JSONKeys()
	if byName { // the label is the entry's key, not a member
		keys = slices.DeleteFunc(keys, func(k string) bool {
			return slices.ContainsFunc(shape.Rows, func(r option.Row) bool { return r.Label && r.JSON == k })
		})
	}
	d.keys(v, field, keys)
	for _, r := range shape.Rows {
		if r.Required && v.get(r.JSON) == nil && !(r.Label && byName) {
			d.errAt(v, fmt.Sprintf("%s needs %q", field, r.JSON), fixes(need)...)
		}
	}
	return jsonBody{d: d, v: v, shape: shape, prefix: prefix, ex: ex}, true
}

func (b jsonBody) Get(r option.Row) option.Value {
	name := b.prefix + r.JSON
	if r.Label && b.label != nil {
		return jsonValue{d: b.d, v: b.label, name: name, ex: b.ex}
	}
	m := b.v.get(r.JSON)
	if m == nil {
		return nil
	}
	need := b.ex
	if r.Nested != nil && r.Example != "" {
		need = fmt.Sprintf("%q: %s", r.JSON, r.Example)
	}
	return jsonValue{d: b.d, v: m, name: name, ex: b.ex, shape: r.Nested, need: need, example: r.Example}
}

func (b jsonBody) Errors() int { return len(b.d.j.errs) }

// Blocks reads a nested row's value: an object, or for a row that may be
// written more than once an array of them (or one object).
func (v jsonValue) Blocks() ([]option.Body, bool) {
	items := []*jval{v.v}
	switch {
	case v.v.kind == '[' && v.shape.Many:
		items = v.v.arr
	case v.v.kind != '{':
		want := "an object"
		if v.shape.Many {
			want = "an object or an array of objects"
		}
		ex := v.ex
		if v.example != "" { // the nested block's own example
			ex = v.example
		}
		v.d.typeErr(v.v, v.name, want, ex)
		return nil, false
	}
	var out []option.Body
	ok := true
	for _, it := range items {
		b, good := v.d.body(it, v.name, v.name+".", v.shape, v.ex, v.need, false)
		if !good {
			ok = false
			continue
		}
		out = append(out, b)
	}
	return out, ok
}

func (v hclLabel) Scalar() (string, bool)               { return v.s, true }
func (v hclLabel) Object(string) (map[string]any, bool) { v.notText(); return nil, false }
func (v hclLabel) Members() ([]option.Member, bool)     { v.notText(); return nil, false }
func (v hclLabel) Source() diag.Source                  { return v.h.exprStart(v.rng) }
func (v hclLabel) FailItem(int, string, string)         { v.notText() }
func (v hclLabel) WarnItem(int, string)                 { v.notText() }

func (b jsonBody) Source() diag.Source { return b.d.j.at(b.v.off) }
func (b jsonBody) Fail(problem, fix string) {
	b.d.errAt(b.v, problem, fixes(fix)...)
}
func (b jsonBody) FailExample(problem string) { b.Fail(problem, b.ex) }
func (b jsonBody) FailAt(src diag.Source, problem, fix string) {
	b.d.j.failAt(src, b.d.server(), problem, fixes(fix)...)
}
func (b jsonBody) Warn(msg string)      { b.d.j.warnAt(b.v.off, b.d.subject(), "%s", msg) }
func (b jsonBody) Exists(p string) bool { return b.d.j.ld.exists(p) }
func (b jsonBody) Lenient() bool        { return b.d.j.ld.opts.AllowUnset }

func (v jsonValue) Scalar() (string, bool) {
	if v.v.kind != '0' && v.v.kind != '"' {
		v.d.typeErr(v.v, v.name, "a string or a number", "")
		return "", false
	}
	return v.v.str, true
}

func (v jsonValue) Object(ptr string) (map[string]any, bool) {
	if v.v.kind != '{' {
		v.d.typeErr(v.v, v.name, "an object", "")
		return nil, false
	}
	m, _ := v.d.anyValue(v.v, v.name, ptr).(map[string]any)
	return m, true
}

// Members are in the order written.
func (v jsonValue) Members() ([]option.Member, bool) {
	if v.v.kind != '{' {
		v.d.typeErr(v.v, v.name, "an object of strings", "")
		return nil, false
	}
	out := []option.Member{}
	ok := true
	for _, m := range v.v.obj {
		s, good := v.d.str(m.val, v.name+"."+m.key, "")
		if !good {
			ok = false
			continue
		}
		out = append(out, option.Member{Key: m.key, Value: s, Source: v.d.j.at(m.val.off + 1)})
	}
	return out, ok
}

func (v jsonValue) Source() diag.Source {
	if v.v.kind == '"' {
		return v.d.j.at(v.v.off + 1)
	}
	return v.d.j.at(v.v.off)
}

// item is element i of the list, or the list.
func (v jsonValue) item(i int) *jval {
	if v.v.kind == '[' && i < len(v.v.arr) {
		return v.v.arr[i]
	}
	return v.v
}

func (v jsonValue) FailItem(i int, problem, fix string) { v.d.errAt(v.item(i), problem, fixes(fix)...) }
func (v jsonValue) WarnItem(i int, msg string) {
	v.d.j.warnAt(v.item(i).off, v.d.subject(), "%s", msg)
}

// Sites of a value's elements and members (option.Value's ItemSites and
// MemberSites), each with its snippet, for the checks made after the
// layers merge.

func (v hclValue) Warn(msg string) { v.h.warnRange(v.a.Expr.Range(), v.subj, "%s", msg) }

func (v hclValue) ItemSites() []option.Site {
	exprs, diags := hcl.ExprList(v.a.Expr)
	if diags.HasErrors() {
		exprs = nil
	}
	n := len(exprs)
	if x, ok := v.h.plainQuiet(v.a); ok && x.CanIterateElements() && x.LengthInt() != n {
		// A list from a variable or function: its elements have no place
		// of their own.
		exprs, n = nil, x.LengthInt()
	}
	out := make([]option.Site, n)
	for i := range out {
		rng := v.a.Expr.Range()
		if exprs != nil {
			rng = exprs[i].Range()
		}
		s := v.h.site(rng)
		out[i] = option.Site{Source: s.src, Lines: s.lines}
	}
	return out
}

func (v hclValue) MemberSites() map[string]option.Site {
	x, ok := v.h.plainQuiet(v.a)
	if !ok || !x.CanIterateElements() || x.Type().IsListType() || x.Type().IsTupleType() || x.Type().IsSetType() {
		return nil
	}
	whole := v.h.site(v.a.Expr.Range())
	out := map[string]option.Site{}
	for it := x.ElementIterator(); it.Next(); {
		k, _ := it.Element()
		if k.Type() == cty.String && k.IsKnown() && !k.IsNull() {
			out[k.AsString()] = option.Site{Source: whole.src, Lines: whole.lines}
		}
	}
	// Point at each value where the object is written out.
	if pairs, diags := hcl.ExprMap(v.a.Expr); !diags.HasErrors() {
		for _, p := range pairs {
			if k, diags := p.Key.Value(nil); !diags.HasErrors() && k.Type() == cty.String && k.IsKnown() && !k.IsNull() {
				if _, has := out[k.AsString()]; has {
					s := v.h.site(p.Value.Range())
					out[k.AsString()] = option.Site{Source: s.src, Lines: s.lines}
				}
			}
		}
	}
	return out
}

func (v hclLabel) Warn(string)                         { v.notText() }
func (v hclLabel) ItemSites() []option.Site            { v.notText(); return nil }
func (v hclLabel) MemberSites() map[string]option.Site { v.notText(); return nil }

func (v jsonValue) Warn(msg string) { v.d.j.warnAt(v.v.off, v.d.subject(), "%s", msg) }

// width is how many bytes of the file a scalar takes: a string's text
// and its quotes (as decoded: an escape makes the mark shorter).
func width(v *jval) int {
	if v.kind == '"' {
		return len(v.str) + 2
	}
	return max(1, len(v.str))
}

func (v jsonValue) ItemSites() []option.Site {
	if v.v.kind != '[' {
		return nil
	}
	out := make([]option.Site, len(v.v.arr))
	for i, e := range v.v.arr {
		s := v.d.j.site(e.off, width(e))
		out[i] = option.Site{Source: s.src, Lines: s.lines}
	}
	return out
}

func (v jsonValue) MemberSites() map[string]option.Site {
	if v.v.kind != '{' {
		return nil
	}
	out := map[string]option.Site{}
	for _, m := range v.v.obj {
		s := v.d.j.site(m.val.off, width(m.val))
		out[m.key] = option.Site{Source: s.src, Lines: s.lines}
	}
	return out
}

// plainQuiet is a's value without its marks, or false; it reports
// nothing, since the row that read the value has said what is wrong.
func (h *hclFile) plainQuiet(a *hcl.Attribute) (cty.Value, bool) {
	v, diags := a.Expr.Value(h.real)
	if diags.HasErrors() || !v.IsWhollyKnown() || v.IsNull() {
		return cty.NilVal, false
	}
	v, _ = v.UnmarkDeep()
	return v, true
}
