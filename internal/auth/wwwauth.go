package auth

import (
	"errors"
	"strings"
)

// Limits of ParseWWWAuthenticate. A header over MaxWWWAuthenticate bytes is
// an error before any parsing; the challenge and parameter counts bound the
// result however the bytes are arranged.
const (
	MaxWWWAuthenticate = 16 << 10
	maxChallenges      = 32
	maxAuthParams      = 64
)

// AuthChallenge is one challenge of a WWW-Authenticate header (RFC 9110
// section 11.6.1): a scheme and either a token68 or auth-params.
type AuthChallenge struct {
	Scheme  string            // as sent; compare with strings.EqualFold
	Token68 string            // the token68 form ("Basic abc=="), else ""
	Params  map[string]string // auth-param names lower-cased; values unquoted
}

// Param returns the named auth-param (name case-insensitive).
func (c AuthChallenge) Param(name string) string { return c.Params[strings.ToLower(name)] }

// ErrMalformedChallenge reports a WWW-Authenticate value that is not valid
// RFC 9110 syntax. The challenges parsed before the fault are still
// returned with it.
var ErrMalformedChallenge = errors.New("malformed WWW-Authenticate header")

// ParseWWWAuthenticate parses the values of every WWW-Authenticate field of
// a response (resp.Header.Values("WWW-Authenticate")): each may hold
// several comma-separated challenges, and auth-param values may be tokens
// or quoted strings with backslash escapes. Empty list elements are
// skipped, duplicate parameters keep their first value (RFC 9110 forbids
// them), and parsing stops at the first syntax error, returning what came
// before it along with ErrMalformedChallenge.
func ParseWWWAuthenticate(values []string) ([]AuthChallenge, error) {
	total := 0
	for _, v := range values {
		total += len(v)
	}
	if total > MaxWWWAuthenticate {
		return nil, errors.New("WWW-Authenticate header too large")
	}
	var out []AuthChallenge
	for _, v := range values {
		p := wwwParser{s: v}
		cs, err := p.parse(maxChallenges - len(out))
		out = append(out, cs...)
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

type wwwParser struct {
	s string
	i int
}

func (p *wwwParser) eof() bool { return p.i >= len(p.s) }

func (p *wwwParser) skipOWS() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t') {
		p.i++
	}
}

// skipCommas skips OWS and empty list elements before the next element.
func (p *wwwParser) skipCommas() {
	for {
		p.skipOWS()
		if p.i < len(p.s) && p.s[p.i] == ',' {
			p.i++
			continue
		}
		return
	}
}

func (p *wwwParser) token() string {
	start := p.i
	for p.i < len(p.s) && isTchar(p.s[p.i]) {
		p.i++
	}
	return p.s[start:p.i]
}

func (p *wwwParser) fail(msg string) error {
	return &parseError{msg: msg, at: p.i}
}

type parseError struct {
	msg string
	at  int
}

func (e *parseError) Error() string {
	return ErrMalformedChallenge.Error() + ": " + e.msg + " at byte " + itoa(e.at)
}
func (e *parseError) Unwrap() error { return ErrMalformedChallenge }

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b [20]byte
	i := len(b)
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	return string(b[i:])
}

func (p *wwwParser) parse(room int) ([]AuthChallenge, error) {
	var out []AuthChallenge
	for {
		p.skipCommas()
		if p.eof() {
			return out, nil
		}
		if len(out) >= room {
			return out, p.fail("too many challenges")
		}
		scheme := p.token()
		if scheme == "" {
			return out, p.fail("expected an auth-scheme")
		}
		c := AuthChallenge{Scheme: scheme, Params: map[string]string{}}
		// A scheme alone, or followed by a comma, has no parameters.
		sp := p.i
		p.skipOWS()
		if p.eof() || p.s[p.i] == ',' {
			out = append(out, c)
			continue
		}
		if p.i == sp {
			return out, p.fail("expected a space after the auth-scheme")
		}
		if t, ok := p.tryToken68(); ok {
			c.Token68 = t
			out = append(out, c)
			p.skipOWS()
			if !p.eof() && p.s[p.i] != ',' {
				return out, p.fail("unexpected text after token68")
			}
			continue
		}
		// #auth-param: params separated by commas, until an element that is
		// not name=value, which starts the next challenge.
		for {
			save := p.i
			name := p.token()
			if name == "" {
				p.i = save
				break
			}
			p.skipOWS()
			if p.eof() || p.s[p.i] != '=' {
				// Not a parameter: the next challenge's scheme.
				p.i = save
				break
			}
			p.i++ // '='
			p.skipOWS()
			var val string
			if !p.eof() && p.s[p.i] == '"' {
				v, err := p.quoted()
				if err != nil {
					out = append(out, c)
					return out, err
				}
				val = v
			} else {
				val = p.token()
				if val == "" {
					out = append(out, c)
					return out, p.fail("expected a token or quoted-string value")
				}
			}
			if len(c.Params) >= maxAuthParams {
				out = append(out, c)
				return out, p.fail("too many auth-params")
			}
			lname := strings.ToLower(name)
			if _, dup := c.Params[lname]; !dup {
				c.Params[lname] = val
			}
			p.skipOWS()
			if p.eof() {
				break
			}
			if p.s[p.i] != ',' {
				out = append(out, c)
				return out, p.fail("expected a comma between auth-params")
			}
			p.skipCommas()
		}
		out = append(out, c)
		if !p.eof() && len(c.Params) == 0 {
			return out, p.fail("expected an auth-param")
		}
	}
}

// tryToken68 consumes a token68 if one starts here: token68 characters,
// then any '=' padding, then the end of the element. "realm=x" is not one
// (a parameter), "abc==" and "a=" are.
func (p *wwwParser) tryToken68() (string, bool) {
	start := p.i
	j := p.i
	for j < len(p.s) && isToken68char(p.s[j]) {
		j++
	}
	if j == start {
		return "", false
	}
	k := j
	for k < len(p.s) && p.s[k] == '=' {
		k++
	}
	// After the padding only OWS and then the end or a comma may follow.
	m := k
	for m < len(p.s) && (p.s[m] == ' ' || p.s[m] == '\t') {
		m++
	}
	if m < len(p.s) && p.s[m] != ',' {
		return "", false
	}
	// "name=value" with value empty is not valid syntax for a param, so a
	// single trailing '=' makes a token68; but "name = value" was ruled out
	// above because something other than a comma followed.
	p.i = k
	return p.s[start:k], true
}

func (p *wwwParser) quoted() (string, error) {
	p.i++ // opening quote
	var b strings.Builder
	for p.i < len(p.s) {
		ch := p.s[p.i]
		switch {
		case ch == '"':
			p.i++
			return b.String(), nil
		case ch == '\\':
			p.i++
			if p.i >= len(p.s) {
				return "", p.fail("unterminated quoted-string")
			}
			ch = p.s[p.i]
			if !isQdtextOrQuotedPair(ch) {
				return "", p.fail("invalid quoted-pair")
			}
			b.WriteByte(ch)
			p.i++
		case isQdtext(ch):
			b.WriteByte(ch)
			p.i++
		default:
			return "", p.fail("invalid character in quoted-string")
		}
	}
	return "", p.fail("unterminated quoted-string")
}

// isTchar: RFC 9110 tchar.
func isTchar(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

func isToken68char(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	return strings.IndexByte("-._~+/", c) >= 0
}

// isQdtext: HTAB / SP / %x21 / %x23-5B / %x5D-7E / obs-text.
func isQdtext(c byte) bool {
	return c == '\t' || c == ' ' || c == 0x21 || (c >= 0x23 && c <= 0x5b) || (c >= 0x5d && c <= 0x7e) || c >= 0x80
}

// isQdtextOrQuotedPair: HTAB / SP / VCHAR / obs-text.
func isQdtextOrQuotedPair(c byte) bool {
	return c == '\t' || c == ' ' || (c >= 0x21 && c <= 0x7e) || c >= 0x80
}

// bearerChallenge returns the Bearer challenge of a response, if any.
func bearerChallenge(values []string) (AuthChallenge, bool) {
	cs, _ := ParseWWWAuthenticate(values)
	for _, c := range cs {
		if strings.EqualFold(c.Scheme, "Bearer") {
			return c, true
		}
	}
	return AuthChallenge{}, false
}

// formatChallenges renders challenges back to header syntax, every
// parameter value quoted. It is what the fuzz target round-trips.
func formatChallenges(cs []AuthChallenge) string {
	var b strings.Builder
	for i, c := range cs {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(c.Scheme)
		if c.Token68 != "" {
			b.WriteString(" " + c.Token68)
			continue
		}
		first := true
		for _, k := range sortedKeys(c.Params) {
			if first {
				b.WriteByte(' ')
				first = false
			} else {
				b.WriteString(", ")
			}
			b.WriteString(k + `="`)
			for j := 0; j < len(c.Params[k]); j++ {
				ch := c.Params[k][j]
				if ch == '"' || ch == '\\' {
					b.WriteByte('\\')
				}
				b.WriteByte(ch)
			}
			b.WriteByte('"')
		}
	}
	return b.String()
}
