package config

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/nexus-mcp/nexus/internal/option"
)

// The templates of values from the environment, sensitive variables and
// inputs are option's (Template), so that a component owning a config
// block can hold its values' templates as a server does.
type (
	Ref      = option.Ref
	Part     = option.Part
	Template = option.Template
)

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
			tmpl = tmpl.Add(Part{Text: lit})
			rest = rest[i+2:]
			continue
		}
		j := strings.IndexByte(rest[i:], '}')
		if j < 0 {
			break // an unterminated ${ is literal text, as in every client
		}
		lit, expr := rest[:i], rest[i+2:i+j]
		val.WriteString(lit)
		tmpl = tmpl.Add(Part{Text: lit})
		rest = rest[i+j+1:]

		v, ref, err := x.resolve(expr)
		if err != nil {
			return "", nil, err
		}
		val.WriteString(v)
		if ref != nil {
			refs = true
			tmpl = tmpl.Add(Part{Ref: ref})
		} else {
			tmpl = tmpl.Add(Part{Text: v})
		}
	}
	val.WriteString(rest)
	tmpl = tmpl.Add(Part{Text: rest})
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
