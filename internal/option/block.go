package option

import "github.com/nexus-mcp/nexus/internal/diag"

// Blocks inside blocks, and labels. A row is an attribute by default; a
// row made by Nest or NestList is a block of its own inside its block (a
// filter's match and limits), decoded through its own table, and a row
// with Label is the name a block is known by (filter "pii"): nexus.hcl
// writes it as the block's label, JSON as the key of an object of blocks
// by name or as a member of each entry of an array of them. A config
// format needs only a table's Shape to build its schema and check a
// block's keys; Decode and Out do the rest through Body, Value and
// Writer, so a nested row is checked as its parent's rows are, at its own
// position in the format's own words.

// Row is an option as a config format sees it: its names and its shape,
// without its type.
type Row struct {
	HCL, JSON string
	Required  bool
	Label     bool
	Nested    *Shape
	Example   string // Option.Example, for tests that walk a shape
}

// Shape is a table's rows without their type.
type Shape struct {
	Rows []Row
	// Many is a block that may be written more than once in its parent:
	// in JSON an array of objects (a single object is taken as one).
	Many bool
}

// Labels are the HCL names of the shape's label rows, in order.
func (s *Shape) Labels() []string {
	var out []string
	for _, r := range s.Rows {
		if r.Label {
			out = append(out, r.HCL)
		}
	}
	return out
}

// JSONKeys are the members a JSON object of the shape may have.
func (s *Shape) JSONKeys() []string {
	keys := make([]string, len(s.Rows))
	for i, r := range s.Rows {
		keys[i] = r.JSON
	}
	return keys
}

// Row is o as a format sees it.
func (o *Option[T]) Row() Row {
	return Row{HCL: o.HCL, JSON: o.JSON, Required: o.Required, Label: o.Label, Nested: o.Nested, Example: o.Example}
}

// Shape is t's rows without their type.
func (t Table[T]) Shape() *Shape {
	s := &Shape{Rows: make([]Row, len(t))}
	for i := range t {
		s.Rows[i] = t[i].Row()
	}
	return s
}

// Body is one block as a config format found it, already checked against
// its Shape: unknown keys and missing required rows are reported.
type Body interface {
	// Get is the value of row r in the block, or nil when it is not set.
	Get(r Row) Value
	// Source is where the block is written.
	Source() diag.Source
	// Fail reports a problem with the whole block, at its start; with
	// FailExample the fix is the block's example in the format's syntax.
	Fail(problem, fix string)
	FailExample(problem string)
	// FailAt reports a problem at src, a place inside the block (an
	// expression's column).
	FailAt(src diag.Source, problem, fix string)
	// Warn notes something that may not be meant, at the block.
	Warn(message string)
	// Exists says whether the file or directory at path exists.
	Exists(path string) bool
	// Lenient is set when values from the environment may be unset (for
	// show and compile, which need no secrets).
	Lenient() bool
	// Errors counts the errors the file has so far, so that a decoder can
	// tell whether a row failed.
	Errors() int
}

// Decode reads the rows of t that b sets into o: its labels first, and
// nothing more when one of them is wrong (a block that cannot be named
// cannot be reported on by name). It reports whether no row failed.
func Decode[T any](t Table[T], o *T, b Body) bool {
	return DecodeLabels(t, o, b) && DecodeRows(t, o, b)
}

// DecodeLabels reads the label rows of t that b sets into o, and reports
// whether none failed.
func DecodeLabels[T any](t Table[T], o *T, b Body) bool { return decode(t, o, b, true) }

// DecodeRows reads the other rows, and reports whether none failed.
func DecodeRows[T any](t Table[T], o *T, b Body) bool { return decode(t, o, b, false) }

func decode[T any](t Table[T], o *T, b Body, labels bool) bool {
	before := b.Errors()
	for i := range t {
		if t[i].Label != labels {
			continue
		}
		if v := b.Get(t[i].Row()); v != nil {
			t[i].Decode(o, v)
		}
	}
	return b.Errors() == before
}

// Out is o's set rows in the nexus JSON form, by their JSON names.
func Out[T any](t Table[T], o *T, w Writer) map[string]any {
	m := map[string]any{}
	for i := range t {
		if v := t[i].Out(o, w); v != nil {
			m[t[i].JSON] = v
		}
	}
	return m
}

// Nest is a row that is a block inside the block, at most one, decoded
// into field through table (a filter's limits { ... }). It is written
// when any of its rows is set.
func Nest[T, U any](name string, table Table[U], field func(*T) *U, example string) Option[T] {
	return Option[T]{HCL: name, JSON: name, Nested: table.Shape(), Example: example,
		Decode: func(o *T, v Value) {
			if bs, ok := v.Blocks(); ok && len(bs) == 1 {
				Decode(table, field(o), bs[0])
			}
		},
		Out: func(o *T, w Writer) any {
			if m := Out(table, field(o), w); len(m) > 0 {
				return m
			}
			return nil
		}}
}

// NestList is a row that is a block written any number of times inside
// the block (a filter's match { ... }), each decoded through table into
// the element add appends to the list (b is the element's block: its
// source); list is the elements, in order, for writing them back.
func NestList[T, U any](name string, table Table[U], add func(*T, Body) *U, list func(*T) []*U, example string) Option[T] {
	shape := table.Shape()
	shape.Many = true
	return Option[T]{HCL: name, JSON: name, Nested: shape, Example: example,
		Decode: func(o *T, v Value) {
			bs, _ := v.Blocks()
			for _, b := range bs {
				Decode(table, add(o, b), b)
			}
		},
		Out: func(o *T, w Writer) any {
			items := list(o)
			if len(items) == 0 {
				return nil
			}
			out := make([]map[string]any, len(items))
			for i, u := range items {
				out[i] = Out(table, u, w)
			}
			return out
		}}
}

// Field is t's rows as rows of T, whose field holds the U they decode
// (a rule's rows as rows of the filter that holds it).
func Field[T, U any](t Table[U], field func(*T) *U) Table[T] {
	out := make(Table[T], len(t))
	for i, o := range t {
		out[i] = Option[T]{HCL: o.HCL, JSON: o.JSON, Required: o.Required, Label: o.Label, Nested: o.Nested, Example: o.Example,
			Decode: func(x *T, v Value) { o.Decode(field(x), v) }}
		if o.Out != nil {
			out[i].Out = func(x *T, w Writer) any { return o.Out(field(x), w) }
		}
		if o.Lost != nil {
			out[i].Lost = func(x *T, format string) string { return o.Lost(field(x), format) }
		}
	}
	return out
}
