package wire

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
	"strconv"
)

// AppendAny appends v, encoded, to b: the one encoder of values a caller
// hands Nexus as JSON (tool arguments, through the host or the protocol's
// client alike). The shapes callers build by hand or get from
// encoding/json (maps of strings, numbers, booleans, nested maps and
// slices) are written directly, several times faster than reflection;
// anything else goes through encoding/json. Either way the output is what
// json.Marshal writes (keys sorted) under one rule: <, > and & are not
// escaped, which JSON does not need, so the same value encodes to the
// same bytes whichever way it goes.
func AppendAny(b []byte, v any) ([]byte, error) {
	if out, ok := appendAny(b, v, 0); ok {
		return out, nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return b, err
	}
	return append(b, bytes.TrimSuffix(buf.Bytes(), []byte{'\n'})...), nil
}

// maxAnyDepth bounds the nesting appendAny follows before it leaves the
// value to encoding/json (which reports cycles).
const maxAnyDepth = 32

// appendAny appends v as JSON; false means a type or value it leaves to
// encoding/json (b is then garbage).
func appendAny(b []byte, v any, depth int) ([]byte, bool) {
	if depth > maxAnyDepth {
		return b, false
	}
	switch x := v.(type) {
	case nil:
		return append(b, "null"...), true
	case string:
		return AppendString(b, x), true
	case bool:
		return strconv.AppendBool(b, x), true
	case float64:
		return appendFloat(b, x, 64)
	case float32:
		return appendFloat(b, float64(x), 32)
	case int:
		return strconv.AppendInt(b, int64(x), 10), true
	case int64:
		return strconv.AppendInt(b, x, 10), true
	case int32:
		return strconv.AppendInt(b, int64(x), 10), true
	case uint64:
		return strconv.AppendUint(b, x, 10), true
	case uint:
		return strconv.AppendUint(b, uint64(x), 10), true
	case map[string]any:
		if x == nil {
			return append(b, "null"...), true
		}
		var buf [8]string
		b = append(b, '{')
		for i, k := range sortedKeys(x, buf[:0]) {
			if i > 0 {
				b = append(b, ',')
			}
			b = AppendString(b, k)
			b = append(b, ':')
			var ok bool
			if b, ok = appendAny(b, x[k], depth+1); !ok {
				return b, false
			}
		}
		return append(b, '}'), true
	case map[string]string:
		if x == nil {
			return append(b, "null"...), true
		}
		var buf [8]string
		b = append(b, '{')
		for i, k := range sortedKeys(x, buf[:0]) {
			if i > 0 {
				b = append(b, ',')
			}
			b = AppendString(b, k)
			b = append(b, ':')
			b = AppendString(b, x[k])
		}
		return append(b, '}'), true
	case []any:
		if x == nil {
			return append(b, "null"...), true
		}
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			var ok bool
			if b, ok = appendAny(b, e, depth+1); !ok {
				return b, false
			}
		}
		return append(b, ']'), true
	case []string:
		if x == nil {
			return append(b, "null"...), true
		}
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			b = AppendString(b, e)
		}
		return append(b, ']'), true
	}
	return b, false
}

// appendFloat writes f as encoding/json does; NaN and infinities are left
// to encoding/json, which refuses them.
func appendFloat(b []byte, f float64, bits int) ([]byte, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return b, false
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 {
		if bits == 64 && (abs < 1e-6 || abs >= 1e21) || bits == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21) {
			format = 'e'
		}
	}
	b = strconv.AppendFloat(b, f, format, -1, bits)
	if format == 'e' {
		// 1e-07 becomes 1e-7, as encoding/json writes it.
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, true
}

// sortedKeys returns m's keys in order, in buf when they fit (the caller's
// stack array, so small maps allocate nothing).
func sortedKeys[V any](m map[string]V, buf []string) []string {
	keys := buf
	if len(m) > cap(buf) {
		keys = make([]string, 0, len(m))
	}
	for k := range m {
		keys = append(keys, k)
	}
	if len(keys) > 1 {
		slices.Sort(keys)
	}
	return keys
}
