package config

import (
	"fmt"
	"math/big"
	"strings"

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
