package wasm

import (
	"bytes"
	"crypto/hmac"
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"math"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	abi "github.com/nexus-mcp/nexus/internal/filterabi"
)

// A compiled Rego policy evaluates most builtins inside the module; the
// rest it calls back into the host for, by name, through opa_builtinN.
// Nexus implements the pure ones here (strings, regex, JSON, time,
// hashes): their result depends only on their arguments (and, for
// time.now_ns, on the clock, read once per evaluation). The impure ones
// are refused when the policy loads, so a filter can never reach the
// network or the OPA runtime from inside its sandbox.

// opaBuiltin is one host-provided builtin.
type opaBuiltin struct {
	name  string
	arity int
	fn    func(c *builtinCall, args []any) (any, error)
}

// opaImpure are the builtins a filter may never call, with what each
// would reach.
var opaImpure = map[string]string{
	"http.send":              "the network",
	"net.lookup_ip_addr":     "DNS",
	"opa.runtime":            "the OPA runtime's environment",
	"rand.intn":              "randomness: the same event would get different decisions",
	"uuid.rfc4122":           "randomness: the same event would get different decisions",
	"providers.aws.sign_req": "credentials",
}

// OPABuiltins lists the builtins Nexus provides to Rego policies beyond
// those OPA compiles into the module, sorted.
func OPABuiltins() []string {
	names := make([]string, 0, len(opaBuiltins))
	for n := range opaBuiltins {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

var opaBuiltins = map[string]opaBuiltin{}

func init() {
	for _, b := range []opaBuiltin{
		{"sprintf", 2, biSprintf},
		{"strings.any_prefix_match", 2, func(_ *builtinCall, a []any) (any, error) { return anyMatch(a, strings.HasPrefix) }},
		{"strings.any_suffix_match", 2, func(_ *builtinCall, a []any) (any, error) { return anyMatch(a, strings.HasSuffix) }},
		{"strings.count", 2, str2(func(s, sub string) (any, error) { return strings.Count(s, sub), nil })},
		{"indexof_n", 2, str2(biIndexOfN)},
		{"hex.encode", 1, str1(func(s string) (any, error) { return hex.EncodeToString([]byte(s)), nil })},
		{"hex.decode", 1, str1(func(s string) (any, error) {
			b, err := hex.DecodeString(s)
			return string(b), err
		})},
		{"base64url.encode_no_pad", 1, str1(func(s string) (any, error) { return base64.RawURLEncoding.EncodeToString([]byte(s)), nil })},
		{"glob.quote_meta", 1, str1(biQuoteMeta)},
		{"regex.find_n", 3, biFindN},
		{"regex.replace", 3, biRegexReplace},
		{"regex.split", 2, str2(func(p, s string) (any, error) {
			re, err := compileRegex(p)
			if err != nil {
				return nil, err
			}
			return re.Split(s, -1), nil
		})},
		{"json.marshal_with_options", 2, biMarshalWithOptions},
		{"urlquery.encode", 1, str1(func(s string) (any, error) { return url.QueryEscape(s), nil })},
		{"urlquery.decode", 1, str1(func(s string) (any, error) { return url.QueryUnescape(s) })},
		{"urlquery.encode_object", 1, biEncodeObject},
		{"urlquery.decode_object", 1, str1(biDecodeObject)},
		{"time.now_ns", 0, func(c *builtinCall, _ []any) (any, error) { return c.now(), nil }},
		{"time.parse_rfc3339_ns", 1, str1(func(s string) (any, error) { return parseTime(time.RFC3339, s) })},
		{"time.parse_ns", 2, str2(parseTime)},
		{"time.parse_duration_ns", 1, str1(func(s string) (any, error) {
			d, err := time.ParseDuration(s)
			return int64(d), err
		})},
		{"time.date", 1, timeOf(func(t time.Time) any { return []any{t.Year(), int(t.Month()), t.Day()} })},
		{"time.clock", 1, timeOf(func(t time.Time) any { return []any{t.Hour(), t.Minute(), t.Second()} })},
		{"time.weekday", 1, timeOf(func(t time.Time) any { return t.Weekday().String() })},
		{"time.add_date", 4, biAddDate},
		{"time.format", 1, biTimeFormat},
		{"crypto.md5", 1, digest(md5.New)},
		{"crypto.sha1", 1, digest(sha1.New)},
		{"crypto.sha256", 1, digest(sha256.New)},
		{"crypto.hmac.md5", 2, mac(md5.New)},
		{"crypto.hmac.sha1", 2, mac(sha1.New)},
		{"crypto.hmac.sha256", 2, mac(sha256.New)},
		{"crypto.hmac.sha512", 2, mac(sha512.New)},
		{"crypto.hmac.equal", 2, str2(func(a, b string) (any, error) { return hmac.Equal([]byte(a), []byte(b)), nil })},
		{"numbers.range_step", 3, biRangeStep},
		{"object.subset", 2, func(_ *builtinCall, a []any) (any, error) { return subset(a[0], a[1]), nil }},
		{"internal.print", 1, biPrint},
		{"trace", 1, func(c *builtinCall, a []any) (any, error) {
			c.log(abi.LevelDebug, "trace: "+display(a[0]))
			return true, nil
		}},
	} {
		opaBuiltins[b.name] = b
	}
}

func str1(fn func(string) (any, error)) func(*builtinCall, []any) (any, error) {
	return func(_ *builtinCall, a []any) (any, error) {
		s, err := argStrings(a, 1)
		if err != nil {
			return nil, err
		}
		return fn(s[0])
	}
}

func str2(fn func(string, string) (any, error)) func(*builtinCall, []any) (any, error) {
	return func(_ *builtinCall, a []any) (any, error) {
		s, err := argStrings(a, 2)
		if err != nil {
			return nil, err
		}
		return fn(s[0], s[1])
	}
}

// argStrings reads the first n operands, each a string.
func argStrings(a []any, n int) ([]string, error) {
	out := make([]string, n)
	for i := range n {
		s, err := argString(a, i)
		if err != nil {
			return nil, err
		}
		out[i] = s
	}
	return out, nil
}

func argString(a []any, i int) (string, error) {
	s, ok := a[i].(string)
	if !ok {
		return "", fmt.Errorf("operand %d must be a string, not %s", i+1, typeName(a[i]))
	}
	return s, nil
}

func argInt(a []any, i int) (int64, error) {
	n, ok := a[i].(json.Number)
	if !ok {
		return 0, fmt.Errorf("operand %d must be a number, not %s", i+1, typeName(a[i]))
	}
	v, err := n.Int64()
	if err != nil {
		return 0, fmt.Errorf("operand %d must be an integer, not %s", i+1, n)
	}
	return v, nil
}

func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case json.Number:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

// display renders a value as sprintf's %v does in OPA: strings bare,
// numbers as written, the rest as JSON.
func display(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case json.Number:
		return x.String()
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// biSprintf formats with Go's verbs, as OPA does: integers as integers,
// other numbers as floats, composite values as JSON.
func biSprintf(_ *builtinCall, a []any) (any, error) {
	format, err := argString(a, 0)
	if err != nil {
		return nil, err
	}
	list, ok := a[1].([]any)
	if !ok {
		return nil, fmt.Errorf("operand 2 must be an array, not %s", typeName(a[1]))
	}
	args := make([]any, len(list))
	for i, v := range list {
		switch x := v.(type) {
		case json.Number:
			if n, err := x.Int64(); err == nil {
				args[i] = n
			} else if f, err := x.Float64(); err == nil {
				args[i] = f
			} else {
				args[i] = x.String()
			}
		case string, bool:
			args[i] = x
		default:
			args[i] = display(x)
		}
	}
	return fmt.Sprintf(format, args...), nil
}

func anyMatch(a []any, match func(s, affix string) bool) (any, error) {
	strs := func(i int) ([]string, error) {
		switch x := a[i].(type) {
		case string:
			return []string{x}, nil
		case []any:
			out := make([]string, len(x))
			for j, v := range x {
				s, ok := v.(string)
				if !ok {
					return nil, fmt.Errorf("operand %d must hold only strings", i+1)
				}
				out[j] = s
			}
			return out, nil
		}
		return nil, fmt.Errorf("operand %d must be a string, an array or a set of strings, not %s", i+1, typeName(a[i]))
	}
	search, err := strs(0)
	if err != nil {
		return nil, err
	}
	base, err := strs(1)
	if err != nil {
		return nil, err
	}
	for _, s := range search {
		for _, b := range base {
			if match(s, b) {
				return true, nil
			}
		}
	}
	return false, nil
}

// biIndexOfN lists every index (in characters, as indexof) where needle
// starts in s.
func biIndexOfN(s, needle string) (any, error) {
	out := []any{}
	if needle == "" {
		return out, nil
	}
	for off := 0; off <= len(s); {
		i := strings.Index(s[off:], needle)
		if i < 0 {
			break
		}
		out = append(out, utf8.RuneCountInString(s[:off+i]))
		_, size := utf8.DecodeRuneInString(s[off+i:])
		off += i + max(size, 1)
	}
	return out, nil
}

func biQuoteMeta(s string) (any, error) {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]{}\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String(), nil
}

// regexCache keeps compiled patterns: a policy uses a handful, on every
// call. It is bounded; past the bound, patterns are compiled per call.
var regexCache struct {
	sync.Mutex
	m map[string]*regexp.Regexp
}

const maxRegexCache = 256

func compileRegex(p string) (*regexp.Regexp, error) {
	regexCache.Lock()
	re, ok := regexCache.m[p]
	regexCache.Unlock()
	if ok {
		return re, nil
	}
	re, err := regexp.Compile(p)
	if err != nil {
		return nil, err
	}
	regexCache.Lock()
	if regexCache.m == nil {
		regexCache.m = map[string]*regexp.Regexp{}
	}
	if len(regexCache.m) < maxRegexCache {
		regexCache.m[p] = re
	}
	regexCache.Unlock()
	return re, nil
}

func biFindN(_ *builtinCall, a []any) (any, error) {
	ps, err := argStrings(a, 2)
	if err != nil {
		return nil, err
	}
	n, err := argInt(a, 2)
	if err != nil {
		return nil, err
	}
	s := ps[1]
	re, err := compileRegex(ps[0])
	if err != nil {
		return nil, err
	}
	out := []any{}
	for _, m := range re.FindAllString(s, int(max(n, -1))) {
		out = append(out, m)
	}
	return out, nil
}

func biRegexReplace(_ *builtinCall, a []any) (any, error) {
	s, err := argStrings(a, 3) // value, pattern, replacement
	if err != nil {
		return nil, err
	}
	re, err := compileRegex(s[1])
	if err != nil {
		return nil, err
	}
	return re.ReplaceAllString(s[0], s[2]), nil
}

func biMarshalWithOptions(_ *builtinCall, a []any) (any, error) {
	opts, ok := a[1].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("operand 2 must be an object, not %s", typeName(a[1]))
	}
	prefix, indent, pretty := "", "\t", false
	for k, v := range opts {
		switch k {
		case "pretty":
			b, ok := v.(bool)
			if !ok {
				return nil, errors.New("pretty must be a boolean")
			}
			pretty = b
		case "prefix", "indent":
			s, ok := v.(string)
			if !ok {
				return nil, fmt.Errorf("%s must be a string", k)
			}
			if k == "prefix" {
				prefix = s
			} else {
				indent = s
			}
			if _, set := opts["pretty"]; !set {
				pretty = true
			}
		default:
			return nil, fmt.Errorf("unknown option %q (pretty, prefix, indent)", k)
		}
	}
	if !pretty {
		b, err := json.Marshal(a[0])
		return string(b), err
	}
	b, err := json.MarshalIndent(a[0], prefix, indent)
	return string(b), err
}

func biEncodeObject(_ *builtinCall, a []any) (any, error) {
	obj, ok := a[0].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("operand 1 must be an object, not %s", typeName(a[0]))
	}
	q := url.Values{}
	for k, v := range obj {
		switch x := v.(type) {
		case string:
			q.Add(k, x)
		case []any:
			for _, e := range x {
				s, ok := e.(string)
				if !ok {
					return nil, fmt.Errorf("%s: values must be strings", k)
				}
				q.Add(k, s)
			}
		default:
			return nil, fmt.Errorf("%s: a value must be a string, an array or a set of strings", k)
		}
	}
	return q.Encode(), nil
}

func biDecodeObject(s string) (any, error) {
	q, err := url.ParseQuery(s)
	if err != nil {
		return nil, err
	}
	out := map[string]any{}
	for k, vs := range q {
		list := make([]any, len(vs))
		for i, v := range vs {
			list[i] = v
		}
		out[k] = list
	}
	return out, nil
}

func parseTime(layout, value string) (any, error) {
	t, err := time.Parse(layout, value)
	if err != nil {
		return nil, err
	}
	return t.UnixNano(), nil
}

// timeArg reads ns or [ns, tz] (or [ns, tz, layout] where layout is
// asked for).
func timeArg(v any) (time.Time, string, error) {
	var tz, layout string
	ns := v
	if arr, ok := v.([]any); ok {
		if len(arr) < 1 || len(arr) > 3 {
			return time.Time{}, "", errors.New("operand 1 must be a number or an array [ns, timezone]")
		}
		ns = arr[0]
		if len(arr) > 1 {
			s, ok := arr[1].(string)
			if !ok {
				return time.Time{}, "", errors.New("the timezone must be a string")
			}
			tz = s
		}
		if len(arr) > 2 {
			s, ok := arr[2].(string)
			if !ok {
				return time.Time{}, "", errors.New("the layout must be a string")
			}
			layout = s
		}
	}
	n, err := argInt([]any{ns}, 0)
	if err != nil {
		return time.Time{}, "", err
	}
	t := time.Unix(0, n).UTC()
	switch tz {
	case "", "UTC":
	default:
		loc, err := time.LoadLocation(tz)
		if err != nil {
			return time.Time{}, "", err
		}
		t = t.In(loc)
	}
	return t, layout, nil
}

func timeOf(fn func(time.Time) any) func(*builtinCall, []any) (any, error) {
	return func(_ *builtinCall, a []any) (any, error) {
		t, _, err := timeArg(a[0])
		if err != nil {
			return nil, err
		}
		return fn(t), nil
	}
}

func biAddDate(_ *builtinCall, a []any) (any, error) {
	var n [4]int64
	for i := range n {
		v, err := argInt(a, i)
		if err != nil {
			return nil, err
		}
		n[i] = v
	}
	for _, v := range n[1:] {
		if v > math.MaxInt32 || v < math.MinInt32 {
			return nil, errors.New("years, months and days must fit in 32 bits")
		}
	}
	t := time.Unix(0, n[0]).UTC().AddDate(int(n[1]), int(n[2]), int(n[3]))
	if t.Year() < 1678 || t.Year() > 2261 {
		return nil, errors.New("the result is outside the range of nanoseconds since 1970")
	}
	return t.UnixNano(), nil
}

func biTimeFormat(_ *builtinCall, a []any) (any, error) {
	t, layout, err := timeArg(a[0])
	if err != nil {
		return nil, err
	}
	if layout == "" {
		layout = time.RFC3339Nano
	}
	return t.Format(layout), nil
}

func digest(h func() hash.Hash) func(*builtinCall, []any) (any, error) {
	return str1(func(s string) (any, error) {
		d := h()
		d.Write([]byte(s))
		return hex.EncodeToString(d.Sum(nil)), nil
	})
}

func mac(h func() hash.Hash) func(*builtinCall, []any) (any, error) {
	return str2(func(x, key string) (any, error) {
		m := hmac.New(h, []byte(key))
		m.Write([]byte(x))
		return hex.EncodeToString(m.Sum(nil)), nil
	})
}

// maxRange bounds numbers.range_step: a policy cannot make the host
// build an array it could not hold.
const maxRange = 1 << 20

func biRangeStep(_ *builtinCall, a []any) (any, error) {
	var n [3]int64
	for i := range n {
		v, err := argInt(a, i)
		if err != nil {
			return nil, err
		}
		n[i] = v
	}
	from, to, step := n[0], n[1], n[2]
	if step <= 0 {
		return nil, errors.New("step must be a positive integer")
	}
	span := to - from
	if span < 0 {
		span = -span
	}
	if span/step >= maxRange {
		return nil, fmt.Errorf("the range would hold over %d numbers", maxRange)
	}
	out := []any{}
	if from <= to {
		for v := from; v <= to; v += step {
			out = append(out, v)
		}
	} else {
		for v := from; v >= to; v -= step {
			out = append(out, v)
		}
	}
	return out, nil
}

// subset reports whether sub is within super: objects key by key, arrays
// (and sets, which arrive as arrays) element by element.
func subset(super, sub any) bool {
	switch s := sub.(type) {
	case map[string]any:
		p, ok := super.(map[string]any)
		if !ok {
			return false
		}
		for k, v := range s {
			pv, ok := p[k]
			if !ok || !subset(pv, v) {
				return false
			}
		}
		return true
	case []any:
		p, ok := super.([]any)
		if !ok {
			return false
		}
		for _, v := range s {
			found := false
			for _, pv := range p {
				if jsonEqual(pv, v) {
					found = true
					break
				}
			}
			if !found {
				return false
			}
		}
		return true
	}
	return jsonEqual(super, sub)
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

// biPrint is print(): each operand arrives as the set of its values (empty
// when undefined); the line goes to the filter's log.
func biPrint(c *builtinCall, a []any) (any, error) {
	ops, ok := a[0].([]any)
	if !ok {
		return nil, errors.New("print: operands must be an array")
	}
	parts := make([]string, len(ops))
	for i, op := range ops {
		set, _ := op.([]any)
		if len(set) == 0 {
			parts[i] = "<undefined>"
			continue
		}
		vals := make([]string, len(set))
		for j, v := range set {
			vals[j] = display(v)
		}
		parts[i] = strings.Join(vals, ", ")
	}
	c.log(abi.LevelInfo, strings.Join(parts, " "))
	return nil, nil
}
