package lock

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync"
	"unicode/utf16"
	"unicode/utf8"
)

// canonical appends the canonical form (RFC 8785, JSON Canonicalization
// Scheme) of the JSON value src to dst. It is what a lockfile hashes, so it
// must be exactly RFC 8785: FuzzCanonical holds it to gowebpki/jcs, the
// reference's port, byte for byte. It exists because that library builds
// its output a byte at a time and takes ~15 µs for a small tool definition,
// which makes checking a 1,000-tool catalog cost 28 ms; this takes one
// pass, copying strings and integers that are already canonical as they
// are. It refuses what RFC 8785 cannot express (duplicate keys, numbers
// out of range, invalid UTF-8, lone surrogates) rather than guess.
func canonical(dst, src []byte) ([]byte, error) {
	c := canonPool.Get().(*canonicalizer)
	c.src, c.pos = src, 0
	defer func() {
		c.src = nil
		if cap(c.values)+cap(c.unq) <= 1<<20 { // a huge definition's buffers are not kept
			canonPool.Put(c)
		}
	}()
	c.ws()
	dst, err := c.value(dst, 0)
	if err != nil {
		return nil, err
	}
	c.ws()
	if c.pos != len(src) {
		return nil, c.errorf("data after the value")
	}
	return dst, nil
}

// canonPool keeps canonicalizers, whose scratch buffers are then reused:
// a catalog's tools are pinned one after another.
var canonPool = sync.Pool{New: func() any { return new(canonicalizer) }}

// maxDepth bounds nesting: a definition is outside input.
const maxDepth = 1000

type canonicalizer struct {
	src     []byte
	pos     int
	members []member // scratch, reused by every object (as a stack)
	values  []byte   // scratch: an object's members' values while they are sorted (a stack too)
	unq     []byte   // scratch: a string with escapes, decoded
	escaped bool     // the last str returned unq
}

// member is one key of an object being sorted: the key, decoded (a slice
// of the input when it has no escapes), and its value's canonical bytes,
// as a span of the output buffer.
type member struct {
	key        []byte
	start, end int
}

func (c *canonicalizer) errorf(format string, args ...any) error {
	return fmt.Errorf("canonical JSON: at byte %d: %s", c.pos, fmt.Sprintf(format, args...))
}

func (c *canonicalizer) ws() {
	for c.pos < len(c.src) {
		switch c.src[c.pos] {
		case ' ', '\t', '\n', '\r':
			c.pos++
		default:
			return
		}
	}
}

func (c *canonicalizer) value(dst []byte, depth int) ([]byte, error) {
	if depth > maxDepth {
		return nil, c.errorf("nested deeper than %d", maxDepth)
	}
	if c.pos >= len(c.src) {
		return nil, c.errorf("unexpected end")
	}
	switch b := c.src[c.pos]; {
	case b == '{':
		return c.object(dst, depth)
	case b == '[':
		c.pos++
		dst = append(dst, '[')
		c.ws()
		if c.pos < len(c.src) && c.src[c.pos] == ']' {
			c.pos++
			return append(dst, ']'), nil
		}
		for i := 0; ; i++ {
			if i > 0 {
				dst = append(dst, ',')
			}
			c.ws()
			var err error
			if dst, err = c.value(dst, depth+1); err != nil {
				return nil, err
			}
			c.ws()
			if c.pos >= len(c.src) {
				return nil, c.errorf("unexpected end in an array")
			}
			if c.src[c.pos] == ']' {
				c.pos++
				return append(dst, ']'), nil
			}
			if c.src[c.pos] != ',' {
				return nil, c.errorf("want , or ] in an array")
			}
			c.pos++
		}
	case b == '"':
		s, err := c.str()
		if err != nil {
			return nil, err
		}
		return appendString(dst, s), nil // s may be c.unq: used before the next str
	case b == '-' || b >= '0' && b <= '9':
		return c.number(dst)
	default:
		for _, lit := range []string{"true", "false", "null"} {
			if bytes.HasPrefix(c.src[c.pos:], []byte(lit)) {
				c.pos += len(lit)
				return append(dst, lit...), nil
			}
		}
		return nil, c.errorf("unexpected %q", b)
	}
}

func (c *canonicalizer) object(dst []byte, depth int) ([]byte, error) {
	c.pos++ // {
	c.ws()
	if c.pos < len(c.src) && c.src[c.pos] == '}' {
		c.pos++
		return append(dst, '{', '}'), nil
	}
	// Each value is canonicalized past the end of dst, then the members
	// are copied back in key order.
	base := len(c.members)
	defer func() { c.members = c.members[:base] }()
	scratch := len(dst)
	for {
		c.ws()
		if c.pos >= len(c.src) || c.src[c.pos] != '"' {
			return nil, c.errorf("want a key")
		}
		key, err := c.str()
		if err != nil {
			return nil, err
		}
		if c.escaped {
			key = bytes.Clone(key) // kept while the value is read
		}
		c.ws()
		if c.pos >= len(c.src) || c.src[c.pos] != ':' {
			return nil, c.errorf("want : after a key")
		}
		c.pos++
		c.ws()
		start := len(dst)
		if dst, err = c.value(dst, depth+1); err != nil {
			return nil, err
		}
		c.members = append(c.members, member{key, start, len(dst)})
		c.ws()
		if c.pos >= len(c.src) {
			return nil, c.errorf("unexpected end in an object")
		}
		if c.src[c.pos] == '}' {
			c.pos++
			break
		}
		if c.src[c.pos] != ',' {
			return nil, c.errorf("want , or } in an object")
		}
		c.pos++
	}
	ms := c.members[base:]
	slices.SortFunc(ms, func(a, b member) int { return compareUTF16(a.key, b.key) })
	for i := 1; i < len(ms); i++ {
		if bytes.Equal(ms[i].key, ms[i-1].key) {
			return nil, c.errorf("duplicate key %q", ms[i].key)
		}
	}
	mark := len(c.values)
	c.values = append(c.values, dst[scratch:]...)
	defer func() { c.values = c.values[:mark] }()
	values := c.values[mark:]
	dst = append(dst[:scratch], '{')
	for i, m := range ms {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendString(dst, m.key)
		dst = append(dst, ':')
		dst = append(dst, values[m.start-scratch:m.end-scratch]...)
	}
	return append(dst, '}'), nil
}

// str reads a string and returns it decoded: a slice of the input when it
// has no escapes, else c.unq (valid until the next str). Invalid UTF-8 and
// lone surrogates are errors.
func (c *canonicalizer) str() ([]byte, error) {
	c.pos++ // "
	c.escaped = false
	start := c.pos
	for c.pos < len(c.src) {
		b := c.src[c.pos]
		if b == '"' {
			s := c.src[start:c.pos]
			c.pos++
			if !utf8.Valid(s) {
				return nil, c.errorf("invalid UTF-8 in a string")
			}
			return s, nil
		}
		if b == '\\' || b < 0x20 {
			break
		}
		c.pos++
	}
	// The slow way, with escapes.
	c.escaped = true
	out := append(c.unq[:0], c.src[start:c.pos]...)
	defer func() { c.unq = out[:0] }()
	for c.pos < len(c.src) {
		b := c.src[c.pos]
		switch {
		case b == '"':
			c.pos++
			if !utf8.Valid(out) {
				return nil, c.errorf("invalid UTF-8 in a string")
			}
			return out, nil
		case b < 0x20:
			return nil, c.errorf("control character in a string")
		case b != '\\':
			out = append(out, b)
			c.pos++
			continue
		}
		if c.pos+1 >= len(c.src) {
			break
		}
		e := c.src[c.pos+1]
		c.pos += 2
		switch e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := c.hex4()
			if !ok {
				return nil, c.errorf("bad \\u escape")
			}
			if utf16.IsSurrogate(r) {
				if r >= 0xDC00 || c.pos+1 >= len(c.src) || c.src[c.pos] != '\\' || c.src[c.pos+1] != 'u' {
					return nil, c.errorf("lone surrogate in a string")
				}
				c.pos += 2
				r2, ok := c.hex4()
				if !ok || r2 < 0xDC00 || r2 > 0xDFFF {
					return nil, c.errorf("lone surrogate in a string")
				}
				r = utf16.DecodeRune(r, r2)
			}
			out = utf8.AppendRune(out, r)
		default:
			return nil, c.errorf("bad escape \\%c", e)
		}
	}
	return nil, c.errorf("unterminated string")
}

func (c *canonicalizer) hex4() (rune, bool) {
	if c.pos+4 > len(c.src) {
		return 0, false
	}
	n, err := strconv.ParseUint(string(c.src[c.pos:c.pos+4]), 16, 32)
	if err != nil {
		return 0, false
	}
	c.pos += 4
	return rune(n), true
}

// number writes a number as ECMAScript's Number.prototype.toString does
// (RFC 8785 section 3.2.2.3). An integer of up to 15 digits is already in
// that form and is copied.
func (c *canonicalizer) number(dst []byte) ([]byte, error) {
	start := c.pos
	if c.src[c.pos] == '-' {
		c.pos++
	}
	digits := c.pos
	for c.pos < len(c.src) && c.src[c.pos] >= '0' && c.src[c.pos] <= '9' {
		c.pos++
	}
	intLen := c.pos - digits
	if intLen == 0 || intLen > 1 && c.src[digits] == '0' {
		return nil, c.errorf("bad number")
	}
	plain := true
	// digitsAfter skips the marker at pos (and a sign, for an exponent)
	// and the digits after it, of which there must be one or more.
	digitsAfter := func(signed bool) bool {
		plain = false
		c.pos++
		if signed && c.pos < len(c.src) && (c.src[c.pos] == '+' || c.src[c.pos] == '-') {
			c.pos++
		}
		n := c.pos
		for c.pos < len(c.src) && c.src[c.pos] >= '0' && c.src[c.pos] <= '9' {
			c.pos++
		}
		return c.pos > n
	}
	if c.pos < len(c.src) && c.src[c.pos] == '.' && !digitsAfter(false) {
		return nil, c.errorf("bad number")
	}
	if c.pos < len(c.src) && (c.src[c.pos] == 'e' || c.src[c.pos] == 'E') && !digitsAfter(true) {
		return nil, c.errorf("bad number")
	}
	lit := c.src[start:c.pos]
	if plain && intLen <= 15 {
		if string(lit) == "-0" {
			return append(dst, '0'), nil
		}
		return append(dst, lit...), nil
	}
	f, err := strconv.ParseFloat(string(lit), 64)
	if err != nil || math.IsInf(f, 0) {
		return nil, c.errorf("number %s out of range", lit)
	}
	return appendES6(dst, f), nil
}

// appendES6 formats f as ECMAScript's Number.prototype.toString: the
// shortest digits that read back as f, in positional notation from 1e-6
// up to 1e21 and in exponent notation outside.
func appendES6(dst []byte, f float64) []byte {
	if f == 0 {
		return append(dst, '0') // -0 too
	}
	if f < 0 {
		dst = append(dst, '-')
		f = -f
	}
	var buf [32]byte
	e := strconv.AppendFloat(buf[:0], f, 'e', -1, 64) // d.ddde±xx
	i := bytes.IndexByte(e, 'e')
	mant, exp := e[:i], e[i+1:]
	x, _ := strconv.Atoi(string(exp))
	ds := make([]byte, 0, len(mant))
	ds = append(ds, mant[0])
	if len(mant) > 2 {
		ds = append(ds, mant[2:]...)
	}
	k, n := len(ds), x+1 // f = 0.ds × 10^n
	switch {
	case k <= n && n <= 21:
		dst = append(dst, ds...)
		for range n - k {
			dst = append(dst, '0')
		}
	case 0 < n && n <= 21:
		dst = append(dst, ds[:n]...)
		dst = append(dst, '.')
		dst = append(dst, ds[n:]...)
	case -6 < n && n <= 0:
		dst = append(dst, '0', '.')
		for range -n {
			dst = append(dst, '0')
		}
		dst = append(dst, ds...)
	default:
		dst = append(dst, ds[0])
		if k > 1 {
			dst = append(dst, '.')
			dst = append(dst, ds[1:]...)
		}
		dst = append(dst, 'e')
		if n-1 >= 0 {
			dst = append(dst, '+')
		}
		dst = strconv.AppendInt(dst, int64(n-1), 10)
	}
	return dst
}

// appendString writes s as ECMAScript's JSON.stringify does: only the
// quote, the backslash and control characters are escaped.
func appendString[S ~string | ~[]byte](dst []byte, s S) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		b := s[i]
		if b >= 0x20 && b != '"' && b != '\\' {
			continue
		}
		dst = append(dst, s[start:i]...)
		switch b {
		case '"', '\\':
			dst = append(dst, '\\', b)
		case '\b':
			dst = append(dst, '\\', 'b')
		case '\f':
			dst = append(dst, '\\', 'f')
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			const hex = "0123456789abcdef"
			dst = append(dst, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xF])
		}
		start = i + 1
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// compareUTF16 orders keys by their UTF-16 code units, as RFC 8785 sorts
// them (which differs from UTF-8 byte order only above U+FFFF).
func compareUTF16(a, b []byte) int {
	for len(a) > 0 && len(b) > 0 {
		if a[0] < utf8.RuneSelf && b[0] < utf8.RuneSelf {
			if a[0] != b[0] {
				return int(a[0]) - int(b[0])
			}
			a, b = a[1:], b[1:]
			continue
		}
		ra, na := utf8.DecodeRune(a)
		rb, nb := utf8.DecodeRune(b)
		if ra != rb {
			ua, ub := unit(ra), unit(rb)
			if ua != ub {
				if ua < ub {
					return -1
				}
				return 1
			}
			// Same high surrogate: the low ones decide.
			la, lb := low(ra), low(rb)
			if la < lb {
				return -1
			}
			return 1
		}
		a, b = a[na:], b[nb:]
	}
	switch {
	case len(a) == 0 && len(b) == 0:
		return 0
	case len(a) == 0:
		return -1
	}
	return 1
}

// unit is r's first UTF-16 code unit, low its second (0 when it has one).
func unit(r rune) rune {
	if r >= 0x10000 {
		h, _ := utf16.EncodeRune(r)
		return h
	}
	return r
}

func low(r rune) rune {
	if r >= 0x10000 {
		_, l := utf16.EncodeRune(r)
		return l
	}
	return 0
}
