package config

import (
	"fmt"
	"slices"
	"time"

	"github.com/hashicorp/hcl/v2"

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
	ex    string // the example of the top-level block it is in
}

// hclBlock reads b against shape, or returns false when its content is
// wrong (reported).
func (h *hclFile) hclBlock(b *hcl.Block, shape *option.Shape, refs map[string]Template, ex string) (hclBody, bool) {
	c, ok := h.content(b, hclSchema(shape))
	if !ok {
		return hclBody{}, false
	}
	return hclBody{h: h, b: b, c: c, shape: shape, refs: refs, ex: ex}, true
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
		return hclValue{h: b.h, refs: b.refs, who: b.who, in: b.b.Type, ex: b.ex, blocks: blocks, shape: r.Nested}
	}
	if a := b.c.Attributes[r.HCL]; a != nil {
		return hclValue{h: b.h, a: a, refs: b.refs, who: b.who, in: b.b.Type, ex: b.ex}
	}
	return nil
}

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
		b.who = v.who
		out = append(out, b)
	}
	return out, ok
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

// body checks v, an object named field, against shape: unknown members
// warn, a missing required one is an error with ex as the fix (its other
// members are still read, for their own errors). ok is false when v is
// not an object.
func (d *dec) body(v *jval, field, prefix string, shape *option.Shape, ex string) (jsonBody, bool) {
	if v.kind != '{' {
		d.typeErr(v, field, "an object", ex)
		return jsonBody{}, false
	}
	d.keys(v, field, shape.JSONKeys())
	for _, r := range shape.Rows {
		if r.Required && v.get(r.JSON) == nil {
			d.errAt(v, fmt.Sprintf("%s needs %q", field, r.JSON), fixes(ex)...)
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
	return jsonValue{d: b.d, v: m, name: name, ex: b.ex, shape: r.Nested}
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
		v.d.typeErr(v.v, v.name, want, v.ex)
		return nil, false
	}
	var out []option.Body
	ok := true
	for _, it := range items {
		b, good := v.d.body(it, v.name, v.name+".", v.shape, v.ex)
		if !good {
			ok = false
			continue
		}
		out = append(out, b)
	}
	return out, ok
}
