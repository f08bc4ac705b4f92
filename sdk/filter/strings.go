package filter

import (
	"errors"
	"strconv"
	"strings"

	"github.com/nexus-mcp/nexus/internal/wire"
)

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

func (ed *editor) ws() { ed.pos = wire.SkipWS(ed.src, ed.pos) }

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
	}
	// A literal or a number.
	end, err := wire.SkipValue(ed.src, ed.pos, 0)
	if err != nil {
		return ed.wireErr(err)
	}
	ed.pos = end
	return nil
}

// wireErr is an error of the wire decoder, as EditStrings reports it.
func (ed *editor) wireErr(err error) error {
	if se, ok := err.(*wire.ScanError); ok {
		// wire counts the bytes read, the offending one included; the
		// editor's own errors give that byte's index.
		off := se.Offset
		if off > 0 && off <= int64(len(ed.src)) && !strings.HasPrefix(se.Msg, "unexpected end") && se.Msg != "unterminated string" {
			off--
		}
		return syntaxError(ErrSyntax.Error() + " at offset " + strconv.FormatInt(off, 10) + ": " + se.Msg)
	}
	return ed.errorf(err.Error())
}

// str reads the string at pos and returns it decoded, and whether it had
// escapes.
func (ed *editor) str() (string, bool, error) {
	s, end, escaped, err := wire.DecodeString(ed.src, ed.pos)
	if err != nil {
		return "", false, ed.wireErr(err)
	}
	ed.pos = end
	return s, escaped, nil
}
