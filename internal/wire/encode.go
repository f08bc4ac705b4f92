package wire

import (
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// AppendString appends s as a JSON string, as encoding/json would
// (minus its HTML escaping, which JSON does not need): quotes, backslashes
// and control characters escaped, invalid UTF-8 replaced by U+FFFD, and
// U+2028/U+2029 escaped for the benefit of JavaScript readers.
func AppendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	words := 16 // where the next word-wise skip may start; short strings go byte by byte
	for i := 0; i < len(s); {
		// Eight bytes at a time while none needs an escape or is beyond
		// ASCII: most text is plain, and a tool's result text is most of
		// what a server or the gateway sends. After a word that is not,
		// the next eight bytes go one by one, so text full of escapes or
		// non-ASCII pays little for the attempts.
		if i >= words {
			for ; i+8 <= len(s); i += 8 {
				w := s[i : i+8]
				x := uint64(w[0]) | uint64(w[1])<<8 | uint64(w[2])<<16 | uint64(w[3])<<24 |
					uint64(w[4])<<32 | uint64(w[5])<<40 | uint64(w[6])<<48 | uint64(w[7])<<56
				if !PlainWord(x) {
					words = i + 8
					break
				}
			}
			if i >= len(s) {
				break
			}
		}
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// AppendStringHTML appends s as a JSON string byte for byte as
// encoding/json writes it: as AppendString does, and <, > and & escaped
// as \u003c, \u003e and \u0026, backspace and form feed as \b and \f. For
// output that must equal json.Marshal's (the audit log's records). Only a
// string holding one of those five is written by encoding/json itself, so
// AppendString's loop pays nothing for them.
func AppendStringHTML(b []byte, s string) []byte {
	if !strings.ContainsAny(s, "<>&\b\f") {
		return AppendString(b, s)
	}
	j, _ := json.Marshal(s) // a string always marshals
	return append(b, j...)
}
