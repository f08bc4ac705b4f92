package option

import "strings"

// A Ref is a value Nexus reads at load time but must never copy into a file
// it writes: an environment variable (from ${NAME}, ${env:NAME}, HCL's env()
// or a sensitive variable) or a VS Code input. Compile-down writes the
// reference, in the target's syntax, instead of the value.
type Ref struct {
	Env        string // environment variable; "" for an input
	Input      string // VS Code input id
	Default    string // from ${NAME:-default}
	HasDefault bool
	// Named is the sensitive variable whose own name Env is (it has no
	// env = ... and its default reads no environment variable): the
	// client's environment must supply Env by that name.
	Named string
}

// Part is a literal piece of a string or a reference.
type Part struct {
	Text string
	Ref  *Ref
}

// A Template is a string value written with references, such as
// "Bearer ${TOKEN}". Only values holding at least one Ref get one.
type Template []Part

// String renders t in the syntax Nexus and Claude Code read: ${NAME},
// ${NAME:-default} and ${input:id}.
func (t Template) String() string {
	return t.Render(func(r Ref) string {
		switch {
		case r.Input != "":
			return "${input:" + r.Input + "}"
		case r.HasDefault:
			return "${" + r.Env + ":-" + r.Default + "}"
		}
		return "${" + r.Env + "}"
	})
}

// Render writes t with each reference spelled by ref.
func (t Template) Render(ref func(Ref) string) string {
	var b strings.Builder
	for _, p := range t {
		if p.Ref != nil {
			b.WriteString(ref(*p.Ref))
		} else {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// HasRef reports whether t holds a reference.
func (t Template) HasRef() bool {
	for _, p := range t {
		if p.Ref != nil {
			return true
		}
	}
	return false
}

// Add appends a part: a literal, merging it into a literal before it so that equal
// strings always give equal templates.
func (t Template) Add(p Part) Template {
	if p.Ref == nil {
		if p.Text == "" {
			return t
		}
		if n := len(t); n > 0 && t[n-1].Ref == nil {
			t[n-1].Text += p.Text
			return t
		}
	}
	return append(t, p)
}
