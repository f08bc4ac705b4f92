package wire

import (
	"strings"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// DecodeString decodes the JSON string at b[i] == '"' as encoding/json
// does (escapes resolved, an invalid UTF-8 byte or lone surrogate becoming
// U+FFFD) without reflection, and returns it, the index past its closing
// quote and whether it held escapes. Errors are *ScanError with the offset
// of the offending byte.
//
// It is written for the WASM guest, where encoding/json costs a hundred
// microseconds a call and every jump costs as much as forty bytes of
// straight-line work (see Scan); the host uses it too, for the strings
// Unquote finds escaped. Each finds runs of plain bytes its own way
// (runEnd). Most strings are ASCII: until it meets a byte >= 0x80 a run
// ends at those bytes too, so an ASCII string is known to be valid UTF-8
// without reading it again.
func DecodeString(b []byte, i int) (s string, end int, escaped bool, err error) {
	return decodeString(b, i, false)
}

// decodeString is DecodeString; alone says b holds nothing after the
// string but white space (Unquote's case), so its length bounds the
// decoded string without a scan for the string's end.
func decodeString(b []byte, i int, alone bool) (s string, end int, escaped bool, err error) {
	pos := i + 1 // past the opening quote
	start := pos
	ascii := true // no byte >= 0x80 so far: no UTF-8 to check
	for pos < len(b) {
		if pos = runEnd(b, pos, ascii); pos >= len(b) {
			break
		}
		c := b[pos]
		if c == '"' {
			pos++
			raw := b[start : pos-1]
			if ascii {
				return intern(raw), pos, false, nil
			}
			if s := string(raw); utf8.ValidString(s) {
				return s, pos, false, nil
			}
			return fixUTF8(string(raw)), pos, false, nil
		}
		if c == '\\' {
			size := len(b) - start
			if !alone {
				size = escapedEnd(b, start) - start
			}
			s, end, err := unescape(b, start, size)
			return s, end, true, err
		}
		if c < 0x20 {
			return "", pos, false, decodeErr(pos, "control character in a string")
		}
		ascii = false // a byte >= 0x80: check UTF-8 at the end
		pos++
	}
	return "", pos, false, &ScanError{Msg: "unterminated string", Offset: int64(len(b))}
}

// decodeErr is a ScanError at b[pos], its Offset counted as SyntaxErr's
// (the bytes read, the offending one included).
func decodeErr(pos int, msg string) error { return &ScanError{Msg: msg, Offset: int64(pos + 1)} }

// intern returns the string of b, without an allocation for the keys and
// values every MCP result repeats.
func intern(b []byte) string {
	switch len(b) {
	case 3:
		if string(b) == "uri" {
			return "uri"
		}
	case 4:
		switch string(b) {
		case "type":
			return "type"
		case "text":
			return "text"
		case "role":
			return "role"
		case "blob":
			return "blob"
		}
	case 5:
		if string(b) == "_meta" {
			return "_meta"
		}
	case 7:
		switch string(b) {
		case "content":
			return "content"
		case "isError":
			return "isError"
		}
	case 8:
		switch string(b) {
		case "mimeType":
			return "mimeType"
		case "resource":
			return "resource"
		case "contents":
			return "contents"
		case "messages":
			return "messages"
		}
	case 17:
		if string(b) == "structuredContent" {
			return "structuredContent"
		}
	}
	return string(b)
}

// unescapes maps the byte after a backslash to what it stands for; 0 for
// an unknown escape, and 'u' for \uXXXX.
var unescapes = [256]byte{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t', 'u': 'u'}

// escapedEnd returns the index of the byte that ends the JSON string
// contents starting at s[i]: its closing quote, a control byte, or len(s).
func escapedEnd(s []byte, i int) int {
	for {
		if i = runEnd(s, i, false); i >= len(s) || s[i] != '\\' {
			return min(i, len(s))
		}
		i += 2
	}
}

// unescape decodes the string contents starting at b[pos] (past the
// opening quote), which hold an escape and decode to at most size bytes.
func unescape(b []byte, pos, size int) (string, int, error) {
	// The decoded string is no longer than its escaped form: one
	// allocation of that size, not a series of growing ones, nor one
	// sized by the rest of the document (thousands of short escaped
	// strings would each take that much).
	out := make([]byte, 0, size)
	ascii := true // as in DecodeString: stop at bytes >= 0x80 until there is one
	for pos < len(b) {
		// Copy the run up to the next quote, backslash or control byte.
		start := pos
		pos = runEnd(b, pos, ascii)
		out = append(out, b[start:pos]...)
		if pos >= len(b) {
			break
		}
		c := b[pos]
		pos++
		if c != '\\' {
			switch {
			case c == '"':
				if !ascii && !utf8.Valid(out) {
					return fixUTF8(string(out)), pos, nil
				}
				return unsafe.String(unsafe.SliceData(out), len(out)), pos, nil // out is not used again
			case c < 0x20:
				return "", pos - 1, decodeErr(pos-1, "control character in a string")
			}
			ascii = false
			out = append(out, c)
			continue
		}
		if pos >= len(b) {
			break
		}
		e := unescapes[b[pos]]
		pos++
		if e != 'u' {
			if e == 0 {
				return "", pos, decodeErr(pos, "unknown escape \\"+string(rune(b[pos-1])))
			}
			out = append(out, e)
			continue
		}
		r, ok := hex4(b, pos)
		if !ok {
			return "", pos, decodeErr(pos, "malformed \\u escape")
		}
		pos += 4
		if utf16.IsSurrogate(r) {
			r2 := rune(-1)
			if pos+1 < len(b) && b[pos] == '\\' && b[pos+1] == 'u' {
				if r2, ok = hex4(b, pos+2); !ok {
					return "", pos + 2, decodeErr(pos+2, "malformed \\u escape")
				}
				// A pair that is not one leaves the second escape to
				// be read on its own, as encoding/json does.
				if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
					r = d
					pos += 6
				} else {
					r = utf8.RuneError
				}
			} else {
				r = utf8.RuneError
			}
		}
		out = utf8.AppendRune(out, r)
	}
	return "", pos, &ScanError{Msg: "unterminated string", Offset: int64(len(b))}
}

// fixUTF8 replaces each invalid byte with U+FFFD, as encoding/json does
// when it decodes a string.
func fixUTF8(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b.WriteString("\ufffd")
		} else {
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// hex4 reads the four hex digits at b[pos].
func hex4(b []byte, pos int) (rune, bool) {
	if len(b)-pos < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[pos : pos+4] {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			r |= rune(c - 'A' + 10)
		default:
			return 0, false
		}
	}
	return r, true
}
