package config

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

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

// add appends a literal, merging it into a literal before it so that equal
// strings always give equal templates.
func (t Template) add(p Part) Template {
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

// Input is a VS Code "inputs" entry: a value asked for when it is needed.
type Input struct {
	ID          string
	Type        string // "promptString" (the only kind Nexus can ask for)
	Description string
	Password    bool
	Default     string
}

// EnvName is the environment variable that supplies an input when no
// terminal can ask for it: NEXUS_INPUT_<ID>, upper-cased, with every
// character that cannot appear in a variable name as '_'.
func (in Input) EnvName() string { return "NEXUS_INPUT_" + envSafe(in.ID) }

var notEnv = regexp.MustCompile(`[^A-Z0-9_]`)

func envSafe(s string) string { return notEnv.ReplaceAllString(strings.ToUpper(s), "_") }

// Prompter asks a person for an input's value (on a terminal, without echo
// for a password). The CLI supplies one when stdin is a terminal.
type Prompter interface {
	Prompt(in Input) (string, error)
}

// expander resolves the ${...} references of the JSON dialects. One is
// made per file, since inputs belong to the file that declares them.
type expander struct {
	lookup     func(string) (string, bool)
	home, dir  string // ${userHome}, ${workspaceFolder}
	inputs     map[string]Input
	ask        func(Input) (string, bool, error) // value, found
	allowUnset bool
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// unsetError is an undefined reference; expand reports it with where it
// is used.
type unsetError struct {
	ref  string // as written: ${GITHUB_TOKEN}
	name string
	fix  []string
}

func (e *unsetError) Error() string { return e.ref + " is not set" }

// expand resolves the references in s. It returns the value, the template
// (nil when s holds no reference that must stay a reference) and, for a
// problem, an error whose text names the reference.
func (x *expander) expand(s string) (string, Template, error) {
	if !strings.Contains(s, "${") {
		return s, nil, nil
	}
	// A value with only $${ escapes has no template but still needs
	// them undone, so the loop runs for it too.
	var (
		val  strings.Builder
		tmpl Template
		refs bool
	)
	rest := s
	for {
		i := strings.Index(rest, "${")
		if i < 0 {
			break
		}
		if i > 0 && rest[i-1] == '$' {
			// $${ is a literal ${, for the rare value that holds one.
			lit := rest[:i-1] + "${"
			val.WriteString(lit)
			tmpl = tmpl.add(Part{Text: lit})
			rest = rest[i+2:]
			continue
		}
		j := strings.IndexByte(rest[i:], '}')
		if j < 0 {
			break // an unterminated ${ is literal text, as in every client
		}
		lit, expr := rest[:i], rest[i+2:i+j]
		val.WriteString(lit)
		tmpl = tmpl.add(Part{Text: lit})
		rest = rest[i+j+1:]

		v, ref, err := x.resolve(expr)
		if err != nil {
			return "", nil, err
		}
		val.WriteString(v)
		if ref != nil {
			refs = true
			tmpl = tmpl.add(Part{Ref: ref})
		} else {
			tmpl = tmpl.add(Part{Text: v})
		}
	}
	val.WriteString(rest)
	tmpl = tmpl.add(Part{Text: rest})
	if !refs {
		tmpl = nil
	}
	return val.String(), tmpl, nil
}

// resolve evaluates the inside of one ${...}.
func (x *expander) resolve(expr string) (string, *Ref, error) {
	switch expr {
	case "userHome":
		return x.home, nil, nil
	case "workspaceFolder":
		return x.dir, nil, nil
	case "workspaceFolderBasename":
		return filepath.Base(x.dir), nil, nil
	case "pathSeparator", "/":
		return string(os.PathSeparator), nil, nil
	}
	if name, ok := strings.CutPrefix(expr, "env:"); ok {
		return x.env("${"+expr+"}", name, "", false)
	}
	if id, ok := strings.CutPrefix(expr, "input:"); ok {
		return x.input("${"+expr+"}", id)
	}
	if name, def, ok := strings.Cut(expr, ":-"); ok && envName.MatchString(name) {
		return x.env("${"+expr+"}", name, def, true)
	}
	if envName.MatchString(expr) {
		return x.env("${"+expr+"}", expr, "", false)
	}
	return "", nil, fmt.Errorf("${%s} is not a reference Nexus knows (it reads ${NAME}, ${NAME:-default}, ${env:NAME}, ${input:id}, ${userHome} and ${workspaceFolder})", expr)
}

func (x *expander) env(written, name, def string, hasDef bool) (string, *Ref, error) {
	if !envName.MatchString(name) {
		return "", nil, fmt.Errorf("%s: %q is not an environment variable name", written, name)
	}
	ref := &Ref{Env: name, Default: def, HasDefault: hasDef}
	if v, ok := x.lookup(name); ok {
		return v, ref, nil
	}
	if hasDef {
		return def, ref, nil
	}
	if x.allowUnset {
		return "", ref, nil
	}
	return "", nil, &unsetError{ref: written, name: name, fix: []string{
		"Set it in the environment Nexus runs in: export " + name + "=...",
		"Or give it a default: ${" + name + ":-value}",
	}}
}

func (x *expander) input(written, id string) (string, *Ref, error) {
	in, ok := x.inputs[id]
	if !ok {
		return "", nil, &unsetError{ref: written, name: id, fix: []string{
			`Declare it in this file's "inputs": [{"type": "promptString", "id": "` + id + `", "description": "...", "password": true}]`,
		}}
	}
	ref := &Ref{Input: id}
	if x.allowUnset {
		return "", ref, nil
	}
	v, found, err := x.ask(in)
	if err != nil {
		return "", nil, err
	}
	if !found {
		return "", nil, &unsetError{ref: written, name: id, fix: []string{
			"Run Nexus on a terminal to be asked for it, or set " + in.EnvName() + " in the environment.",
		}}
	}
	return v, ref, nil
}
