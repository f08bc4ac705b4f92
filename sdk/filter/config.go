package filter

import (
	"encoding/json"
	"errors"
	"reflect"
	"strconv"
	"strings"

	"github.com/nexus-mcp/nexus/internal/wire"
)

// decodeConfig decodes the JSON document raw into the value v points to,
// as encoding/json would with DisallowUnknownFields, for the types a
// config is made of: structs (json tags, names matched exactly or else
// case-insensitively), strings, bools, numbers, slices, arrays, maps with
// string keys, pointers, json.RawMessage and any. It is not encoding/json
// because that package, and the fmt it brings, make up a third of a Go
// filter's .wasm: a module that big takes the host tens of milliseconds
// longer to load from the compilation cache, for a config decoded once
// per instance. TestDecodeConfig and FuzzDecodeConfig hold it to
// encoding/json.
func decodeConfig(raw []byte, v any) error { return decodeReflect(raw, v, false) }

// decodeReflect is decodeConfig; with ignoreUnknown, unknown fields are
// skipped, as encoding/json does by default.
func decodeReflect(raw []byte, v any, ignoreUnknown bool) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return errors.New("decodeConfig: not a pointer")
	}
	d := configDecoder{reader: reader{src: raw}, ignoreUnknown: ignoreUnknown}
	if err := d.value(rv.Elem(), 0); err != nil {
		return err
	}
	if d.ws(); d.pos != len(d.src) {
		return d.syntax("data after the JSON value")
	}
	return nil
}

type configDecoder struct {
	reader
	ignoreUnknown bool
}

var rawMessageType = reflect.TypeFor[json.RawMessage]()

func (d *configDecoder) syntax(msg string) error {
	return errors.New("invalid JSON at offset " + strconv.Itoa(d.pos) + ": " + msg)
}

func (d *configDecoder) mismatch(what string, t reflect.Type) error {
	return errors.New("cannot decode " + what + " into a value of type " + t.String())
}

// value decodes the next JSON value into v.
func (d *configDecoder) value(v reflect.Value, depth int) error {
	if depth > MaxDepth {
		return d.syntax("nested too deep")
	}
	c := d.peek()
	if v.Type() == rawMessageType {
		b, ok := d.raw()
		if !ok {
			return d.syntax("malformed value")
		}
		v.SetBytes(append([]byte(nil), b...))
		return nil
	}
	if c == 'n' {
		if !d.null() {
			return d.syntax("want null")
		}
		switch v.Kind() {
		case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Interface:
			v.SetZero()
		}
		return nil
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		return d.value(v.Elem(), depth+1)
	case reflect.Interface:
		if v.NumMethod() != 0 {
			return d.mismatch("a value", v.Type())
		}
		x, err := d.generic(depth)
		if err != nil {
			return err
		}
		if x == nil {
			v.SetZero()
		} else {
			v.Set(reflect.ValueOf(x))
		}
		return nil
	}
	switch {
	case c == '{':
		return d.object(v, depth)
	case c == '[':
		return d.array(v, depth)
	case c == '"':
		s, ok := d.str()
		if !ok {
			return d.syntax("malformed string")
		}
		if v.Kind() != reflect.String {
			return d.mismatch("a string", v.Type())
		}
		v.SetString(s)
		return nil
	case c == 't' || c == 'f':
		b, ok := d.boolPtr()
		if !ok || b == nil {
			return d.syntax("want true or false")
		}
		if v.Kind() != reflect.Bool {
			return d.mismatch("a bool", v.Type())
		}
		v.SetBool(*b)
		return nil
	case c == '-' || c >= '0' && c <= '9':
		return d.number(v)
	}
	return d.syntax("unexpected character " + strconv.QuoteRune(rune(c)))
}

func (d *configDecoder) number(v reflect.Value) error {
	start := d.pos
	end, err := wire.SkipValue(d.src, d.pos, 0) // d.src[d.pos] starts a number
	if err != nil {
		return d.syntax("malformed number")
	}
	d.pos = end
	lit := string(d.src[start:d.pos])
	switch v.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, err := strconv.ParseInt(lit, 10, 64)
		if err != nil || v.OverflowInt(n) {
			return d.mismatch("the number "+lit, v.Type())
		}
		v.SetInt(n)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		n, err := strconv.ParseUint(lit, 10, 64)
		if err != nil || v.OverflowUint(n) {
			return d.mismatch("the number "+lit, v.Type())
		}
		v.SetUint(n)
	case reflect.Float32, reflect.Float64:
		f, err := strconv.ParseFloat(lit, v.Type().Bits())
		if err != nil || v.OverflowFloat(f) {
			return d.mismatch("the number "+lit, v.Type())
		}
		v.SetFloat(f)
	default:
		return d.mismatch("a number", v.Type())
	}
	return nil
}

// members reads an object, calling fn with each key and the reader
// before its value.
func (d *configDecoder) members(fn func(key string) error) error {
	d.pos++ // {
	if d.eat('}') {
		return nil
	}
	for {
		if d.peek() != '"' {
			return d.syntax("want an object key")
		}
		key, ok := d.str()
		if !ok {
			return d.syntax("malformed string")
		}
		if !d.eat(':') {
			return d.syntax("want ':' after an object key")
		}
		if err := fn(key); err != nil {
			return err
		}
		if d.eat('}') {
			return nil
		}
		if !d.eat(',') {
			return d.syntax("want ',' or '}' in an object")
		}
	}
}

func (d *configDecoder) object(v reflect.Value, depth int) error {
	switch v.Kind() {
	case reflect.Map:
		t := v.Type()
		if t.Key().Kind() != reflect.String {
			return d.mismatch("an object", t)
		}
		if v.IsNil() {
			v.Set(reflect.MakeMap(t))
		}
		return d.members(func(key string) error {
			e := reflect.New(t.Elem()).Elem()
			if err := d.value(e, depth+1); err != nil {
				return err
			}
			k := reflect.New(t.Key()).Elem()
			k.SetString(key)
			v.SetMapIndex(k, e)
			return nil
		})
	case reflect.Struct:
		fields := structFields(v.Type())
		return d.members(func(key string) error {
			f, ok := fields.find(key)
			if !ok {
				if d.ignoreUnknown {
					if _, ok := d.raw(); !ok {
						return d.syntax("malformed value")
					}
					return nil
				}
				return errors.New("unknown field " + strconv.Quote(key))
			}
			fv := v.Field(f.index)
			if f.unsupported != "" {
				return errors.New("field " + strconv.Quote(key) + ": " + f.unsupported)
			}
			return d.value(fv, depth+1)
		})
	}
	return d.mismatch("an object", v.Type())
}

func (d *configDecoder) array(v reflect.Value, depth int) error {
	t := v.Type()
	var elems []reflect.Value
	switch v.Kind() {
	case reflect.Slice, reflect.Array:
	default:
		return d.mismatch("an array", t)
	}
	d.pos++ // [
	if !d.eat(']') {
		for {
			e := reflect.New(t.Elem()).Elem()
			if err := d.value(e, depth+1); err != nil {
				return err
			}
			elems = append(elems, e)
			if d.eat(']') {
				break
			}
			if !d.eat(',') {
				return d.syntax("want ',' or ']' in an array")
			}
		}
	}
	if v.Kind() == reflect.Array {
		v.SetZero()
		for i := 0; i < len(elems) && i < v.Len(); i++ {
			v.Index(i).Set(elems[i])
		}
		return nil
	}
	s := reflect.MakeSlice(t, len(elems), len(elems))
	for i, e := range elems {
		s.Index(i).Set(e)
	}
	v.Set(s)
	return nil
}

// generic decodes a value into what encoding/json gives an any:
// map[string]any, []any, string, float64, bool or nil.
func (d *configDecoder) generic(depth int) (any, error) {
	if depth > MaxDepth {
		return nil, d.syntax("nested too deep")
	}
	switch c := d.peek(); {
	case c == '{':
		m := map[string]any{}
		err := d.members(func(key string) error {
			x, err := d.generic(depth + 1)
			m[key] = x
			return err
		})
		return m, err
	case c == '[':
		d.pos++
		s := []any{}
		if d.eat(']') {
			return s, nil
		}
		for {
			x, err := d.generic(depth + 1)
			if err != nil {
				return nil, err
			}
			s = append(s, x)
			if d.eat(']') {
				return s, nil
			}
			if !d.eat(',') {
				return nil, d.syntax("want ',' or ']' in an array")
			}
		}
	case c == 'n':
		if !d.null() {
			return nil, d.syntax("want null")
		}
		return nil, nil
	}
	var x any
	var f float64
	var s string
	var b bool
	var target reflect.Value
	switch c := d.peek(); {
	case c == '"':
		target = reflect.ValueOf(&s).Elem()
	case c == 't' || c == 'f':
		target = reflect.ValueOf(&b).Elem()
	default:
		target = reflect.ValueOf(&f).Elem()
	}
	if err := d.value(target, depth); err != nil {
		return nil, err
	}
	x = target.Interface()
	return x, nil
}

// configField is a struct field a config key may name.
type configField struct {
	name        string
	index       int
	unsupported string // why the field cannot be decoded, if it cannot
}

type configFields []configField

// find looks a key up as encoding/json does: the exact name first, then
// the first name equal to it without regard to case.
func (fs configFields) find(key string) (configField, bool) {
	for _, f := range fs {
		if f.name == key {
			return f, true
		}
	}
	for _, f := range fs {
		if strings.EqualFold(f.name, key) {
			return f, true
		}
	}
	return configField{}, false
}

func structFields(t reflect.Type) configFields {
	var fs configFields
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		tag := sf.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if sf.Anonymous {
			fs = append(fs, configField{name: sf.Name, index: i, unsupported: "embedded structs are not supported in a filter's config; name the field"})
			continue
		}
		if !sf.IsExported() {
			continue
		}
		if name == "" {
			name = sf.Name
		}
		f := configField{name: name, index: i}
		for _, o := range strings.Split(opts, ",") {
			if o == "string" {
				f.unsupported = "the ,string option is not supported in a filter's config"
			}
		}
		fs = append(fs, f)
	}
	return fs
}
