package config

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"

	"github.com/nexus-mcp/nexus/internal/auth"
	"github.com/nexus-mcp/nexus/internal/diag"
	"github.com/nexus-mcp/nexus/internal/option"
	httptransport "github.com/nexus-mcp/nexus/internal/transport/http"
	"github.com/nexus-mcp/nexus/internal/transport/stdio"
)

// The transports own their options (option.Table): this file is where the
// config formats meet the tables. Each decoder reads a transport's options
// through a Value over its own helpers, so messages and positions stay the
// format's; nexus.hcl, nexus JSON and the client formats write them
// through a Writer, so values from the environment stay templates.

var (
	httpOptions  = httptransport.OptionTable
	stdioOptions = stdio.OptionTable
	oauthOptions = auth.OptionTable
)

// hclValue is an attribute of a nexus.hcl block.
type hclValue struct {
	h    *hclFile
	a    *hcl.Attribute
	refs map[string]Template
	who  string // the server
	subj string // what warnings are about: `agent "ci"`
	in   string // the block the attribute is in, for messages: "oauth"
	ex   string // the block's example (option.Block's HCLExample), or ""

	// A nested row's value is its blocks (body.go), not an attribute.
	blocks []*hcl.Block
	shape  *option.Shape
}

// refsFor keeps templates only where the option asks for them (ptr != "").
func (v hclValue) refsFor(ptr string) map[string]Template {
	if ptr == "" {
		return nil
	}
	return v.refs
}

func (v hclValue) String(ptr string) (string, bool) { return v.h.str(v.a, v.refsFor(ptr), ptr) }
func (v hclValue) Strings(ptr string) ([]string, bool) {
	return v.h.strs(v.a, v.refsFor(ptr), ptr)
}
func (v hclValue) Map(ptr string) (map[string]string, bool) { return v.h.strMap(v.a, v.refs, ptr) }
func (v hclValue) Int(lo int) (int, bool)                   { return v.h.integer(v.a, lo) }
func (v hclValue) Duration() (time.Duration, bool)          { return v.h.duration(v.a) }
func (v hclValue) Bool() (bool, bool)                       { return v.h.boolean(v.a) }
func (v hclValue) Path(string) (string, bool)               { return v.h.path(v.a) }
func (v hclValue) Choice(allowed []string) (string, bool) {
	s, ok := v.h.str(v.a, nil, "")
	return choice(s, ok, strings.TrimSpace(v.in+" "+v.a.Name), allowed, v.Fail)
}
func (v hclValue) Fail(problem, fix string) {
	v.h.errRange(v.a.Expr.Range(), v.who, problem, fixes(fix)...)
}
func (v hclValue) FailExample(problem string) { v.Fail(problem, v.ex) }
func (v hclValue) EnvFile(p string) (map[string]string, bool) {
	// The path as written decides what confinement allows.
	raw, _ := v.h.str(v.a, nil, "")
	if _, err := v.h.ld.confined(raw, v.h.dir, v.h.src.Layer); err != nil {
		v.Fail("env_file "+err.Error(), "")
		return nil, false
	}
	env, bad := v.h.ld.envFile(p)
	if bad != "" {
		v.Fail(bad, "Create the file, or fix the path (relative paths start at this file's directory).")
		return nil, false
	}
	return env, true
}

// jsonValue is a member of a JSON server entry.
type jsonValue struct {
	d    *dec
	v    *jval
	name string
	ex   string // the block's example (option.Block's JSONExample), or ""
	// shape is a nested row's (body.go), and need the fix of a block of
	// it that lacks a required member: the row's example.
	shape *option.Shape
	need  string
	// example is the row's Example, shown when the value is not even of
	// the row's kind; "" for the generic one.
	example string
}

func (v jsonValue) String(ptr string) (string, bool)    { return v.d.str(v.v, v.name, ptr) }
func (v jsonValue) Strings(ptr string) ([]string, bool) { return v.d.strs(v.v, v.name, ptr) }
func (v jsonValue) Map(ptr string) (map[string]string, bool) {
	if v.v.kind != '{' && v.example != "" {
		v.d.typeErr(v.v, v.name, "an object of strings", v.example)
		return nil, false
	}
	return v.d.strMap(v.v, v.name, ptr)
}
func (v jsonValue) Int(lo int) (int, bool)          { return v.d.integer(v.v, v.name, lo) }
func (v jsonValue) Duration() (time.Duration, bool) { return v.d.duration(v.v, v.name) }
func (v jsonValue) Bool() (bool, bool)              { return v.d.boolean(v.v, v.name) }
func (v jsonValue) Path(ptr string) (string, bool) {
	p, ok := v.d.str(v.v, v.name, ptr)
	if !ok {
		return "", false
	}
	return v.d.j.path(v.d, v.v, v.name, p)
}
func (v jsonValue) Fail(problem, fix string)   { v.d.errAt(v.v, problem, fixes(fix)...) }
func (v jsonValue) FailExample(problem string) { v.Fail(problem, v.ex) }
func (v jsonValue) Choice(allowed []string) (string, bool) {
	s, ok := v.d.str(v.v, v.name, "")
	return choice(s, ok, v.name, allowed, v.Fail)
}
func (v jsonValue) EnvFile(p string) (map[string]string, bool) {
	raw, _ := v.d.str(v.v, v.name, "")
	if _, err := v.d.j.ld.confined(raw, v.d.j.dir, v.d.j.src.Layer); err != nil {
		v.Fail("envFile "+err.Error(), "")
		return nil, false
	}
	env, bad := v.d.j.ld.envFile(p)
	if bad != "" {
		v.Fail(bad, "Create the file, or fix the path (relative paths start at the config file's directory).")
		return nil, false
	}
	return env, true
}

// choice is Value.Choice for both formats: s, read by the format (ok),
// checked against allowed, field naming it in the message.
func choice(s string, ok bool, field string, allowed []string, fail func(problem, fix string)) (string, bool) {
	if !ok {
		return "", false
	}
	if p := oneOf(field, s, allowed); p != "" {
		fail(p, "")
		return s, false
	}
	return s, true
}

// fixes is a Fail's fix as a report's list: none when it is "".
func fixes(fix string) []string {
	if fix == "" {
		return nil
	}
	return []string{fix}
}

// hclExpr is an HCL expression already written (a template, a map).
type hclExpr string

// hclWriter writes a server's values as nexus.hcl expressions.
type hclWriter struct{ s *Server }

func (w hclWriter) String(ptr, v string) any                { return hclExpr(w.s.valueHCL(ptr, v)) }
func (w hclWriter) Map(ptr string, m map[string]string) any { return hclExpr(w.s.mapHCL(ptr, m)) }
func (w hclWriter) Path(_, v string) any                    { return v }
func (w hclWriter) Secret(ptr, _, v string) any             { return w.String(ptr, v) }
func (w hclWriter) Object(_ string, m map[string]any) any {
	b, _ := json.Marshal(m) // a JSON object is an HCL object expression
	return hclExpr(strings.ReplaceAll(string(b), "${", "$${"))
}

// hclOptions writes the options of table set on o as lines of a block.
func hclOptions[T any](b *strings.Builder, s *Server, table option.Table[T], o *T) {
	for _, opt := range table {
		v := opt.Out(o, hclWriter{s})
		if v == nil {
			continue
		}
		var expr string
		switch v := v.(type) {
		case hclExpr:
			expr = string(v)
		case string:
			expr = hclString(v)
		case []string:
			expr = hclStrings(v)
		default: // numbers and booleans
			expr = fmt.Sprint(v)
		}
		fmt.Fprintf(b, "    %s = %s\n", opt.HCL, expr)
	}
}

// jsonWriter writes a server's or block's values in the compile format,
// templates in its syntax.
type jsonWriter struct {
	c     *compiler
	refs  map[string]Template // the server's or block's
	src   diag.Source         // where the values are written
	block string              // the block's name, for Secret (which no server option uses)
	subj  string              // what Secret's warning is about, when not the block: `agent "ci"`
}

func (w jsonWriter) String(ptr, v string) any { return w.c.str(w.refs, ptr, v) }
func (w jsonWriter) Path(ptr, v string) any   { return w.c.str(w.refs, ptr, v) }
func (w jsonWriter) Map(ptr string, m map[string]string) any {
	return w.c.strMap(w.refs, ptr, m)
}
func (w jsonWriter) Object(ptr string, m map[string]any) any { return w.c.anyValue(w.refs, ptr, m) }
func (w jsonWriter) Secret(ptr, what, v string) any {
	if _, ref := w.refs[ptr]; ref || w.c.showSecrets {
		return w.c.str(w.refs, ptr, v)
	}
	field := strings.TrimPrefix(ptr, "/")
	subj, msg := "the "+w.block+" block", "the "+w.block+" "+field+" written in the config file is left out; put it in a sensitive variable ("+
		field+" = var."+w.block+"_"+field+") so it compiles to a ${NAME} reference"
	if list, _, isItem := strings.Cut(field, "/"); isItem { // an element of a list: tokens/0
		msg = "a " + what + " written in the config file is left out; put it in a sensitive variable (" + list + " = [var.NAME]) so it compiles to a ${NAME} reference"
	}
	if w.subj != "" {
		subj = w.subj
	}
	w.c.warns = append(w.c.warns, Warning{Source: w.src, Subject: subj, Message: msg})
	return "[a " + what + " written in " + w.src.File + ": move it to a sensitive variable]"
}

// jsonOptions puts the options of table set on o into the server entry e:
// in nexus JSON all of them, in a client's format those it carries, with a
// warning for each one it cannot.
func jsonOptions[T any](c *compiler, e map[string]any, s *Server, table option.Table[T], o *T) {
	nexus := c.format == FormatNexusJSON
	warned := map[string]bool{} // two options may share a warning
	for _, opt := range table {
		if !nexus && opt.Lost != nil {
			if w := opt.Lost(o, c.format); w != "" {
				if !warned[w] {
					warned[w] = true
					c.warn(s, "%s", w)
				}
				continue
			}
		}
		if v := opt.Out(o, jsonWriter{c: c, refs: s.Refs, src: s.Source}); v != nil {
			e[opt.JSON] = v
		}
	}
}
