package option

import (
	"time"

	"github.com/nexus-mcp/nexus/internal/diag"
)

// Option is one setting of a component, for its options struct T.
type Option[T any] struct {
	// HCL is the attribute in the component's nexus.hcl block; JSON is the
	// member on a JSON server entry (with a prefix such as http_ where the
	// bare name would be unclear among the server's other members).
	HCL, JSON string
	// Decode reads v into o. A value of the wrong type is already reported
	// by v; Decode adds checks of its own with v.Fail.
	Decode func(o *T, v Value)
	// Required is an option of a Block that the block must set: nexus.hcl's
	// schema requires it, and JSON reports the block without it.
	Required bool
	// Label is the row that names its block (block.go): the block's label
	// in nexus.hcl, in JSON the key or member that names it. Its Value
	// reads as a string.
	Label bool
	// Nested is the shape of a row that is a block of its own (made by
	// Nest or NestList); its Value reads through Blocks.
	Nested *Shape
	// Out is the option's value for nexus.hcl and nexus JSON, or nil to leave
	// it out (unset, or the default): a string, []string, int, bool, or what
	// w returned for a value that may hold a template.
	Out func(o *T, w Writer) any
	// Lost is the warning for a client's config (format is the compile
	// format's name: "mcpservers", "vscode") that cannot express a set
	// option, or "" when that format carries Out as nexus JSON does.
	// Nil means every format carries it.
	Lost func(o *T, format string) string
	// Example is a value of the option as JSON text, which nexus.hcl reads
	// too. The config loader's tests decode it in both formats and write it
	// back through each, so a new option is checked end to end by its row.
	Example string
}

// Value is an option's value as a config format found it. Each method reads
// it as one type and reports whether it could; when it could not, the
// format has recorded the error with its own position and wording. ptr is
// the JSON pointer under the server entry ("/env", "/headers") where the
// value's templates (${VAR}, var.x, input references) are kept, "" for
// options that take none.
type Value interface {
	String(ptr string) (string, bool)
	Strings(ptr string) ([]string, bool)
	Map(ptr string) (map[string]string, bool)
	Int(min int) (int, bool)
	Duration() (time.Duration, bool)
	Bool() (bool, bool)
	// Choice is a string that must be one of allowed; another is reported
	// with the nearest allowed value.
	Choice(allowed []string) (string, bool)
	// Path is a file or directory: a relative one starts at the config
	// file's directory, ~ at the home directory.
	Path(ptr string) (string, bool)
	// EnvFile reads the KEY=value file at path, bounded; an unreadable or
	// malformed file is reported at the value and ok is false.
	EnvFile(path string) (env map[string]string, ok bool)
	// Fail reports a problem with the value and its fix at its position.
	Fail(problem, fix string)
	// Scalar is a string or a number, as its text (a filter's abi: 1 or
	// "opa").
	Scalar() (string, bool)
	// Object is free-form settings (a filter's config): an object of any
	// JSON values, its strings' templates kept under ptr.
	Object(ptr string) (map[string]any, bool)
	// Members is an object of strings, each with where its text starts,
	// in key order (a rule's set: each value an expression of its own).
	Members() ([]Member, bool)
	// Source is where the value's text starts: after a string's opening
	// quote, on the line after a heredoc's marker. An owner that reads the
	// text as a language of its own (a CEL rule) reports inside it from
	// there.
	Source() diag.Source
	// FailItem and WarnItem report a problem with element i of a list
	// at the element.
	FailItem(i int, problem, fix string)
	WarnItem(i int, message string)
	// Warn notes something about the value that may not be meant, at
	// the value.
	Warn(message string)
	// ItemSites are where each element of a list was written, in order,
	// and MemberSites where each member's value of an object was, by key:
	// kept for checks made after the layers merge (a required server that
	// no layer configures), when the file's text is gone. An element that
	// cannot be told apart from the others (a list from a variable or a
	// function) is at the whole value.
	ItemSites() []Site
	MemberSites() map[string]Site
	// Blocks are the blocks of a nested row (Option.Nested), each checked
	// against its shape; more than one of a row that is not Many is
	// reported, and ok is false.
	Blocks() ([]Body, bool)
	// FailExample is Fail with the block's example, in the format's own
	// syntax, as the fix (Block's HCLExample or JSONExample; none for a
	// server's options).
	FailExample(problem string)
}

// Writer writes values that may have come from a template, or hold a
// credential a format masks. Each takes the value's JSON pointer ("" for
// one kept without templates) and returns what Out should give back.
type Writer interface {
	String(ptr, v string) any
	Map(ptr string, m map[string]string) any
	// Path is a file or directory: JSON keeps its template, nexus.hcl
	// (which reads paths as plain text) its value.
	Path(ptr, v string) any
	// Secret is a credential that belongs in a sensitive variable (what
	// it is: "key"): its template is written, but one written into the
	// file as it is is not copied out of it, only named, with a warning
	// to move it (unless secrets are being shown).
	Secret(ptr, what, v string) any
	// Object is free-form settings, its strings' templates kept under ptr.
	Object(ptr string, m map[string]any) any
}

// Member is a string of an object, and where its text starts.
type Member struct {
	Key, Value string
	Source     diag.Source
}

// Site is where a value was written and the lines of the file around
// it, marked, so that a report can show it once the file is closed.
type Site struct {
	Source diag.Source
	Lines  []string
}

// Table is a component's options, in the order they are written.
type Table[T any] []Option[T]

// JSON is the option named name on a JSON server entry, or nil.
func (t Table[T]) JSON(name string) *Option[T] {
	for i := range t {
		if t[i].JSON == name {
			return &t[i]
		}
	}
	return nil
}

// JSONKeys are the options' names on a JSON server entry.
func (t Table[T]) JSONKeys() []string {
	keys := make([]string, len(t))
	for i, o := range t {
		keys[i] = o.JSON
	}
	return keys
}

// HCLKeys are the options' attribute names in a nexus.hcl block.
func (t Table[T]) HCLKeys() []string {
	keys := make([]string, len(t))
	for i, o := range t {
		keys[i] = o.HCL
	}
	return keys
}

// Text is a string option named name in both formats, at field, whose JSON
// pointer is ptr. With templates, a value from the environment or an input
// is kept as its template (and written back so); without, the value is
// plain text. Either way ptr names it where a credential in it is masked.
func Text[T any](name, ptr string, templates bool, field func(*T) *string, example string) Option[T] {
	decodePtr := ptr
	if !templates {
		decodePtr = ""
	}
	return Option[T]{HCL: name, JSON: name, Example: example,
		Decode: func(o *T, v Value) { *field(o), _ = v.String(decodePtr) },
		Out: func(o *T, w Writer) any {
			if s := *field(o); s != "" {
				return w.String(ptr, s)
			}
			return nil
		}}
}

// Map is an object of strings named name in both formats (env, headers),
// at field, its templates kept under ptr.
func Map[T any](name, ptr string, field func(*T) *map[string]string, example string) Option[T] {
	return Option[T]{HCL: name, JSON: name, Example: example,
		Decode: func(o *T, v Value) { *field(o), _ = v.Map(ptr) },
		Out: func(o *T, w Writer) any {
			if len(*field(o)) == 0 {
				return nil
			}
			return w.Map(ptr, *field(o))
		}}
}

// Block is a top-level block of the config that a component owns (the
// lock block, the telemetry block): one per file at most, a block in
// nexus.hcl and a member of the top-level object in JSON, named Name in
// both, its options T's Table. The config loader decodes and writes it
// through Options alone.
type Block[T any] struct {
	Name    string
	Options Table[T]
	// New is the block with nothing set: its defaults.
	New func() *T
	// HCLExample and JSONExample are the block as a person would write
	// it in each format: the fix of a value that is not an object, of a
	// missing Required option, and of each FailExample.
	HCLExample, JSONExample string
	// A block with a Label row is written any number of times, each
	// named (filter "pii"): in JSON they are the member JSONName of the
	// top-level object (Name when ""), an array in the order written when
	// JSONList, else an object by name.
	JSONName string
	JSONList bool
	// Check runs after the rows are read (its templates kept), for what
	// no row can say alone: options that exclude each other, the block's
	// whole compiled. ok says every row read without error.
	Check func(o *T, b Body, ok bool)
}
