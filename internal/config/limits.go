package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/nexus-mcp/nexus/internal/wire"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
)

// What one function call in a config may make. The standard library's
// functions turn a few bytes of arguments into as much memory as they are
// told to (indent(1000000000, "x"), format("%-99999999s", ""),
// range(1e9)), and a config file is input like any other: a call that
// would go past these is refused at its line, before it allocates.
const (
	maxValueBytes  = 1 << 20 // a string a function returns
	maxElements    = 100_000 // the elements of a list, set, map or tuple
	maxFormatWidth = 10_000  // a width or precision in a format verb
)

// amplifiers check, before the call, the arguments of the functions whose
// result can be far larger than their arguments; every function's result
// is checked after (limited).
var amplifiers = map[string]func(args []cty.Value) error{
	"range":         rangeCount,
	"indent":        indentSize,
	"format":        formatWidths,
	"formatlist":    formatWidths,
	"replace":       func(args []cty.Value) error { return replaceSize(args, false) },
	"regex_replace": func(args []cty.Value) error { return replaceSize(args, true) },
}

// limited is f with the limits above.
func limited(name string, f function.Function) function.Function {
	pre := amplifiers[name]
	return function.New(&function.Spec{
		Description: f.Description(),
		Params:      f.Params(),
		VarParam:    f.VarParam(),
		Type:        func(args []cty.Value) (cty.Type, error) { return f.ReturnTypeForValues(args) },
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			if pre != nil {
				if err := pre(args); err != nil {
					return cty.NilVal, err
				}
			}
			v, err := f.Call(args)
			if err != nil {
				return v, err
			}
			return v, checkSize(v)
		},
	})
}

func checkSize(v cty.Value) error {
	v, _ = v.Unmark()
	if !v.IsKnown() || v.IsNull() {
		return nil
	}
	switch ty := v.Type(); {
	case ty == cty.String:
		if n := len(v.AsString()); n > maxValueBytes {
			return tooBig(fmt.Sprintf("a string of %d bytes", n))
		}
	case ty.IsListType() || ty.IsSetType() || ty.IsMapType() || ty.IsTupleType() || ty.IsObjectType():
		if n := v.LengthInt(); n > maxElements {
			return tooBig(fmt.Sprintf("%d elements", n))
		}
	}
	return nil
}

func tooBig(what string) error {
	return fmt.Errorf("the result would be %s, over what a config function may make (%d MiB of text, %d elements); its arguments are probably not what was meant", what, maxValueBytes>>20, maxElements)
}

// known returns args unmarked, and false if one is unknown or null.
func known(args []cty.Value) ([]cty.Value, bool) {
	out := make([]cty.Value, len(args))
	for i, a := range args {
		a, _ = a.Unmark()
		if !a.IsKnown() || a.IsNull() {
			return nil, false
		}
		out[i] = a
	}
	return out, true
}

func float(v cty.Value) float64 {
	f, _ := v.AsBigFloat().Float64()
	return f
}

// rangeCount: range(end), range(start, end) or range(start, end, step).
func rangeCount(args []cty.Value) error {
	args, ok := known(args)
	if !ok || len(args) == 0 || len(args) > 3 {
		return nil // the function says what is wrong
	}
	for _, a := range args {
		if a.Type() != cty.Number {
			return nil
		}
	}
	start, end, step := 0.0, float(args[0]), 1.0
	if len(args) > 1 {
		start, end = float(args[0]), float(args[1])
	}
	if len(args) > 2 {
		step = float(args[2])
	}
	if step == 0 {
		return nil
	}
	if n := (end - start) / step; n > maxElements {
		return tooBig(fmt.Sprintf("%.0f numbers", n))
	}
	return nil
}

// indentSize: indent(spaces, string) adds spaces to every line but the
// first.
func indentSize(args []cty.Value) error {
	args, ok := known(args)
	if !ok || len(args) != 2 || args[0].Type() != cty.Number || args[1].Type() != cty.String {
		return nil
	}
	s := args[1].AsString()
	lines := float64(strings.Count(s, "\n"))
	if n := float64(len(s)) + float(args[0])*lines; n > maxValueBytes {
		return tooBig(fmt.Sprintf("a string of %.0f bytes", n))
	}
	if float(args[0]) > maxValueBytes {
		return tooBig(fmt.Sprintf("lines indented by %.0f spaces", float(args[0])))
	}
	return nil
}

// formatWidths refuses a width or precision over maxFormatWidth in
// format's and formatlist's verbs: each pads its value to that size.
func formatWidths(args []cty.Value) error {
	if len(args) == 0 {
		return nil
	}
	f, _ := args[0].Unmark()
	if !f.IsKnown() || f.IsNull() || f.Type() != cty.String {
		return nil
	}
	s := f.AsString()
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			continue
		}
		for i++; i < len(s) && !isVerb(s[i]); i++ {
			if s[i] < '0' || s[i] > '9' {
				continue
			}
			j := i
			for j < len(s) && s[j] >= '0' && s[j] <= '9' {
				j++
			}
			n, _ := new(big.Int).SetString(s[i:j], 10)
			if n != nil && n.Cmp(big.NewInt(maxFormatWidth)) > 0 {
				return fmt.Errorf("the format %q pads a value to %s characters; a width or precision in a config is limited to %d", s, s[i:j], maxFormatWidth)
			}
			i = j - 1
		}
	}
	return nil
}

// isVerb reports whether c ends a format verb (a letter, or %% itself).
func isVerb(c byte) bool { return c == '%' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') }

// replaceSize bounds replace(string, substring, replacement) and
// regex_replace(string, pattern, replacement) by the most matches the
// substring or pattern could have.
func replaceSize(args []cty.Value, regex bool) error {
	args, ok := known(args)
	if !ok || len(args) != 3 {
		return nil
	}
	for _, a := range args {
		if a.Type() != cty.String {
			return nil
		}
	}
	s, sub, repl := args[0].AsString(), args[1].AsString(), args[2].AsString()
	matches := len(s) + 1 // a pattern (or "") may match anywhere
	if !regex && !(len(sub) > 1 && sub[0] == '/' && sub[len(sub)-1] == '/') && sub != "" {
		matches = strings.Count(s, sub)
	}
	if n := float64(len(s)) + float64(matches)*float64(len(repl)); n > maxValueBytes {
		return tooBig(fmt.Sprintf("up to a string of %.0f bytes", n))
	}
	return nil
}

// maxForIterations bounds the elements the for expressions of one file
// go over, together: one for expression nested in another runs once for
// each element of the outer one, so three of them over range(1000)
// would make a billion values however each function call is limited.
// Going over this many takes HCL a few tenths of a second.
const maxForIterations = 100_000

// forBudget is what a file's for expressions may still go over; spent,
// once it ran out and said so.
type forBudget struct {
	left  int
	spent bool
}

// forCounter is the function countFors puts around each for expression's
// collection; its name is what the error of a spent budget shows (a
// config that calls it only has its argument counted).
const forCounter = "for"

// countFors makes every for expression in n count the elements it goes
// over against the budget of the forCounter function in the context it
// is evaluated in (forFunc): its collection becomes a call of that
// function, an ordinary node of the syntax tree, so the dependency order
// of locals and everything else that walks the tree still sees what the
// collection refers to. The tree is changed in place, before anything is
// evaluated. A JSON file's template strings are parsed only when they are
// evaluated: countJSONFors does the same to their text.
func countFors(n hclsyntax.Node) {
	uncounted(n, func(fe *hclsyntax.ForExpr) {
		rng := fe.CollExpr.Range()
		fe.CollExpr = &hclsyntax.FunctionCallExpr{
			Name: forCounter, Args: []hclsyntax.Expression{fe.CollExpr},
			NameRange: rng, OpenParenRange: rng, CloseParenRange: rng,
		}
	})
}

// uncounted calls fn for each for expression in n whose collection is not
// counted yet.
func uncounted(n hclsyntax.Node, fn func(*hclsyntax.ForExpr)) {
	hclsyntax.VisitAll(n, func(n hclsyntax.Node) hcl.Diagnostics {
		fe, ok := n.(*hclsyntax.ForExpr)
		if !ok {
			return nil
		}
		if call, done := fe.CollExpr.(*hclsyntax.FunctionCallExpr); done && call.Name == forCounter {
			return nil
		}
		fn(fe)
		return nil
	})
}

// forFunc returns its argument, counting its elements against a budget
// of maxForIterations of its own: one for each evaluation context.
func forFunc() function.Function {
	b := &forBudget{left: maxForIterations}
	return function.New(&function.Spec{
		Description: "Counts the elements a for expression goes over.",
		Params: []function.Parameter{{Name: "collection", Type: cty.DynamicPseudoType,
			AllowNull: true, AllowUnknown: true, AllowDynamicType: true, AllowMarked: true}},
		Type: func(args []cty.Value) (cty.Type, error) { return args[0].Type(), nil },
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			u, _ := args[0].Unmark()
			if b.spent {
				// Said once; the for expressions still running get nothing
				// to go over, so they end at once.
				return cty.UnknownVal(u.Type()), nil
			}
			if u.IsKnown() && !u.IsNull() && u.CanIterateElements() {
				if b.left -= u.LengthInt(); b.left < 0 {
					b.spent = true
					return cty.NilVal, fmt.Errorf("the for expressions of this file would go over more than %d elements in all (one nested in another runs once for each element of the outer one); make the collections smaller or the nesting shallower", maxForIterations)
				}
			}
			return args[0], nil
		},
	})
}

// countJSONFors does for a JSON file what countFors does for native
// syntax. hcl/json parses a template string only when it evaluates it, so
// here the source text changes instead: in each string value holding a
// template with a for expression, the collection is wrapped in a call of
// forCounter, written into the string as it stands (its escapes kept).
// Object keys are left alone (they are names, not templates), and so is
// everything that does not parse (hcl/json reports it). What was inserted
// is returned too, so that positions can be given back in the file's own
// columns (unshift): a JSON string is on one line, and so is each
// insertion.
func countJSONFors(data []byte) ([]byte, []insertion) {
	if !bytes.Contains(data, []byte("for")) {
		return data, nil
	}
	var (
		out  []byte // nil while nothing changed
		ins  []insertion
		last int
		line = 1
	)
	for i := 0; i < len(data); i++ {
		switch data[i] {
		case '\n':
			line++
			continue
		case '"':
		default:
			continue
		}
		start := i
		end, _, err := wire.StringEnd(data, start)
		if err != nil {
			break // unterminated: hcl/json says so
		}
		i = end - 1
		lit := data[start:end]
		if !bytes.Contains(lit, []byte("for")) || !(bytes.Contains(lit, []byte("${")) || bytes.Contains(lit, []byte("%{"))) || isJSONKey(data, end) {
			continue
		}
		edits := forEdits(lit)
		if len(edits) == 0 {
			continue
		}
		out = append(out, data[last:start]...)
		at := 0
		for _, e := range edits {
			out = append(out, lit[at:e.at]...)
			ins = append(ins, insertion{line: line, at: len(out), n: len(e.text)})
			out = append(out, e.text...)
			at = e.at
		}
		out = append(out, lit[at:]...)
		last = end
	}
	if out == nil {
		return data, nil
	}
	return append(out, data[last:]...), ins
}

// insertion is text countJSONFors put into a file: n bytes (ASCII, one
// column each) at byte offset at of the new text, on line.
type insertion struct{ line, at, n int }

// unshift turns a position in the text countJSONFors made into one in
// the file as written; inside an insertion, where it starts.
func unshift(p hcl.Pos, ins []insertion) hcl.Pos {
	b := p.Byte
	for _, in := range ins {
		if in.at >= b {
			break
		}
		d := min(in.n, b-in.at)
		p.Byte -= d
		if in.line == p.Line {
			p.Column -= d
		}
	}
	return p
}

// edit is text to insert before lit[at].
type edit struct {
	at   int
	text string
}

// forEdits returns where, in the JSON string literal lit (quotes
// included), forCounter's call goes around each for expression's
// collection, in order; none when the string holds no for expression or
// does not parse.
func forEdits(lit []byte) []edit {
	str, raw, ok := decodeJSONString(lit)
	if !ok {
		return nil
	}
	expr, diags := hclsyntax.ParseTemplate([]byte(str), "", hcl.InitialPos)
	if diags.HasErrors() {
		return nil
	}
	var edits []edit
	uncounted(expr, func(fe *hclsyntax.ForExpr) {
		r := fe.CollExpr.Range()
		if r.Start.Byte >= 0 && r.End.Byte <= len(str) && r.Start.Byte <= r.End.Byte {
			edits = append(edits, edit{raw[r.Start.Byte], forCounter + "("}, edit{raw[r.End.Byte], ")"})
		}
	})
	slices.SortStableFunc(edits, func(a, b edit) int { return a.at - b.at })
	return edits
}

// decodeJSONString decodes the JSON string literal lit (quotes included)
// and says, for each byte of the result and for its end, where in lit it
// came from; false if lit is not a valid string literal.
func decodeJSONString(lit []byte) (string, []int, bool) {
	var want string
	if json.Unmarshal(lit, &want) != nil {
		return "", nil, false
	}
	out := make([]byte, 0, len(lit))
	raw := make([]int, 0, len(lit)+1)
	for i := 1; i < len(lit)-1; {
		c := lit[i]
		if c != '\\' {
			out = append(out, c)
			raw = append(raw, i)
			i++
			continue
		}
		switch e := lit[i+1]; e {
		case 'u':
			r := decodeHex(lit[i+2 : i+6])
			n := 6
			if utf16.IsSurrogate(r) && i+12 <= len(lit)-1 && lit[i+6] == '\\' && lit[i+7] == 'u' {
				if pair := utf16.DecodeRune(r, decodeHex(lit[i+8:i+12])); pair != utf8.RuneError {
					r, n = pair, 12
				}
			}
			if utf16.IsSurrogate(r) {
				r = utf8.RuneError
			}
			for range utf8.RuneLen(r) {
				raw = append(raw, i)
			}
			out = utf8.AppendRune(out, r)
			i += n
		default:
			out = append(out, unescape(e))
			raw = append(raw, i)
			i += 2
		}
	}
	raw = append(raw, len(lit)-1)
	if string(out) != want {
		return "", nil, false // a case decoded otherwise: leave the string alone
	}
	return want, raw, true
}

// unescape is the byte a one-letter JSON escape stands for.
func unescape(e byte) byte {
	switch e {
	case 'b':
		return '\b'
	case 'f':
		return '\f'
	case 'n':
		return '\n'
	case 'r':
		return '\r'
	case 't':
		return '\t'
	}
	return e // '"', '\\', '/'
}

func decodeHex(h []byte) rune {
	var r rune
	for _, c := range h {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		}
	}
	return r
}

// isJSONKey reports whether the string literal ending before data[end]
// is an object key: a colon follows it.
func isJSONKey(data []byte, end int) bool {
	for _, c := range data[end:] {
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		}
		return c == ':'
	}
	return false
}
