package main

import (
	"strings"

	"github.com/nexus-mcp/nexus/sdk/filter"
)

// Kinds of secret, as they appear in [REDACTED:<kind>].
var Kinds = []string{"aws_access_key", "github_token", "slack_token", "slack_webhook", "private_key", "jwt", "secret"}

// redactor finds secrets in one pass over a string: at each byte, only the
// detectors whose first byte matches look further, so clean text costs
// little more than reading it. It uses no regular expressions, which are
// slow when compiled to WASM.
type redactor struct {
	off       map[string]bool
	keys      []string // normalized key suffixes of key=value secrets
	lastBytes filter.ByteSet
	// pairs marks where a secret may be: the first two bytes of a token,
	// or the last byte of a key and the = or : after it.
	pairs [1 << 16]uint8
}

// secretKeys end the names of keys whose values are secrets.
var secretKeys = []string{
	"password", "passwd", "pwd", "passphrase", "secret", "token", "apikey", "api_key",
	"access_key", "secret_key", "private_key", "client_secret", "credential", "credentials", "auth",
}

func newRedactor() *redactor {
	r := &redactor{off: map[string]bool{}}
	for _, k := range secretKeys {
		r.addKey(k)
	}
	for c := byte('B'); c <= 'S'; c++ {
		r.pair('A', c) // AKIA, ASIA, ...
	}
	for _, p := range []string{"gh", "gi", "xo", "xa", "ht", "--", "ey"} {
		r.pair(p[0], p[1])
	}
	for _, q := range []byte(" \"'") { // between a key and its separator
		r.pair(q, '=')
		r.pair(q, ':')
	}
	return r
}

// addKey adds a key suffix (normalized) and the bytes it may end with.
func (r *redactor) addKey(k string) {
	k = normKey(k)
	r.keys = append(r.keys, k)
	c := k[len(k)-1]
	ends := []byte{c}
	if c >= 'a' && c <= 'z' {
		ends = append(ends, c-'a'+'A')
	}
	if c == '_' {
		ends = append(ends, '-', '.')
	}
	for _, e := range ends {
		r.lastBytes[e] = 1
		r.pair(e, '=')
		r.pair(e, ':')
	}
}

// redact returns s with every secret replaced, counting them by kind.
func (r *redactor) redact(s string, counts map[string]int) (string, bool) {
	var b strings.Builder
	last := 0 // s[:last] is written to b (once b is in use)
	changed := false
	emit := func(start, end int, kind string) {
		if !changed {
			b.Grow(len(s))
			changed = true
		}
		b.WriteString(s[last:start])
		b.WriteString("[REDACTED:" + kind + "]")
		last = end
		counts[kind]++
	}
	for j := 0; j+1 < len(s); {
		if j = r.scan(s, j); j+1 >= len(s) {
			break
		}
		// A secret may start at j, or a key may end at j with the
		// separator of a key=value secret after it.
		var end int
		var kind string
		switch c, next := s[j], s[j+1]; {
		case c == 'A':
			end, kind = r.aws(s, j)
		case c == 'g':
			end, kind = r.github(s, j)
		case c == 'x':
			end, kind = r.slack(s, j)
		case c == 'h' && next == 't':
			end, kind = r.webhook(s, j)
		case c == '-' && next == '-':
			end, kind = r.privateKey(s, j)
		case c == 'e' && next == 'y':
			end, kind = r.jwt(s, j)
		}
		if end > j && !r.off[kind] && j >= last {
			emit(j, end, kind)
			j = end
			continue
		}
		if sep := s[j+1]; (sep == ':' || sep == '=') && !r.off["secret"] {
			if vs, ve := r.keyValue(s, j+1); ve > vs && vs >= last {
				emit(vs, ve, "secret")
				j = ve
				continue
			}
		}
		j++
	}
	if !changed {
		return s, false
	}
	b.WriteString(s[last:])
	return b.String(), true
}

// scan returns the first j at or after i where the pair s[j], s[j+1] is
// marked in r.pairs, or len(s). It reads sixteen pairs per iteration: in
// WASM with time limits enforced every loop iteration costs a check, and
// most bytes of a text are not where a secret starts.
func (r *redactor) scan(s string, j int) int {
	t := &r.pairs
	for ; j+17 <= len(s); j += 16 {
		w := s[j : j+17]
		if t[uint16(w[0])|uint16(w[1])<<8]|t[uint16(w[1])|uint16(w[2])<<8]|t[uint16(w[2])|uint16(w[3])<<8]|t[uint16(w[3])|uint16(w[4])<<8]|
			t[uint16(w[4])|uint16(w[5])<<8]|t[uint16(w[5])|uint16(w[6])<<8]|t[uint16(w[6])|uint16(w[7])<<8]|t[uint16(w[7])|uint16(w[8])<<8]|
			t[uint16(w[8])|uint16(w[9])<<8]|t[uint16(w[9])|uint16(w[10])<<8]|t[uint16(w[10])|uint16(w[11])<<8]|t[uint16(w[11])|uint16(w[12])<<8]|
			t[uint16(w[12])|uint16(w[13])<<8]|t[uint16(w[13])|uint16(w[14])<<8]|t[uint16(w[14])|uint16(w[15])<<8]|t[uint16(w[15])|uint16(w[16])<<8] != 0 {
			break
		}
	}
	for ; j+1 < len(s); j++ {
		if t[uint16(s[j])|uint16(s[j+1])<<8] != 0 {
			return j
		}
	}
	return len(s)
}

// pair marks the two bytes a, b in the table.
func (r *redactor) pair(a, b byte) { r.pairs[uint16(a)|uint16(b)<<8] = 1 }

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func isUpperDigit(c byte) bool { return c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' }

func isB64URL(c byte) bool { return isAlnum(c) || c == '-' || c == '_' }

// boundary reports whether a token may start at i: not in the middle of a
// word.
func boundary(s string, i int) bool { return i == 0 || !isAlnum(s[i-1]) && s[i-1] != '_' }

// run is the end of the run of bytes from i that satisfy ok.
func run(s string, i int, ok func(byte) bool) int {
	for i < len(s) && ok(s[i]) {
		i++
	}
	return i
}

var awsPrefixes = []string{"AKIA", "ASIA", "ABIA", "ACCA", "AGPA", "AIDA", "AROA", "AIPA", "ANPA", "ANVA", "APKA"}

// aws: an access key id, a 4-letter prefix and 16 upper-case letters or
// digits.
func (r *redactor) aws(s string, i int) (int, string) {
	if len(s)-i < 20 || !boundary(s, i) {
		return 0, ""
	}
	for _, p := range awsPrefixes {
		if s[i:i+4] == p {
			end := run(s, i+4, isUpperDigit)
			if end-i == 20 {
				return end, "aws_access_key"
			}
		}
	}
	return 0, ""
}

// github: ghp_, gho_, ghu_, ghs_ and ghr_ tokens, and fine-grained
// github_pat_ tokens.
func (r *redactor) github(s string, i int) (int, string) {
	if !boundary(s, i) {
		return 0, ""
	}
	if strings.HasPrefix(s[i:], "github_pat_") {
		if end := run(s, i+11, func(c byte) bool { return isAlnum(c) || c == '_' }); end-i-11 >= 22 {
			return end, "github_token"
		}
		return 0, ""
	}
	if len(s)-i >= 40 && s[i+1] == 'h' && strings.IndexByte("pousr", s[i+2]) >= 0 && s[i+3] == '_' {
		if end := run(s, i+4, isAlnum); end-i-4 >= 36 {
			return end, "github_token"
		}
	}
	return 0, ""
}

// slack: xoxb-, xoxp-, xoxa-, xoxo-, xoxs-, xoxr- and xapp- tokens.
func (r *redactor) slack(s string, i int) (int, string) {
	if !boundary(s, i) || len(s)-i < 15 {
		return 0, ""
	}
	start := 0
	switch {
	case s[i:i+3] == "xox" && strings.IndexByte("bpaosr", s[i+3]) >= 0 && s[i+4] == '-':
		start = i + 5
	case s[i:i+5] == "xapp-":
		start = i + 5
	default:
		return 0, ""
	}
	if end := run(s, start, func(c byte) bool { return isAlnum(c) || c == '-' }); end-start >= 10 {
		return end, "slack_token"
	}
	return 0, ""
}

const slackHook = "hooks.slack.com/services/"

// webhook: an incoming-webhook URL, which is a credential in itself.
func (r *redactor) webhook(s string, i int) (int, string) {
	rest := s[i:]
	var n int
	switch {
	case strings.HasPrefix(rest, "https://"+slackHook):
		n = len("https://" + slackHook)
	case strings.HasPrefix(rest, "http://"+slackHook):
		n = len("http://" + slackHook)
	default:
		return 0, ""
	}
	if end := run(s, i+n, func(c byte) bool { return isAlnum(c) || c == '/' || c == '_' || c == '-' }); end-i-n >= 20 {
		return end, "slack_webhook"
	}
	return 0, ""
}

// privateKey: a PEM block from its BEGIN ... PRIVATE KEY line to its END
// line, or to the end of the text when it was cut off.
func (r *redactor) privateKey(s string, i int) (int, string) {
	const begin = "-----BEGIN "
	if !strings.HasPrefix(s[i:], begin) {
		return 0, ""
	}
	eol := strings.Index(s[i+len(begin):], "-----")
	if eol < 0 || eol > 40 {
		return 0, ""
	}
	label := s[i+len(begin) : i+len(begin)+eol]
	if !strings.HasSuffix(label, "PRIVATE KEY") {
		return 0, ""
	}
	endMark := "-----END " + label + "-----"
	if j := strings.Index(s[i:], endMark); j >= 0 {
		return i + j + len(endMark), "private_key"
	}
	return len(s), "private_key"
}

// jwt: three base64url parts, the first two JSON objects ("eyJ" is how
// base64 of `{"` begins).
func (r *redactor) jwt(s string, i int) (int, string) {
	if len(s)-i < 20 || s[i+1] != 'y' || s[i+2] != 'J' || !boundary(s, i) {
		return 0, ""
	}
	p1 := run(s, i, isB64URL)
	if p1-i < 10 || p1 >= len(s) || s[p1] != '.' || !strings.HasPrefix(s[p1+1:], "eyJ") {
		return 0, ""
	}
	p2 := run(s, p1+1, isB64URL)
	if p2-p1 < 10 || p2 >= len(s) || s[p2] != '.' {
		return 0, ""
	}
	p3 := run(s, p2+1, isB64URL)
	if p3-p2-1 < 10 {
		return 0, ""
	}
	return p3, "jwt"
}

func isKeyByte(c byte) bool { return isAlnum(c) || c == '_' || c == '-' || c == '.' }

// keyValue looks at the separator at i (= or :) and, when the key before
// it names a secret, returns where its value starts and ends.
func (r *redactor) keyValue(s string, i int) (int, int) {
	// The key: skip spaces and a closing quote back from the separator.
	k := i
	for k > 0 && s[k-1] == ' ' {
		k--
	}
	if k > 0 && (s[k-1] == '"' || s[k-1] == '\'') {
		k--
	}
	ke := k
	for k > 0 && isKeyByte(s[k-1]) {
		k--
	}
	if ke-k < 3 || !r.secretKey(s[k:ke]) {
		return 0, 0
	}
	// The value: after spaces, quoted or up to a delimiter.
	v := i + 1
	if s[i] == ':' && v < len(s) && s[v] == '/' {
		return 0, 0 // a URL scheme, not a key: value
	}
	for v < len(s) && s[v] == ' ' {
		v++
	}
	if v >= len(s) {
		return 0, 0
	}
	if q := s[v]; q == '"' || q == '\'' {
		end := strings.IndexByte(s[v+1:], q)
		if end <= 0 {
			return 0, 0
		}
		return r.real(s, v+1, v+1+end)
	}
	end := v
	for end < len(s) && !strings.ContainsRune(" \t\r\n,;&)}]\"'<>", rune(s[end])) {
		end++
	}
	return r.real(s, v, end)
}

// real drops values that are not secrets: empty, redacted already, or a
// placeholder.
func (r *redactor) real(s string, start, end int) (int, int) {
	v := s[start:end]
	switch {
	case len(v) < 3, strings.HasPrefix(v, "[REDACTED"), strings.HasPrefix(v, "${"), strings.HasPrefix(v, "<"), v == "null", v == "true", v == "false", strings.Trim(v, "*x.") == "":
		return 0, 0
	}
	return start, end
}

// realValue reports whether a whole string is a real secret value.
func (r *redactor) realValue(v string) (int, int, bool) {
	s, e := r.real(v, 0, len(v))
	return s, e, e > s
}

// normKey lower-cases a key name and writes - and . as _.
func normKey(k string) string {
	b := []byte(k)
	for i, c := range b {
		switch {
		case c >= 'A' && c <= 'Z':
			b[i] = c + 'a' - 'A'
		case c == '-' || c == '.':
			b[i] = '_'
		}
	}
	return string(b)
}

// secretKey reports whether a key name ends with one of the secret key
// names; it compares in place, since it runs at every = and : of a text.
func (r *redactor) secretKey(key string) bool {
	if len(key) == 0 || r.lastBytes[key[len(key)-1]] == 0 {
		return false
	}
	for _, k := range r.keys {
		if len(key) < len(k) {
			continue
		}
		tail := key[len(key)-len(k):]
		match := true
		for i := 0; i < len(k); i++ {
			c := tail[i]
			switch {
			case c >= 'A' && c <= 'Z':
				c += 'a' - 'A'
			case c == '-' || c == '.':
				c = '_'
			}
			if c != k[i] {
				match = false
				break
			}
		}
		if match {
			return true
		}
	}
	return false
}
