package wasm

import (
	"encoding/json"
	"unicode/utf8"

	"github.com/nexus-mcp/nexus/sdk/event"
)

// Every call checks the event's params and result before a guest sees them
// and the decision a guest writes back; with encoding/json that was most of
// the host's share of a call on a 2 KB result (its scanner takes a function
// call per byte). The fast paths below accept only what encoding/json
// accepts, and give up (ok=false) on anything they are not sure of, so the
// caller can ask encoding/json: they are never wrong, only sometimes not
// taken. FuzzFastJSON holds them to encoding/json.

// fastMaxDepth bounds the nesting the fast validator follows; deeper
// documents go to encoding/json.
const fastMaxDepth = 256

// jsonStop marks the bytes that end a run of plain bytes in a JSON string:
// the quote, the backslash and control characters.
var jsonStop = func() (t [256]bool) {
	for c := 0; c < 0x20; c++ {
		t[c] = true
	}
	t['"'], t['\\'] = true, true
	return t
}()

// validJSON reports whether b is one JSON value, as json.Valid would, when
// it can tell quickly. false means "ask json.Valid".
func validJSON(b []byte) bool {
	i := skipWS(b, 0)
	end, ok := skipValue(b, i, 0)
	return ok && skipWS(b, end) == len(b)
}

func skipWS(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// skipValue returns the end of the JSON value at b[i:], and false when it
// is not valid (or nested deeper than fastMaxDepth).
func skipValue(b []byte, i, depth int) (int, bool) {
	if i >= len(b) {
		return i, false
	}
	switch c := b[i]; {
	case c == '"':
		end, _, ok := skipString(b, i)
		return end, ok
	case c == '{':
		if depth >= fastMaxDepth {
			return i, false
		}
		i = skipWS(b, i+1)
		if i < len(b) && b[i] == '}' {
			return i + 1, true
		}
		for {
			if i >= len(b) || b[i] != '"' {
				return i, false
			}
			var ok bool
			if i, _, ok = skipString(b, i); !ok {
				return i, false
			}
			i = skipWS(b, i)
			if i >= len(b) || b[i] != ':' {
				return i, false
			}
			if i, ok = skipValue(b, skipWS(b, i+1), depth+1); !ok {
				return i, false
			}
			i = skipWS(b, i)
			if i >= len(b) {
				return i, false
			}
			if b[i] == '}' {
				return i + 1, true
			}
			if b[i] != ',' {
				return i, false
			}
			i = skipWS(b, i+1)
		}
	case c == '[':
		if depth >= fastMaxDepth {
			return i, false
		}
		i = skipWS(b, i+1)
		if i < len(b) && b[i] == ']' {
			return i + 1, true
		}
		for {
			var ok bool
			if i, ok = skipValue(b, i, depth+1); !ok {
				return i, false
			}
			i = skipWS(b, i)
			if i >= len(b) {
				return i, false
			}
			if b[i] == ']' {
				return i + 1, true
			}
			if b[i] != ',' {
				return i, false
			}
			i = skipWS(b, i+1)
		}
	case c == 't':
		return literal(b, i, "true")
	case c == 'f':
		return literal(b, i, "false")
	case c == 'n':
		return literal(b, i, "null")
	case c == '-' || c >= '0' && c <= '9':
		return skipNumber(b, i)
	}
	return i, false
}

func literal(b []byte, i int, lit string) (int, bool) {
	if len(b)-i >= len(lit) && string(b[i:i+len(lit)]) == lit {
		return i + len(lit), true
	}
	return i, false
}

// skipString returns the end of the string whose opening quote is at
// b[i], and whether it is plain: no escapes and valid UTF-8, so its bytes
// are its value.
func skipString(b []byte, i int) (end int, plain, ok bool) {
	start := i + 1
	plain = true
	for i++; i < len(b); {
		c := b[i]
		if !jsonStop[c] {
			i++
			continue
		}
		switch {
		case c == '"':
			if plain {
				plain = utf8.Valid(b[start:i])
			}
			return i + 1, plain, true
		case c < 0x20:
			return i, false, false
		}
		// A backslash.
		plain = false
		if i+1 >= len(b) {
			return i, false, false
		}
		switch b[i+1] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			i += 2
		case 'u':
			if len(b)-i < 6 || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) || !isHex(b[i+5]) {
				return i, false, false
			}
			i += 6
		default:
			return i, false, false
		}
	}
	return i, false, false
}

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

func skipNumber(b []byte, i int) (int, bool) {
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = digits(b, i+1)
	default:
		return i, false
	}
	if i < len(b) && b[i] == '.' {
		j := digits(b, i+1)
		if j == i+1 {
			return j, false
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(b, i)
		if j == i {
			return j, false
		}
		i = j
	}
	return i, true
}

func digits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}

// fastDecision decodes a decision written the way the Go SDK writes it:
// {"action":...,"reason":...,"params":...,"result":...} with the optional
// members in that order, or {"error":...}, with no white space between
// members and strings without escapes. ok=false means "decode it with
// encoding/json" (another order or spelling, escapes, anything odd), which
// any guest may write and which is just as valid.
func fastDecision(out []byte) (d event.Decision, failure *string, ok bool) {
	const (
		action = `{"action":`
		errKey = `{"error":`
	)
	str := func(i int) (string, int, bool) {
		if i >= len(out) || out[i] != '"' {
			return "", i, false
		}
		end, plain, ok := skipString(out, i)
		if !ok || !plain {
			return "", i, false
		}
		return string(out[i+1 : end-1]), end, true
	}
	raw := func(i int) (json.RawMessage, int, bool) {
		end, ok := skipValue(out, i, 0)
		if !ok {
			return nil, i, false
		}
		if string(out[i:end]) == "null" {
			return nil, end, true
		}
		return append(json.RawMessage(nil), out[i:end]...), end, true
	}
	has := func(i int, key string) bool { return len(out)-i >= len(key) && string(out[i:i+len(key)]) == key }
	if has(0, errKey) {
		msg, i, ok := str(len(errKey))
		if !ok || i != len(out)-1 || out[i] != '}' {
			return d, nil, false
		}
		return d, &msg, true
	}
	if !has(0, action) {
		return d, nil, false
	}
	i := len(action)
	if d.Action, i, ok = str(i); !ok {
		return d, nil, false
	}
	if has(i, `,"reason":`) {
		if d.Reason, i, ok = str(i + len(`,"reason":`)); !ok {
			return d, nil, false
		}
	}
	if has(i, `,"params":`) {
		if d.Params, i, ok = raw(i + len(`,"params":`)); !ok {
			return d, nil, false
		}
	}
	if has(i, `,"result":`) {
		if d.Result, i, ok = raw(i + len(`,"result":`)); !ok {
			return d, nil, false
		}
	}
	if i != len(out)-1 || out[i] != '}' {
		return event.Decision{}, nil, false
	}
	return d, nil, true
}
