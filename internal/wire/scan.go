package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
)

// MaxDepth bounds nesting, like encoding/json, so hostile input cannot grow
// the stack without limit.
const MaxDepth = 10000

// ScanError is a syntax error at a byte offset, shaped like json.SyntaxError
// so callers can point at the offending byte.
type ScanError struct {
	Msg    string
	Offset int64
}

func (e *ScanError) Error() string { return e.Msg }

func SyntaxErr(b []byte, i int, what string) error {
	if i >= len(b) {
		return &ScanError{Msg: "unexpected end of JSON input", Offset: int64(len(b))}
	}
	return &ScanError{Msg: fmt.Sprintf("invalid character %q %s", b[i], what), Offset: int64(i + 1)}
}

func IsWS(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func SkipWS(b []byte, i int) int {
	for i < len(b) && IsWS(b[i]) {
		i++
	}
	return i
}

// ValidJSON reports whether b is one JSON value, as json.Valid does
// (FuzzScanner holds it to json.Valid), several times faster on long
// strings.
func ValidJSON(b []byte) bool {
	i, err := SkipValue(b, SkipWS(b, 0), 0)
	return err == nil && SkipWS(b, i) == len(b)
}

// SkipValue validates the value starting at b[i] (no leading whitespace)
// and returns the index just past it.
func SkipValue(b []byte, i, depth int) (int, error) {
	if i >= len(b) {
		return i, SyntaxErr(b, i, "")
	}
	switch c := b[i]; {
	case c == '"':
		end, _, err := SkipString(b, i)
		return end, err
	case c == '{':
		return skipObject(b, i, depth+1)
	case c == '[':
		return skipArray(b, i, depth+1)
	case c == 't':
		return skipLiteral(b, i, "true")
	case c == 'f':
		return skipLiteral(b, i, "false")
	case c == 'n':
		return skipLiteral(b, i, "null")
	case c == '-' || (c >= '0' && c <= '9'):
		return skipNumber(b, i)
	}
	return i, SyntaxErr(b, i, "looking for beginning of value")
}

// special reports whether any byte of w is a quote, a backslash or a
// control character (below 0x20). It may say true for a plain word (a
// borrow past a match), never false for a word that holds one.
func special(w uint64) bool {
	return below(w, 0x20) || below(w^(ones*'"'), 1) || below(w^(ones*'\\'), 1)
}

const ones, highs = 0x0101010101010101, 0x8080808080808080

// below reports whether any byte of w is less than n (n ≤ 128).
func below(w, n uint64) bool { return (w-ones*n)&^w&highs != 0 }

// SkipString validates the string starting at b[i] == '"' and returns the
// index past the closing quote and whether it holds escapes.
func SkipString(b []byte, i int) (int, bool, error) {
	escaped := false
	quote := -1 // the next quote at or after j, once looked for
	for j := i + 1; j < len(b); j++ {
		j, quote = plainRun(b, j, quote)
		if j >= len(b) {
			break
		}
		switch c := b[j]; {
		case c == '"':
			return j + 1, escaped, nil
		case c == '\\':
			escaped = true
			j++
			if j >= len(b) {
				return j, escaped, SyntaxErr(b, j, "")
			}
			switch b[j] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if j+4 >= len(b) {
					return len(b), escaped, SyntaxErr(b, len(b), "")
				}
				for k := j + 1; k <= j+4; k++ {
					if !isHex(b[k]) {
						return k, escaped, SyntaxErr(b, k, "in \\u hexadecimal character escape")
					}
				}
				j += 4
			default:
				return j, escaped, SyntaxErr(b, j, "in string escape code")
			}
		case c < 0x20:
			return j, escaped, SyntaxErr(b, j, "in string literal")
		}
	}
	return len(b), escaped, SyntaxErr(b, len(b), "")
}

// plainRun returns the index of the first quote, backslash or control byte
// in b at or after j (len(b) if none), and the index of the next quote
// (len(b) if none; -1 when not looked for). quote is what the last call
// returned for the same string.
//
// Long strings (a tool's arguments, a result's text) are most of a large
// message. The first ten words are checked eight bytes at a time, which
// is all a short string needs, and all a line of text needs up to its
// escaped line break (ten, not four: 8% faster on log text, the same on
// one long run); a longer run has its quote and first
// backslash found by the runtime's vector search, and only the bytes
// before them are checked for control bytes. The quote is remembered, so
// text with an escape on every line is not searched to its end each time.
func plainRun(b []byte, j, quote int) (int, int) {
	for range 10 {
		if j+8 > len(b) {
			for ; j < len(b); j++ {
				if c := b[j]; c == '"' || c == '\\' || c < 0x20 {
					return j, quote
				}
			}
			return j, quote
		}
		if special(binary.LittleEndian.Uint64(b[j:])) {
			for c := b[j]; c != '"' && c != '\\' && c >= 0x20; c = b[j] {
				j++
			}
			return j, quote
		}
		j += 8
	}
	if quote < j {
		quote = len(b)
		if q := bytes.IndexByte(b[j:], '"'); q >= 0 {
			quote = j + q
		}
	}
	end := quote
	if k := bytes.IndexByte(b[j:end], '\\'); k >= 0 {
		end = j + k
	}
	for ; j+32 <= end; j += 32 { // four words per test: no control byte is the rule
		w := b[j : j+32]
		w0, w1 := binary.LittleEndian.Uint64(w), binary.LittleEndian.Uint64(w[8:])
		w2, w3 := binary.LittleEndian.Uint64(w[16:]), binary.LittleEndian.Uint64(w[24:])
		const k = ones * 0x20
		if ((w0-k)&^w0|(w1-k)&^w1|(w2-k)&^w2|(w3-k)&^w3)&highs != 0 {
			break
		}
	}
	for j+8 <= end && !below(binary.LittleEndian.Uint64(b[j:]), 0x20) {
		j += 8
	}
	for j < end && b[j] >= 0x20 {
		j++
	}
	return j, quote
}

// StringEnd returns, for the JSON string starting at b[i] == '"' in a
// document already validated (a frame parseEnvelope accepted, arguments
// ValidJSON accepted), the index past its closing quote and whether it
// holds escapes. The closing quote is the first one after an even run of
// backslashes, found with the runtime's vector search; nothing else is
// checked, so a long string costs a fraction of SkipString. Should b not
// be as promised, it answers as SkipString does, with an error.
func StringEnd(b []byte, i int) (end int, escaped bool, err error) {
	for k := i + 1; ; {
		q := bytes.IndexByte(b[k:], '"')
		if q < 0 {
			return SkipString(b, i)
		}
		q += k
		n := 0
		for b[q-1-n] == '\\' {
			n++
		}
		if n%2 == 0 {
			return q + 1, bytes.IndexByte(b[i+1:q], '\\') >= 0, nil
		}
		k = q + 1
	}
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

func skipLiteral(b []byte, i int, lit string) (int, error) {
	for k := 0; k < len(lit); k++ {
		if i+k >= len(b) || b[i+k] != lit[k] {
			return i + k, SyntaxErr(b, i+k, "in literal "+lit)
		}
	}
	return i + len(lit), nil
}

func skipNumber(b []byte, i int) (int, error) {
	j := i
	if b[j] == '-' {
		j++
	}
	switch {
	case j < len(b) && b[j] == '0':
		j++
	case j < len(b) && b[j] >= '1' && b[j] <= '9':
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			j++
		}
	default:
		return j, SyntaxErr(b, j, "in numeric literal")
	}
	if j < len(b) && b[j] == '.' {
		j++
		if j >= len(b) || b[j] < '0' || b[j] > '9' {
			return j, SyntaxErr(b, j, "after decimal point in numeric literal")
		}
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			j++
		}
	}
	if j < len(b) && (b[j] == 'e' || b[j] == 'E') {
		j++
		if j < len(b) && (b[j] == '+' || b[j] == '-') {
			j++
		}
		if j >= len(b) || b[j] < '0' || b[j] > '9' {
			return j, SyntaxErr(b, j, "in exponent of numeric literal")
		}
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			j++
		}
	}
	return j, nil
}

func skipArray(b []byte, i, depth int) (int, error) {
	return WalkElements(b, i, depth, func(j int) (int, error) { return SkipValue(b, j, depth) })
}

// WalkElements validates the array at b[i] == '[' and returns the index
// past it. fn reads each element, which starts at b[j] (no leading
// whitespace): it validates it as it goes and returns the index past it.
// Decoders use it to read nested values in the same pass that validates
// them.
func WalkElements(b []byte, i, depth int, fn func(j int) (int, error)) (int, error) {
	if depth > MaxDepth {
		return i, &ScanError{Msg: "exceeded max depth", Offset: int64(i + 1)}
	}
	j := SkipWS(b, i+1)
	if j < len(b) && b[j] == ']' {
		return j + 1, nil
	}
	for {
		if j >= len(b) {
			return j, SyntaxErr(b, j, "")
		}
		var err error
		if j, err = fn(j); err != nil {
			return j, err
		}
		j = SkipWS(b, j)
		if j >= len(b) {
			return j, SyntaxErr(b, j, "")
		}
		switch b[j] {
		case ',':
			j = SkipWS(b, j+1)
		case ']':
			return j + 1, nil
		default:
			return j, SyntaxErr(b, j, "after array element")
		}
	}
}

func skipObject(b []byte, i, depth int) (int, error) {
	return EachMember(b, i, depth, nil)
}

// EachMember validates the object at b[i] == '{' and calls fn (if not nil)
// with each member's raw key (quotes included) and raw value.
func EachMember(b []byte, i, depth int, fn func(key, val []byte) error) (int, error) {
	return WalkMembers(b, i, depth, func(key []byte, j int) (int, error) {
		end, err := SkipValue(b, j, depth)
		if err != nil || fn == nil {
			return end, err
		}
		return end, fn(key, b[j:end])
	})
}

// WalkMembers validates the object at b[i] == '{' and returns the index
// past it. For each member, fn gets the raw key (quotes included) and the
// index of the value (no leading whitespace, maybe past the end of b); it
// reads and validates the value and returns the index past it. Decoders
// use it to read nested values in the same pass that validates them.
func WalkMembers(b []byte, i, depth int, fn func(key []byte, j int) (int, error)) (int, error) {
	if depth > MaxDepth {
		return i, &ScanError{Msg: "exceeded max depth", Offset: int64(i + 1)}
	}
	j := SkipWS(b, i+1)
	if j < len(b) && b[j] == '}' {
		return j + 1, nil
	}
	for {
		if j >= len(b) || b[j] != '"' {
			return j, SyntaxErr(b, j, "looking for beginning of object key string")
		}
		kend, _, err := SkipString(b, j)
		if err != nil {
			return kend, err
		}
		key := b[j:kend]
		j = SkipWS(b, kend)
		if j >= len(b) || b[j] != ':' {
			return j, SyntaxErr(b, j, "after object key")
		}
		if j, err = fn(key, SkipWS(b, j+1)); err != nil {
			return j, err
		}
		j = SkipWS(b, j)
		if j >= len(b) {
			return j, SyntaxErr(b, j, "")
		}
		switch b[j] {
		case ',':
			j = SkipWS(b, j+1)
		case '}':
			return j + 1, nil
		default:
			return j, SyntaxErr(b, j, "after object key:value pair")
		}
	}
}

// WalkObject is WalkMembers over a complete JSON object held in b,
// rejecting anything after it.
func WalkObject(b []byte, fn func(key []byte, j int) (int, error)) error {
	i := SkipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return SyntaxErr(b, i, "looking for beginning of object")
	}
	end, err := WalkMembers(b, i, 0, fn)
	if err != nil {
		return err
	}
	if end = SkipWS(b, end); end != len(b) {
		return SyntaxErr(b, end, "after top-level value")
	}
	return nil
}

// Members iterates the top-level Members of a complete JSON object held in
// b, rejecting anything after it.
func Members(b []byte, fn func(key, val []byte) error) error {
	return WalkObject(b, func(key []byte, j int) (int, error) {
		end, err := SkipValue(b, j, 0)
		if err != nil {
			return end, err
		}
		return end, fn(key, b[j:end])
	})
}

// SkipValid returns the index past the value at b[i] (no leading
// whitespace) in a document already validated (a frame parseEnvelope
// accepted): its structure is walked, but its strings are skipped with
// StringEnd's vector search instead of being validated, so a long
// argument costs a fraction of SkipValue. Should b not be as promised, it
// fails or skips ahead; it never reads out of range.
func SkipValid(b []byte, i, depth int) (int, error) {
	if i >= len(b) {
		return i, SyntaxErr(b, i, "")
	}
	switch b[i] {
	case '"':
		end, _, err := StringEnd(b, i)
		return end, err
	case '{':
		return WalkMembers(b, i, depth+1, func(_ []byte, j int) (int, error) { return SkipValid(b, j, depth+1) })
	case '[':
		return WalkElements(b, i, depth+1, func(j int) (int, error) { return SkipValid(b, j, depth+1) })
	}
	return SkipValue(b, i, depth)
}

// ValidMembers is Members over a document already validated: the values
// are skipped with SkipValid. (Members does not take the skipper as a
// parameter: the indirect call cost every frame's envelope 2%.)
func ValidMembers(b []byte, fn func(key, val []byte) error) error {
	return WalkObject(b, func(key []byte, j int) (int, error) {
		end, err := SkipValid(b, j, 0)
		if err != nil {
			return end, err
		}
		return end, fn(key, b[j:end])
	})
}

// KeyIs reports whether the raw key (with quotes) is name. Keys with
// escapes never match; JSON-RPC and MCP keys have none.
func KeyIs(key []byte, name string) bool {
	return len(key) == len(name)+2 && string(key[1:len(key)-1]) == name
}

// Unquote returns the string value of a raw JSON string, as encoding/json
// would decode it.
func Unquote(raw []byte) (string, error) {
	if len(raw) < 2 || raw[0] != '"' {
		return "", errors.New("not a JSON string")
	}
	s, end, _, err := decodeString(raw, 0, true)
	if err == nil && SkipWS(raw, end) != len(raw) {
		err = decodeErr(end, "data after the string")
	}
	return s, err
}

// PlainWord reports whether none of the eight bytes of w (little-endian)
// needs care in a JSON string: no quote, backslash, control character or
// byte beyond ASCII. It may say false for a plain word, never true for
// one that is not; encoders use it to copy eight bytes at a time.
func PlainWord(w uint64) bool { return w&highs == 0 && !special(w) }
