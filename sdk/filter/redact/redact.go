package redact

import (
	"math"
	"math/bits"
	"slices"
	"strconv"
	"strings"
)

// Kinds of secret, as they appear in [REDACTED:<kind>], in the order of
// the Kind constants.
var Kinds = []string{"aws_access_key", "github_token", "slack_token", "slack_webhook", "private_key", "jwt", "api_key", "secret"}

// Kind indexes Kinds; None is no secret.
type Kind uint8

// The kinds of secret.
const (
	KindAWS Kind = iota
	KindGitHub
	KindSlack
	KindWebhook
	KindPrivateKey
	KindJWT
	KindAPIKey // sk-... and sk_live_... keys, and (with Entropy) long random tokens
	KindSecret // a key=value secret, or a value under a secret key
	NumKinds
	None Kind = 0xff
)

// Placeholder is what replaces a secret of kind k: [REDACTED:<kind>].
func Placeholder(k Kind) string { return redacted[k] }

var redacted = func() (r [NumKinds]string) {
	for k, name := range Kinds {
		r[k] = "[REDACTED:" + name + "]"
	}
	return r
}()

// Counts counts the secrets redacted, by kind.
type Counts [NumKinds]int

// Total is how many secrets n counts.
func (n *Counts) Total() int {
	t := 0
	for _, c := range n {
		t += c
	}
	return t
}

// Reason says what was redacted: "redacted 3 secrets (jwt, secret)", the
// kinds in alphabetical order. (No fmt or sort: both are slow in WASM.)
func (n *Counts) Reason() string {
	total := 0
	var kinds []byte
	for _, k := range byName {
		if n[k] == 0 {
			continue
		}
		if total > 0 {
			kinds = append(kinds, ", "...)
		}
		kinds = append(kinds, Kinds[k]...)
		total += n[k]
	}
	noun := " secrets ("
	if total == 1 {
		noun = " secret ("
	}
	return "redacted " + strconv.Itoa(total) + noun + string(kinds) + ")"
}

// byName lists the kinds in alphabetical order of their names.
var byName = func() []Kind {
	ks := make([]Kind, NumKinds)
	for k := range ks {
		ks[k] = Kind(k)
	}
	slices.SortFunc(ks, func(a, b Kind) int { return strings.Compare(Kinds[a], Kinds[b]) })
	return ks
}()

// redactor finds secrets in one pass over a string: at each byte, only the
// detectors whose first byte matches look further, so clean text costs
// little more than reading it. It uses no regular expressions, which are
// slow when compiled to WASM.
//
// In WASM with a time limit, each jump the code takes costs about as much
// as forty bytes of straight-line work (see filter.Scan), so the hot
// paths trade branches for table lookups: the scan finds the next
// candidate in 32 byte pairs per jump, and a candidate key is looked up
// by its last three bytes before it is read.
type Redactor struct {
	off       [NumKinds]bool
	entropy   bool
	keys      []string // normalized key suffixes of key=value secrets
	exact     []string // normalized whole key names (header-like: authorization, cookie)
	lastBytes [256]uint8
	// tails marks the last three bytes of every key (see trigram); when a
	// key is shorter than three bytes, anyTail is set and the table is not
	// used.
	tails   [1 << 15]bool
	anyTail bool
	// pairs marks where a secret may be: the first two bytes of a token,
	// or the last byte of a key and the = or : after it.
	pairs [1 << 16]uint8
}

// secretKeys end the names of keys whose values are secrets.
var secretKeys = []string{
	"password", "passwd", "pwd", "passphrase", "secret", "token", "apikey", "api_key",
	"access_key", "secret_key", "private_key", "client_secret", "credential", "credentials", "auth",
}

// exactKeys are whole key names whose values are secrets, too common as
// an ending to match as one: HTTP's credential headers and "pass". (None
// is under three bytes: that would turn off the trigram table.)
var exactKeys = []string{"authorization", "proxy_authorization", "cookie", "set_cookie", "pass"}

// New is a Redactor of every kind but Entropy's.
func New() *Redactor {
	r := &Redactor{}
	for _, k := range secretKeys {
		r.AddKey(k)
	}
	for _, k := range exactKeys {
		r.addExact(k)
	}
	r.pair('s', 'k', pairWord) // sk-..., sk_live_...
	for c := byte('B'); c <= 'S'; c++ {
		r.pair('A', c, pairWord) // AKIA, ASIA, ...
	}
	for _, p := range []string{"gh", "gi", "xo", "xa", "ey"} {
		r.pair(p[0], p[1], pairWord)
	}
	for _, p := range []string{"ht", "--"} { // webhook URLs and PEM blocks
		r.pair(p[0], p[1], pairOther)
	}
	for _, q := range []byte(" \"'") { // between a key and its separator
		r.pair(q, '=', pairOther)
		r.pair(q, ':', pairOther)
	}
	return r
}

// Disable stops redacting one kind (a name of Kinds); it reports whether
// the kind is known.
func (r *Redactor) Disable(kind string) bool {
	for k, name := range Kinds {
		if name == kind {
			r.off[k] = true
			return true
		}
	}
	return false
}

// Entropy turns on (or off) the redaction of long random-looking tokens
// (KindAPIKey): 20 to 512 letters, digits and -_+/= mixing upper case,
// lower case and digits, at 4 bits of entropy a character or more. It
// finds keys no pattern knows, at the cost of some false alarms, which an
// audit log can afford and a tool's result may not.
func (r *Redactor) Entropy(on bool) { r.entropy = on }

// AddKey adds a key name whose values are secrets, matched as the end of
// a key, case-insensitively ("session_id" also covers "app_session_id").
func (r *Redactor) AddKey(k string) {
	k = normKey(k)
	r.keys = append(r.keys, k)
	r.tailOf(k)
}

// addExact adds a key name matched whole.
func (r *Redactor) addExact(k string) {
	k = normKey(k)
	r.exact = append(r.exact, k)
	r.tailOf(k)
}

// tailOf marks the bytes key k may end with.
func (r *Redactor) tailOf(k string) {
	if len(k) < 3 {
		r.anyTail = true
	} else {
		r.tails[trigram(k[len(k)-3], k[len(k)-2], k[len(k)-1])] = true
	}
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
		r.pair(e, '=', pairKey)
		r.pair(e, ':', pairKey)
	}
}

// String returns s with every secret in it replaced, counting them by
// kind, and whether it changed anything.
func (r *Redactor) String(s string, n *Counts) (string, bool) {
	out, changed := r.patterns(s, n)
	if r.entropy && !r.off[KindAPIKey] {
		if e, ok := r.random(out, n); ok {
			return e, true
		}
	}
	return out, changed
}

// Value redacts v, the value of key: whole when key names a secret and v
// is a real value (not empty, a placeholder or redacted already), else
// what String finds in it.
func (r *Redactor) Value(key, v string, n *Counts) (string, bool) {
	if key != "" && !r.off[KindSecret] && r.SecretKey(key) && r.RealValue(v) {
		n[KindSecret]++
		return redacted[KindSecret], true
	}
	return r.String(v, n)
}

// patterns is String without the entropy pass.
func (r *Redactor) patterns(s string, n *Counts) (string, bool) {
	var b strings.Builder
	last := 0 // s[:last] is written to b (once b is in use)
	for j := 0; j+1 < len(s); {
		if j = r.scan(s, j); j+1 >= len(s) {
			break
		}
		// A secret may start at j, or a key may end at j with the
		// separator of a key=value secret after it.
		start := j
		end, k := r.token(s, j)
		if end <= j || r.off[k] || j < last {
			k = None
			if sep := s[j+1]; (sep == ':' || sep == '=') && !r.off[KindSecret] {
				if vs, ve := r.keyValue(s, j+1); ve > vs && vs >= last {
					start, end, k = vs, ve, KindSecret
				}
			}
		}
		if k == None {
			j++
			continue
		}
		if b.Cap() == 0 {
			b.Grow(len(s) + 32)
		}
		b.WriteString(s[last:start])
		b.WriteString(redacted[k])
		n[k]++
		last, j = end, end
	}
	if b.Cap() == 0 {
		return s, false
	}
	b.WriteString(s[last:])
	return b.String(), true
}

// token is the end and kind of the token that starts at j, if any.
func (r *Redactor) token(s string, j int) (int, Kind) {
	if j+1 >= len(s) {
		return 0, None
	}
	switch c, next := s[j], s[j+1]; {
	case c == 's' && next == 'k':
		return r.apiKey(s, j)
	case c == 'A':
		return r.aws(s, j)
	case c == 'g':
		return r.github(s, j)
	case c == 'x':
		return r.slack(s, j)
	case c == 'h' && next == 't':
		return r.webhook(s, j)
	case c == '-' && next == '-':
		return r.privateKey(s, j)
	case c == 'e' && next == 'y':
		return r.jwt(s, j)
	}
	return 0, None
}

// scan returns the first j at or after i where the pair s[j], s[j+1] is
// marked in r.pairs and a candidate, or len(s). It reads 32 pairs per jump, as
// filter.Scan reads bytes: a bit mask of the marked pairs and its
// trailing zeros, the last window overlapping the one before it.
func (r *Redactor) scan(s string, j int) int {
	t := &r.pairs
	n := len(s) - 1 // pairs start before n
	if n-j >= 32 {
		for {
			base := min(j, n-32)
			w := s[base : base+33]
			m := bit(t[uint16(w[0])|uint16(w[1])<<8]) | bit(t[uint16(w[1])|uint16(w[2])<<8])<<1 | bit(t[uint16(w[2])|uint16(w[3])<<8])<<2 | bit(t[uint16(w[3])|uint16(w[4])<<8])<<3 |
				bit(t[uint16(w[4])|uint16(w[5])<<8])<<4 | bit(t[uint16(w[5])|uint16(w[6])<<8])<<5 | bit(t[uint16(w[6])|uint16(w[7])<<8])<<6 | bit(t[uint16(w[7])|uint16(w[8])<<8])<<7 |
				bit(t[uint16(w[8])|uint16(w[9])<<8])<<8 | bit(t[uint16(w[9])|uint16(w[10])<<8])<<9 | bit(t[uint16(w[10])|uint16(w[11])<<8])<<10 | bit(t[uint16(w[11])|uint16(w[12])<<8])<<11 |
				bit(t[uint16(w[12])|uint16(w[13])<<8])<<12 | bit(t[uint16(w[13])|uint16(w[14])<<8])<<13 | bit(t[uint16(w[14])|uint16(w[15])<<8])<<14 | bit(t[uint16(w[15])|uint16(w[16])<<8])<<15 |
				bit(t[uint16(w[16])|uint16(w[17])<<8])<<16 | bit(t[uint16(w[17])|uint16(w[18])<<8])<<17 | bit(t[uint16(w[18])|uint16(w[19])<<8])<<18 | bit(t[uint16(w[19])|uint16(w[20])<<8])<<19 |
				bit(t[uint16(w[20])|uint16(w[21])<<8])<<20 | bit(t[uint16(w[21])|uint16(w[22])<<8])<<21 | bit(t[uint16(w[22])|uint16(w[23])<<8])<<22 | bit(t[uint16(w[23])|uint16(w[24])<<8])<<23 |
				bit(t[uint16(w[24])|uint16(w[25])<<8])<<24 | bit(t[uint16(w[25])|uint16(w[26])<<8])<<25 | bit(t[uint16(w[26])|uint16(w[27])<<8])<<26 | bit(t[uint16(w[27])|uint16(w[28])<<8])<<27 |
				bit(t[uint16(w[28])|uint16(w[29])<<8])<<28 | bit(t[uint16(w[29])|uint16(w[30])<<8])<<29 | bit(t[uint16(w[30])|uint16(w[31])<<8])<<30 | bit(t[uint16(w[31])|uint16(w[32])<<8])<<31
			for m >>= uint(j - base); m != 0; m &= m - 1 {
				if p := j + bits.TrailingZeros32(m); r.candidate(s, p) {
					return p
				}
			}
			if j = base + 32; j >= n {
				return len(s)
			}
		}
	}
	for ; j < n; j++ {
		if t[uint16(s[j])|uint16(s[j+1])<<8] != 0 && r.candidate(s, j) {
			return j
		}
	}
	return len(s)
}

// bit is 1 when a table entry is not 0, without a branch.
func bit(v uint8) uint32 { return (uint32(v) + 0xff) >> 8 }

// pair marks the two bytes a, b in the table.
func (r *Redactor) pair(a, b byte, what uint8) { r.pairs[uint16(a)|uint16(b)<<8] |= what }

// What a marked pair of bytes may be the start of. A pair marked as more
// than one thing is always a candidate.
const (
	pairWord  = 1 << iota // a token that starts a word (aws, github, slack, jwt)
	pairKey               // the last byte of a key and its separator
	pairOther             // anything else
)

// candidate reports whether the pair marked at p is worth a closer look:
// a token must start a word (the detectors check that again), and a key
// must end the way a secret key does, its last three bytes (keyValue
// checks that again). Rejecting the rest here costs a few jumps instead
// of a trip through redact's loop.
func (r *Redactor) candidate(s string, p int) bool {
	switch r.pairs[uint16(s[p])|uint16(s[p+1])<<8] {
	case pairWord:
		return p == 0 || !wordByte[s[p-1]]
	case pairKey:
		return p < 2 || r.anyTail || r.tails[trigram(s[p-2], s[p-1], s[p])]
	}
	return true
}

// wordByte holds the bytes a token may not follow (see boundary).
var wordByte = func() (t [256]bool) {
	for c := 0; c < 256; c++ {
		t[c] = isAlnum(byte(c)) || c == '_'
	}
	return t
}()

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
func (r *Redactor) aws(s string, i int) (int, Kind) {
	if len(s)-i < 20 || !boundary(s, i) {
		return 0, None
	}
	for _, p := range awsPrefixes {
		if s[i:i+4] == p {
			end := run(s, i+4, isUpperDigit)
			if end-i == 20 {
				return end, KindAWS
			}
		}
	}
	return 0, None
}

// github: ghp_, gho_, ghu_, ghs_ and ghr_ tokens, and fine-grained
// github_pat_ tokens.
func (r *Redactor) github(s string, i int) (int, Kind) {
	if !boundary(s, i) {
		return 0, None
	}
	if strings.HasPrefix(s[i:], "github_pat_") {
		if end := run(s, i+11, func(c byte) bool { return isAlnum(c) || c == '_' }); end-i-11 >= 22 {
			return end, KindGitHub
		}
		return 0, None
	}
	if len(s)-i >= 40 && s[i+1] == 'h' && strings.IndexByte("pousr", s[i+2]) >= 0 && s[i+3] == '_' {
		if end := run(s, i+4, isAlnum); end-i-4 >= 36 {
			return end, KindGitHub
		}
	}
	return 0, None
}

// slack: xoxb-, xoxp-, xoxa-, xoxo-, xoxs-, xoxr- and xapp- tokens.
func (r *Redactor) slack(s string, i int) (int, Kind) {
	if !boundary(s, i) || len(s)-i < 15 {
		return 0, None
	}
	start := 0
	switch {
	case s[i:i+3] == "xox" && strings.IndexByte("bpaosr", s[i+3]) >= 0 && s[i+4] == '-':
		start = i + 5
	case s[i:i+5] == "xapp-":
		start = i + 5
	default:
		return 0, None
	}
	if end := run(s, start, func(c byte) bool { return isAlnum(c) || c == '-' }); end-start >= 10 {
		return end, KindSlack
	}
	return 0, None
}

const slackHook = "hooks.slack.com/services/"

// webhook: an incoming-webhook URL, which is a credential in itself.
func (r *Redactor) webhook(s string, i int) (int, Kind) {
	rest := s[i:]
	var n int
	switch {
	case strings.HasPrefix(rest, "https://"+slackHook):
		n = len("https://" + slackHook)
	case strings.HasPrefix(rest, "http://"+slackHook):
		n = len("http://" + slackHook)
	default:
		return 0, None
	}
	if end := run(s, i+n, func(c byte) bool { return isAlnum(c) || c == '/' || c == '_' || c == '-' }); end-i-n >= 20 {
		return end, KindWebhook
	}
	return 0, None
}

// privateKey: a PEM block from its BEGIN ... PRIVATE KEY line to its END
// line, or to the end of the text when it was cut off.
func (r *Redactor) privateKey(s string, i int) (int, Kind) {
	const begin = "-----BEGIN "
	if !strings.HasPrefix(s[i:], begin) {
		return 0, None
	}
	eol := strings.Index(s[i+len(begin):], "-----")
	if eol < 0 || eol > 40 {
		return 0, None
	}
	label := s[i+len(begin) : i+len(begin)+eol]
	if !strings.HasSuffix(label, "PRIVATE KEY") {
		return 0, None
	}
	endMark := "-----END " + label + "-----"
	if j := strings.Index(s[i:], endMark); j >= 0 {
		return i + j + len(endMark), KindPrivateKey
	}
	return len(s), KindPrivateKey
}

// jwt: three base64url parts, the first two JSON objects ("eyJ" is how
// base64 of `{"` begins).
func (r *Redactor) jwt(s string, i int) (int, Kind) {
	if len(s)-i < 20 || s[i+1] != 'y' || s[i+2] != 'J' || !boundary(s, i) {
		return 0, None
	}
	p1 := run(s, i, isB64URL)
	if p1-i < 10 || p1 >= len(s) || s[p1] != '.' || !strings.HasPrefix(s[p1+1:], "eyJ") {
		return 0, None
	}
	p2 := run(s, p1+1, isB64URL)
	if p2-p1 < 10 || p2 >= len(s) || s[p2] != '.' {
		return 0, None
	}
	p3 := run(s, p2+1, isB64URL)
	if p3-p2-1 < 10 {
		return 0, None
	}
	return p3, KindJWT
}

func isKeyByte(c byte) bool { return isAlnum(c) || c == '_' || c == '-' || c == '.' }

// keyValue looks at the separator at i (= or :) and, when the key before
// it names a secret, returns where its value starts and ends.
func (r *Redactor) keyValue(s string, i int) (int, int) {
	// The key: skip spaces and a closing quote back from the separator.
	k := i
	for k > 0 && s[k-1] == ' ' {
		k--
	}
	if k > 0 && (s[k-1] == '"' || s[k-1] == '\'') {
		k--
	}
	if k < 3 || !r.anyTail && !r.tails[trigram(s[k-3], s[k-2], s[k-1])] {
		return 0, 0 // no key ends this way (a key is at least three bytes)
	}
	ke := k
	for k > 0 && isKeyByte(s[k-1]) {
		k--
	}
	if ke-k < 3 || !r.SecretKey(s[k:ke]) {
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
	end := delimited(s, v)
	if end < len(s) && s[end] == ' ' && isScheme(s[v:end]) {
		// "Authorization: Bearer abc": the credential is the word after
		// the scheme.
		w := end
		for w < len(s) && s[w] == ' ' {
			w++
		}
		if e, k := r.token(s, w); e > w && !r.off[k] {
			return 0, 0 // a token of a known kind: named as such
		}
		if e := delimited(s, w); e > w {
			return r.real(s, w, e) // the scheme stays: it is no secret
		}
	}
	return r.real(s, v, end)
}

// delimited is where an unquoted value from v ends.
func delimited(s string, v int) int {
	end := v
	for end < len(s) && !strings.ContainsRune(" \t\r\n,;&)}]\"'<>", rune(s[end])) {
		end++
	}
	return end
}

// isScheme reports whether w is an HTTP authentication scheme.
func isScheme(w string) bool {
	for _, s := range []string{"bearer", "basic", "token", "digest"} {
		if len(w) == len(s) && strings.EqualFold(w, s) {
			return true
		}
	}
	return false
}

// real drops values that are not secrets: empty, redacted already, or a
// placeholder.
func (r *Redactor) real(s string, start, end int) (int, int) {
	v := s[start:end]
	switch {
	case len(v) < 3, strings.HasPrefix(v, "[REDACTED"), strings.HasPrefix(v, "${"), strings.HasPrefix(v, "<"), v == "null", v == "true", v == "false", strings.Trim(v, "*x.") == "":
		return 0, 0
	}
	return start, end
}

// RealValue reports whether a whole string is a real secret value: not
// empty, a placeholder, a reference or redacted already.
func (r *Redactor) RealValue(v string) bool {
	s, e := r.real(v, 0, len(v))
	return e > s
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

// SecretKey reports whether a key name ends with one of the secret key
// names, or is one of the header-like ones (authorization, cookie);
// it compares in place, since it runs at every = and : of a text.
func (r *Redactor) SecretKey(key string) bool {
	if len(key) == 0 || r.lastBytes[key[len(key)-1]] == 0 {
		return false
	}
	for _, k := range r.exact {
		if len(key) == len(k) && sameKey(key, k) {
			return true
		}
	}
	for _, k := range r.keys {
		if len(key) >= len(k) && sameKey(key[len(key)-len(k):], k) {
			return true
		}
	}
	return false
}

// sameKey reports whether key, normalized as normKey does, is k.
func sameKey(key, k string) bool {
	for i := 0; i < len(k); i++ {
		c := key[i]
		switch {
		case c >= 'A' && c <= 'Z':
			c += 'a' - 'A'
		case c == '-' || c == '.':
			c = '_'
		}
		if c != k[i] {
			return false
		}
	}
	return true
}

// apiKey: sk- and sk_ keys (sk-live-..., sk_live_..., sk-proj-...): at
// least 20 letters, digits, - and _ after the prefix, with a digit.
func (r *Redactor) apiKey(s string, i int) (int, Kind) {
	if len(s)-i < 23 || (s[i+2] != '-' && s[i+2] != '_') || !boundary(s, i) {
		return 0, None
	}
	end := run(s, i+3, func(c byte) bool { return isAlnum(c) || c == '-' || c == '_' })
	if end-i-3 < 20 || strings.IndexAny(s[i+3:end], "0123456789") < 0 {
		return 0, None
	}
	return end, KindAPIKey
}

// random replaces long random-looking tokens (see Entropy).
func (r *Redactor) random(s string, n *Counts) (string, bool) {
	var b strings.Builder
	last := 0
	for i := 0; i < len(s); {
		if !isTokenByte(s[i]) {
			i++
			continue
		}
		end := run(s, i, isTokenByte)
		if end-i >= 20 && end-i <= 512 && looksRandom(s[i:end]) {
			if b.Cap() == 0 {
				b.Grow(len(s))
			}
			b.WriteString(s[last:i])
			b.WriteString(redacted[KindAPIKey])
			n[KindAPIKey]++
			last = end
		}
		i = end
	}
	if b.Cap() == 0 {
		return s, false
	}
	b.WriteString(s[last:])
	return b.String(), true
}

func isTokenByte(c byte) bool { return isB64URL(c) || c == '+' || c == '/' || c == '=' }

// looksRandom: upper case, lower case and digits all present, and at
// least 4 bits of Shannon entropy a byte (English words, paths, hex
// digests and UUIDs fall below one or the other).
func looksRandom(t string) bool {
	var upper, lower, digit bool
	var freq [256]int
	for i := 0; i < len(t); i++ {
		c := t[i]
		freq[c]++
		switch {
		case c >= 'A' && c <= 'Z':
			upper = true
		case c >= 'a' && c <= 'z':
			lower = true
		case c >= '0' && c <= '9':
			digit = true
		}
	}
	if !upper || !lower || !digit {
		return false
	}
	h, l := 0.0, float64(len(t))
	for _, f := range freq {
		if f > 0 {
			p := float64(f) / l
			h -= p * math.Log2(p)
		}
	}
	return h >= 4
}

// keyCode maps a byte of a key to five bits, the same for the bytes
// normKey makes the same (a and A, _ and - and .); bytes that are not in
// keys share a code.
var keyCode = func() (t [256]uint16) {
	for c := 'a'; c <= 'z'; c++ {
		t[c] = uint16(c-'a') + 1
		t[c-'a'+'A'] = uint16(c-'a') + 1
	}
	t['_'], t['-'], t['.'] = 27, 27, 27
	for c := '0'; c <= '9'; c++ {
		t[c] = 28
	}
	return t
}()

// trigram indexes the table of the last three bytes of keys.
func trigram(a, b, c byte) uint16 { return keyCode[a]<<10 | keyCode[b]<<5 | keyCode[c] }
