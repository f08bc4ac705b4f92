package config

import (
	"encoding/json"
	"strings"

	"github.com/nexus-mcp/nexus/internal/wire"
)

// jval is a parsed JSON value that remembers where it was written, which
// encoding/json forgets; every diagnostic about a field points at it.
// Objects keep their members in file order, duplicates included, so that a
// server defined twice is caught rather than silently dropped.
type jval struct {
	kind byte // '{', '[', '"', '0' (number), 't', 'f', 'n'
	off  int  // byte offset of the value's first byte
	str  string
	obj  []jmember
	arr  []*jval
}

type jmember struct {
	key string
	off int // offset of the key's opening quote
	val *jval
}

func (v *jval) kindName() string {
	switch v.kind {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case '0':
		return "a number"
	case 't', 'f':
		return "a boolean"
	}
	return "null"
}

// get returns the last member called key (JSON's usual last-wins rule).
func (v *jval) get(key string) *jval {
	for i := len(v.obj) - 1; i >= 0; i-- {
		if v.obj[i].key == key {
			return v.obj[i].val
		}
	}
	return nil
}

// stripJSONC blanks out // and /* */ comments and trailing commas, the
// JSON-with-comments that VS Code and Cursor accept, keeping every other
// byte (and so every offset and line number) where it was.
func stripJSONC(data []byte) []byte {
	var out []byte // copied on the first change only
	set := func(i int, b byte) {
		if out == nil {
			out = append([]byte(nil), data...)
		}
		out[i] = b
	}
	inStr := false
	lastComma := -1 // a comma not yet followed by a value
	for i := 0; i < len(data); i++ {
		c := data[i]
		if inStr {
			switch c {
			case '\\':
				i++
			case '"':
				inStr = false
			}
			continue
		}
		switch {
		case c == '"':
			inStr = true
			lastComma = -1
		case c == '/' && i+1 < len(data) && data[i+1] == '/':
			for ; i < len(data) && data[i] != '\n'; i++ {
				set(i, ' ')
			}
		case c == '/' && i+1 < len(data) && data[i+1] == '*':
			end := strings.Index(string(data[i+2:]), "*/")
			if end < 0 {
				return data // unterminated: let the JSON parser report the '/'
			}
			for k := i; k < i+2+end+2; k++ {
				if data[k] != '\n' {
					set(k, ' ')
				}
			}
			i += 2 + end + 1
		case c == ',':
			lastComma = i
		case c == '}' || c == ']':
			if lastComma >= 0 {
				set(lastComma, ' ')
			}
			lastComma = -1
		case c == ' ' || c == '\t' || c == '\r' || c == '\n':
		default:
			lastComma = -1
		}
	}
	if out == nil {
		return data
	}
	return out
}

// parseJSON builds the tree of data, which json.Unmarshal has already
// accepted; internal/wire walks it, so it reports no syntax errors of its
// own (should data be broken after all, the tree ends where the walk
// stopped).
func parseJSON(data []byte) *jval {
	v, _ := jvalue(data, wire.SkipWS(data, 0), 0)
	return v
}

// jvalue is the value at data[i] and the offset just past it.
func jvalue(data []byte, i, depth int) (*jval, int) {
	if i >= len(data) {
		return &jval{kind: 'n', off: i}, i
	}
	v := &jval{off: i}
	switch c := data[i]; c {
	case '{':
		v.kind = '{'
		end, _ := wire.WalkMembers(data, i, depth, func(key []byte, j int) (int, error) {
			k, err := wire.Unquote(key)
			if err != nil {
				return j, err
			}
			// key is data[koff:...]: its offset is how much shorter its
			// capacity is.
			koff := cap(data) - cap(key)
			val, end := jvalue(data, j, depth+1)
			v.obj = append(v.obj, jmember{key: k, off: koff, val: val})
			return end, nil
		})
		return v, end
	case '[':
		v.kind = '['
		end, _ := wire.WalkElements(data, i, depth, func(j int) (int, error) {
			val, end := jvalue(data, j, depth+1)
			v.arr = append(v.arr, val)
			return end, nil
		})
		return v, end
	case '"':
		v.kind = '"'
		end, _, err := wire.SkipString(data, i)
		if err == nil {
			v.str, _ = wire.Unquote(data[i:end])
		}
		return v, end
	case 't', 'f', 'n':
		v.kind = c
	default:
		v.kind = '0'
	}
	end, _ := wire.SkipValue(data, i, depth)
	if v.kind == '0' {
		v.str = string(data[i:end])
	}
	return v, end
}

// toAny converts v to the values encoding/json produces, for free-form
// settings such as a plugin's config.
func (v *jval) toAny() any {
	switch v.kind {
	case '{':
		m := make(map[string]any, len(v.obj))
		for _, e := range v.obj {
			m[e.key] = e.val.toAny()
		}
		return m
	case '[':
		a := make([]any, len(v.arr))
		for i, e := range v.arr {
			a[i] = e.toAny()
		}
		return a
	case '"':
		return v.str
	case '0':
		var f float64
		json.Unmarshal([]byte(v.str), &f)
		return f
	case 't':
		return true
	case 'f':
		return false
	}
	return nil
}
