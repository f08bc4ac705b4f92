package filter

import (
	"errors"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"

	"github.com/nexus-mcp/nexus/internal/wire"
)

// needEscape holds the bytes a JSON string must be looked at for: control
// bytes, quote, backslash, and every byte of a multi-byte character (to
// check it is valid UTF-8).
var needEscape = NewByteSet("\"\\").Add(0, 0x1f).Add(0x80, 0xff)

// stringStop holds the bytes that end a run inside a JSON string.
var stringStop = NewByteSet("\"\\").Add(0, 0x1f)

// PathElem is one step into a JSON document: an object key, or (when
// Index >= 0) an array index.
type PathElem struct {
	Key   string
	Index int
}

// Path leads from the document's root to a value.
type Path []PathElem

// String renders p as in "content[0].text".
func (p Path) String() string {
	var b strings.Builder
	for i, e := range p {
		if e.Index >= 0 {
			b.WriteString("[" + strconv.Itoa(e.Index) + "]")
			continue
		}
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(e.Key)
	}
	return b.String()
}

// Last is the last key of p, or "" when p is empty or ends in an index.
func (p Path) Last() string {
	if len(p) == 0 || p[len(p)-1].Index >= 0 {
		return ""
	}
	return p[len(p)-1].Key
}

// MaxDepth bounds the nesting EditStrings accepts.
const MaxDepth = 512

// ErrSyntax is wrapped by EditStrings' errors about malformed JSON.
var ErrSyntax = errors.New("invalid JSON")

// EditStrings calls edit with every string value in doc (object keys are
// not values) and its path, and returns doc with each string that edit
// changed replaced; everything else is kept byte for byte. It reports
// whether anything changed; when nothing did, it returns doc itself. It is
// how a sanitizer rewrites text in a result without decoding it into maps
// and encoding it again.
func EditStrings(doc []byte, edit func(p Path, s string) (string, bool)) ([]byte, bool, error) {
	ed := editor{src: doc, edit: edit, path: make(Path, 0, 8)}
	ed.ws()
	if err := ed.value(0); err != nil {
		return doc, false, err
	}
	ed.ws()
	if ed.pos != len(doc) {
		return doc, false, ed.errorf("data after the JSON value")
	}
	if ed.out == nil {
		return doc, false, nil
	}
	return append(ed.out, doc[ed.copied:]...), true, nil
}

type editor struct {
	skip   bool // only check strings, do not decode them
	src    []byte
	pos    int
	out    []byte
	copied int // src[:copied] is in out
	path   Path
	edit   func(Path, string) (string, bool)
}

func (ed *editor) errorf(msg string) error {
	return syntaxError(ErrSyntax.Error() + " at offset " + strconv.Itoa(ed.pos) + ": " + msg)
}

// syntaxError is an error of EditStrings about malformed JSON; it wraps
// ErrSyntax.
type syntaxError string

func (e syntaxError) Error() string { return string(e) }
func (e syntaxError) Unwrap() error { return ErrSyntax }

func (ed *editor) ws() {
	for ed.pos < len(ed.src) {
		switch ed.src[ed.pos] {
		case ' ', '\t', '\n', '\r':
			ed.pos++
		default:
			return
		}
	}
}

func (ed *editor) value(depth int) error {
	if depth > MaxDepth {
		return ed.errorf("nested deeper than " + strconv.Itoa(MaxDepth))
	}
	if ed.pos >= len(ed.src) {
		return ed.errorf("unexpected end")
	}
	switch c := ed.src[ed.pos]; {
	case c == '{':
		ed.pos++
		ed.ws()
		if ed.pos < len(ed.src) && ed.src[ed.pos] == '}' {
			ed.pos++
			return nil
		}
		for {
			ed.ws()
			if ed.pos >= len(ed.src) || ed.src[ed.pos] != '"' {
				return ed.errorf("want an object key")
			}
			key, _, err := ed.str()
			if err != nil {
				return err
			}
			ed.ws()
			if ed.pos >= len(ed.src) || ed.src[ed.pos] != ':' {
				return ed.errorf("want ':' after an object key")
			}
			ed.pos++
			ed.ws()
			ed.path = append(ed.path, PathElem{Key: key, Index: -1})
			if err := ed.value(depth + 1); err != nil {
				return err
			}
			ed.path = ed.path[:len(ed.path)-1]
			ed.ws()
			if ed.pos >= len(ed.src) {
				return ed.errorf("unexpected end in an object")
			}
			if ed.src[ed.pos] == '}' {
				ed.pos++
				return nil
			}
			if ed.src[ed.pos] != ',' {
				return ed.errorf("want ',' or '}' in an object")
			}
			ed.pos++
		}
	case c == '[':
		ed.pos++
		ed.ws()
		if ed.pos < len(ed.src) && ed.src[ed.pos] == ']' {
			ed.pos++
			return nil
		}
		for i := 0; ; i++ {
			ed.ws()
			ed.path = append(ed.path, PathElem{Index: i})
			if err := ed.value(depth + 1); err != nil {
				return err
			}
			ed.path = ed.path[:len(ed.path)-1]
			ed.ws()
			if ed.pos >= len(ed.src) {
				return ed.errorf("unexpected end in an array")
			}
			if ed.src[ed.pos] == ']' {
				ed.pos++
				return nil
			}
			if ed.src[ed.pos] != ',' {
				return ed.errorf("want ',' or ']' in an array")
			}
			ed.pos++
		}
	case c == '"':
		start := ed.pos
		s, _, err := ed.str()
		if err != nil {
			return err
		}
		if ed.edit == nil {
			return nil
		}
		if ns, ok := ed.edit(ed.path, s); ok && ns != s {
			if ed.out == nil {
				ed.out = make([]byte, 0, len(ed.src)+64)
			}
			ed.out = append(ed.out, ed.src[ed.copied:start]...)
			ed.out = wire.AppendString(ed.out, ns)
			ed.copied = ed.pos
		}
		return nil
	case c == 't':
		return ed.lit("true")
	case c == 'f':
		return ed.lit("false")
	case c == 'n':
		return ed.lit("null")
	case c == '-' || (c >= '0' && c <= '9'):
		return ed.number()
	}
	return ed.errorf("unexpected character " + strconv.QuoteRune(rune(ed.src[ed.pos])))
}

func (ed *editor) lit(s string) error {
	if len(ed.src)-ed.pos < len(s) || string(ed.src[ed.pos:ed.pos+len(s)]) != s {
		return ed.errorf("want " + s)
	}
	ed.pos += len(s)
	return nil
}

func (ed *editor) digits() int {
	n := 0
	for ed.pos < len(ed.src) && ed.src[ed.pos] >= '0' && ed.src[ed.pos] <= '9' {
		ed.pos++
		n++
	}
	return n
}

func (ed *editor) number() error {
	if ed.src[ed.pos] == '-' {
		ed.pos++
	}
	if ed.pos < len(ed.src) && ed.src[ed.pos] == '0' {
		ed.pos++
	} else if ed.digits() == 0 {
		return ed.errorf("malformed number")
	}
	if ed.pos < len(ed.src) && ed.src[ed.pos] == '.' {
		ed.pos++
		if ed.digits() == 0 {
			return ed.errorf("malformed number")
		}
	}
	if ed.pos < len(ed.src) && (ed.src[ed.pos] == 'e' || ed.src[ed.pos] == 'E') {
		ed.pos++
		if ed.pos < len(ed.src) && (ed.src[ed.pos] == '+' || ed.src[ed.pos] == '-') {
			ed.pos++
		}
		if ed.digits() == 0 {
			return ed.errorf("malformed number")
		}
	}
	return nil
}

// str reads the string at pos and returns it decoded, and whether it had
// escapes.
//
// Most strings are ASCII. Until it meets a byte >= 0x80, str scans with
// needEscape, which stops at those bytes too, so that an ASCII string is
// known to be valid UTF-8 without reading it again (utf8.ValidString reads
// eight bytes per loop iteration: in WASM with a time limit that costs
// more than the scan).
func (ed *editor) str() (string, bool, error) {
	ed.pos++ // the opening quote
	start := ed.pos
	set := needEscape
	for ed.pos < len(ed.src) {
		if ed.pos = Scan(ed.src, ed.pos, set); ed.pos >= len(ed.src) {
			break
		}
		c := ed.src[ed.pos]
		if c == '"' {
			ed.pos++
			if ed.skip {
				return "", false, nil
			}
			b := ed.src[start : ed.pos-1]
			if set == needEscape {
				return intern(b), false, nil
			}
			if s := string(b); utf8.ValidString(s) {
				return s, false, nil
			}
			return fixUTF8(string(b)), false, nil
		}
		if c == '\\' {
			if ed.skip {
				ed.pos += 2 // a \uXXXX escape's digits are plain bytes
				continue
			}
			ed.pos = start
			s, err := ed.unescape()
			return s, true, err
		}
		if c < 0x20 {
			return "", false, ed.errorf("control character in a string")
		}
		set = stringStop // a byte >= 0x80: check UTF-8 at the end
		ed.pos++
	}
	return "", false, ed.errorf("unterminated string")
}

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
		if i = Scan(s, i, stringStop); i >= len(s) || s[i] != '\\' {
			return min(i, len(s))
		}
		i += 2
	}
}

func (ed *editor) unescape() (string, error) {
	// The decoded string is no longer than its escaped form: one
	// allocation of that size, not a series of growing ones, nor one
	// sized by the rest of the document (thousands of short escaped
	// strings would each take that much).
	b := make([]byte, 0, escapedEnd(ed.src, ed.pos)-ed.pos)
	set := needEscape // as in str: stop at bytes >= 0x80 until there is one
	for ed.pos < len(ed.src) {
		// Copy the run up to the next quote, backslash or control byte.
		start := ed.pos
		ed.pos = Scan(ed.src, ed.pos, set)
		b = append(b, ed.src[start:ed.pos]...)
		if ed.pos >= len(ed.src) {
			break
		}
		c := ed.src[ed.pos]
		ed.pos++
		if c != '\\' {
			switch {
			case c == '"':
				if set != needEscape && !utf8.Valid(b) {
					return fixUTF8(string(b)), nil
				}
				return unsafe.String(unsafe.SliceData(b), len(b)), nil // b is not used again
			case c < 0x20:
				ed.pos--
				return "", ed.errorf("control character in a string")
			}
			set = stringStop
			b = append(b, c)
			continue
		}
		if ed.pos >= len(ed.src) {
			break
		}
		e := unescapes[ed.src[ed.pos]]
		ed.pos++
		if e != 'u' {
			if e == 0 {
				return "", ed.errorf("unknown escape \\" + string(rune(ed.src[ed.pos-1])))
			}
			b = append(b, e)
			continue
		}
		r, ok := ed.hex4()
		if !ok {
			return "", ed.errorf("malformed \\u escape")
		}
		if utf16.IsSurrogate(r) {
			r2 := rune(-1)
			if ed.pos+1 < len(ed.src) && ed.src[ed.pos] == '\\' && ed.src[ed.pos+1] == 'u' {
				save := ed.pos
				ed.pos += 2
				var ok2 bool
				if r2, ok2 = ed.hex4(); !ok2 {
					return "", ed.errorf("malformed \\u escape")
				}
				if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
					r = d
				} else {
					ed.pos = save
					r = utf8.RuneError
				}
			} else {
				r = utf8.RuneError
			}
		}
		b = utf8.AppendRune(b, r)
	}
	return "", ed.errorf("unterminated string")
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

func (ed *editor) hex4() (rune, bool) {
	if len(ed.src)-ed.pos < 4 {
		return 0, false
	}
	var r rune
	for _, c := range ed.src[ed.pos : ed.pos+4] {
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
	ed.pos += 4
	return r, true
}
