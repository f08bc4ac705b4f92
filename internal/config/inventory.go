package config

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// inventory lists what an untrusted config file would run and read, for
// the person deciding whether to trust it. It looks at syntax only: no
// function is called (file() and env() are shown as written), no variable
// is resolved and no env_file is read, so listing a hostile file is as safe
// as printing it.
func inventory(path string, data []byte) []string {
	var out []string
	name := strings.ToLower(path)
	if strings.HasSuffix(name, ".hcl") || (!strings.HasSuffix(name, ".json") && !looksJSON(data)) {
		out = hclInventory(path, data)
	} else {
		out = jsonInventory(data)
	}
	if len(out) > maxInventory {
		out = append(out[:maxInventory], fmt.Sprintf("… and %d more lines (read the file)", len(out)-maxInventory))
	}
	return out
}

// Bounds on the listing: it is for a person to read, and the file is hostile.
const (
	maxInventory = 100 // lines
	maxShown     = 300 // characters of one value
)

// runKeys are the settings that start a process, reach a URL or name a file
// read, in either syntax.
var runKeys = []string{"command", "args", "url", "path", "wasm", "env_file", "envFile", "data_file", "cwd"}

func isRunKey(k string) bool {
	for _, r := range runKeys {
		if r == k {
			return true
		}
	}
	return false
}

func looksJSON(data []byte) bool {
	t := strings.TrimLeft(string(data), " \t\r\n\ufeff")
	return t != "" && (t[0] == '{' || t[0] == '/')
}

func hclInventory(path string, data []byte) []string {
	f, diags := hclsyntax.ParseConfig(data, path, hcl.InitialPos)
	body, ok := f.Body.(*hclsyntax.Body)
	if !ok || body == nil {
		return []string{"(the file does not parse as HCL: " + firstDiag(diags) + "; read it)"}
	}
	var out []string
	if diags.HasErrors() {
		out = append(out, "(the file has syntax errors, so this list may be incomplete: "+firstDiag(diags)+")")
	}
	var walk func(b *hclsyntax.Body, where string)
	walk = func(b *hclsyntax.Body, where string) {
		var parts []string
		line := 0
		for _, k := range runKeys {
			a := b.Attributes[k]
			if a == nil {
				continue
			}
			if line == 0 {
				line = a.SrcRange.Start.Line
			}
			parts = append(parts, k+" = "+hclShow(a.Expr, data))
		}
		if len(parts) > 0 {
			if where == "" {
				where = "top level"
			}
			out = append(out, fmt.Sprintf("%s (line %d): %s", where, line, strings.Join(parts, ", ")))
		}
		for _, blk := range b.Blocks {
			w := blk.Type
			for _, l := range blk.Labels {
				w += " " + strconv.Quote(l)
			}
			if where != "" {
				w = where + " " + w
			}
			walk(blk.Body, w)
		}
	}
	walk(body, "")
	// file() anywhere, shown as written: its argument is never evaluated.
	hclsyntax.VisitAll(body, func(n hclsyntax.Node) hcl.Diagnostics {
		if c, ok := n.(*hclsyntax.FunctionCallExpr); ok && c.Name == "file" {
			out = append(out, fmt.Sprintf("reads (line %d): %s", c.Range().Start.Line, clip(string(c.Range().SliceBytes(data)))))
		}
		return nil
	})
	return out
}

// hclShow is an expression's value when it is a literal, else its text.
// Evaluating with no context cannot call a function or read a variable.
func hclShow(e hclsyntax.Expression, data []byte) string {
	if !literal(e, 0) {
		return clip(string(e.Range().SliceBytes(data)))
	}
	if v, diags := e.Value(nil); !diags.HasErrors() && v.IsWhollyKnown() && !v.IsNull() {
		if s, ok := ctyShow(v); ok {
			return clip(s)
		}
	}
	return clip(string(e.Range().SliceBytes(data)))
}

// literal says whether e is made of literals only (strings without
// interpolation, lists of them), so that evaluating it costs no more than
// its text: a for expression over literals could multiply.
func literal(e hclsyntax.Expression, depth int) bool {
	if depth > 8 {
		return false
	}
	switch x := e.(type) {
	case *hclsyntax.LiteralValueExpr:
		return true
	case *hclsyntax.TemplateExpr:
		return x.IsStringLiteral()
	case *hclsyntax.TupleConsExpr:
		for _, el := range x.Exprs {
			if !literal(el, depth+1) {
				return false
			}
		}
		return true
	}
	return false
}

func ctyShow(v cty.Value) (string, bool) {
	t := v.Type()
	switch {
	case t == cty.String:
		return strconv.Quote(v.AsString()), true
	case t.IsTupleType() || t.IsListType():
		var parts []string
		for it := v.ElementIterator(); it.Next(); {
			_, e := it.Element()
			s, ok := ctyShow(e)
			if !ok {
				return "", false
			}
			parts = append(parts, s)
		}
		return "[" + strings.Join(parts, ", ") + "]", true
	}
	return "", false
}

func firstDiag(d hcl.Diagnostics) string {
	for _, x := range d {
		if x.Severity == hcl.DiagError {
			return x.Error()
		}
	}
	return "unknown error"
}

// clip shortens one value for the listing, on one line.
func clip(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > maxShown {
		return string(r[:maxShown]) + "…"
	}
	return s
}

func jsonInventory(data []byte) []string {
	clean := stripJSONC([]byte(strings.TrimPrefix(string(data), "\ufeff")))
	if !json.Valid(clean) {
		return []string{"(the file is not valid JSON; read it)"}
	}
	var out []string
	var walk func(v *jval, where string, depth int)
	walk = func(v *jval, where string, depth int) {
		if v == nil || depth > 32 {
			return
		}
		switch v.kind {
		case '{':
			var parts []string
			for _, m := range v.obj {
				if isRunKey(m.key) {
					parts = append(parts, m.key+" = "+clip(jsonShow(m.val)))
				}
			}
			if len(parts) > 0 {
				out = append(out, fmt.Sprintf("%s: %s", strings.TrimPrefix(where, "."), strings.Join(parts, ", ")))
			}
			for _, m := range v.obj {
				walk(m.val, where+"."+m.key, depth+1)
			}
		case '[':
			for i, e := range v.arr {
				walk(e, fmt.Sprintf("%s[%d]", where, i), depth+1)
			}
		}
	}
	walk(parseJSON(clean), "", 0)
	return out
}

func jsonShow(v *jval) string {
	b, err := json.Marshal(v.toAny())
	if err != nil {
		return "?"
	}
	return string(b)
}
