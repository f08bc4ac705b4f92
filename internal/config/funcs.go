package config

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"sync"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2/ext/tryfunc"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"
)

// functions is the go-cty standard library under the names Terraform and
// Packer users know, plus try and can. env and file are added per file.
// setproduct is left out: a few short lists make it allocate billions of
// values, and a config file must not be able to exhaust memory that way;
// the others are limited (limits.go).
func functions() map[string]function.Function { return maps.Clone(stdFuncs()) }

var stdFuncs = sync.OnceValue(func() map[string]function.Function {
	fs := map[string]function.Function{
		"abs":             stdlib.AbsoluteFunc,
		"ceil":            stdlib.CeilFunc,
		"chomp":           stdlib.ChompFunc,
		"chunklist":       stdlib.ChunklistFunc,
		"coalesce":        stdlib.CoalesceFunc,
		"coalescelist":    stdlib.CoalesceListFunc,
		"compact":         stdlib.CompactFunc,
		"concat":          stdlib.ConcatFunc,
		"contains":        stdlib.ContainsFunc,
		"csvdecode":       stdlib.CSVDecodeFunc,
		"distinct":        stdlib.DistinctFunc,
		"element":         stdlib.ElementFunc,
		"flatten":         stdlib.FlattenFunc,
		"floor":           stdlib.FloorFunc,
		"format":          stdlib.FormatFunc,
		"formatdate":      stdlib.FormatDateFunc,
		"formatlist":      stdlib.FormatListFunc,
		"indent":          stdlib.IndentFunc,
		"join":            stdlib.JoinFunc,
		"jsondecode":      stdlib.JSONDecodeFunc,
		"jsonencode":      stdlib.JSONEncodeFunc,
		"keys":            stdlib.KeysFunc,
		"length":          stdlib.LengthFunc,
		"log":             stdlib.LogFunc,
		"lookup":          stdlib.LookupFunc,
		"lower":           stdlib.LowerFunc,
		"max":             stdlib.MaxFunc,
		"merge":           stdlib.MergeFunc,
		"min":             stdlib.MinFunc,
		"parseint":        stdlib.ParseIntFunc,
		"pow":             stdlib.PowFunc,
		"range":           stdlib.RangeFunc,
		"regex":           stdlib.RegexFunc,
		"regexall":        stdlib.RegexAllFunc,
		"regex_replace":   stdlib.RegexReplaceFunc,
		"replace":         stdlib.ReplaceFunc,
		"reverse":         stdlib.ReverseListFunc,
		"setintersection": stdlib.SetIntersectionFunc,
		"setsubtract":     stdlib.SetSubtractFunc,
		"setunion":        stdlib.SetUnionFunc,
		"signum":          stdlib.SignumFunc,
		"slice":           stdlib.SliceFunc,
		"sort":            stdlib.SortFunc,
		"split":           stdlib.SplitFunc,
		"strrev":          stdlib.ReverseFunc,
		"substr":          stdlib.SubstrFunc,
		"timeadd":         stdlib.TimeAddFunc,
		"title":           stdlib.TitleFunc,
		"tobool":          stdlib.MakeToFunc(cty.Bool),
		"tolist":          stdlib.MakeToFunc(cty.List(cty.DynamicPseudoType)),
		"tomap":           stdlib.MakeToFunc(cty.Map(cty.DynamicPseudoType)),
		"tonumber":        stdlib.MakeToFunc(cty.Number),
		"toset":           stdlib.MakeToFunc(cty.Set(cty.DynamicPseudoType)),
		"tostring":        stdlib.MakeToFunc(cty.String),
		"trim":            stdlib.TrimFunc,
		"trimprefix":      stdlib.TrimPrefixFunc,
		"trimspace":       stdlib.TrimSpaceFunc,
		"trimsuffix":      stdlib.TrimSuffixFunc,
		"upper":           stdlib.UpperFunc,
		"values":          stdlib.ValuesFunc,
		"zipmap":          stdlib.ZipmapFunc,
		"try":             tryfunc.TryFunc,
		"can":             tryfunc.CanFunc,
	}
	for name, f := range fs {
		if name != "try" && name != "can" { // they return their argument's value
			fs[name] = limited(name, f)
		}
	}
	return fs
})

// envFunc is env(NAME) or env(NAME, default). Its value is a secret: it is
// marked, and in the template pass it is a sentinel that compiles to
// ${NAME} (or ${NAME:-default}).
func (h *hclFile) envFunc(template bool) function.Function {
	return function.New(&function.Spec{
		Description: "The value of an environment variable, or the default when it is unset.",
		Params:      []function.Parameter{{Name: "name", Type: cty.String}},
		VarParam:    &function.Parameter{Name: "default", Type: cty.String},
		Type:        function.StaticReturnType(cty.String),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			name := args[0].AsString()
			if !envName.MatchString(name) {
				return cty.NilVal, function.NewArgErrorf(0, "%q is not an environment variable name", name)
			}
			if len(args) > 2 {
				return cty.NilVal, function.NewArgErrorf(2, "env takes a name and at most one default")
			}
			def, hasDef := "", len(args) == 2
			if hasDef {
				def = args[1].AsString()
			}
			v, ok := h.ld.lookup(name)
			switch {
			case ok:
			case hasDef:
				v = def
			case h.ld.opts.AllowUnset:
				v = ""
				if !template && !h.unsetWarned[name] {
					h.unsetWarned[name] = true
					h.warns = append(h.warns, Warning{Source: h.src, Message: fmt.Sprintf("env(%q): %s is not set in this environment", name, name)})
				}
			case h.inDefault:
				// A variable's default: needed only if nothing else sets
				// the variable, which variables() then reports.
				h.unsetInDefault = append(h.unsetInDefault, name)
				return cty.UnknownVal(cty.String).Mark(secretMark{}), nil
			default:
				return cty.NilVal, fmt.Errorf("environment variable %s is not set; export %s=... or give a default: env(%q, \"value\")", name, name, name)
			}
			s := sentinel(name, def, hasDef)
			h.known[s] = v
			if template {
				return cty.StringVal(s).Mark(secretMark{}), nil
			}
			return cty.StringVal(v).Mark(secretMark{}), nil
		},
	})
}

// fileFunc is file(path): a UTF-8 file's content, the path relative to
// the config file's directory.
func (h *hclFile) fileFunc() function.Function {
	return function.New(&function.Spec{
		Description: "The content of a file, relative to this config file's directory.",
		Params:      []function.Parameter{{Name: "path", Type: cty.String}},
		Type:        function.StaticReturnType(cty.String),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			name := args[0].AsString()
			p, err := h.ld.confined(name, h.dir, h.src.Layer)
			if err != nil {
				return cty.NilVal, err
			}
			data, err := readLimited(p)
			if err != nil {
				return cty.NilVal, fmt.Errorf("cannot read %s: %v (a relative path starts at this config file's directory)", name, unwrapPathError(err))
			}
			if !utf8.Valid(data) {
				return cty.NilVal, fmt.Errorf("%s is not UTF-8 text", name)
			}
			return cty.StringVal(string(data)), nil
		},
	})
}

// unwrapPathError drops the path an *fs.PathError repeats.
func unwrapPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
