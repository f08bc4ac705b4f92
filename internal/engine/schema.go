package engine

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"
	"unsafe"

	"github.com/hashicorp/go-hclog"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/nexus-mcp/nexus/internal/schemaerr"
	"github.com/nexus-mcp/nexus/internal/wire"
)

// schemas compiles tool schemas once and keeps them by content, so a tool
// list refresh that does not change a schema costs nothing. Each tool's
// schema is also kept by tool, so a call finds it without hashing it. A
// compiled schema stays only while some tool's current schema is it: a
// server that changes its schemas on every refresh does not grow the
// cache.
type schemas struct {
	log    hclog.Logger // told once about each schema that does not compile
	mu     sync.Mutex
	cache  map[[32]byte]*compiled
	byTool map[schemaKey]toolSchema
}

type schemaKey struct {
	server, tool string
	output       bool
}

type toolSchema struct {
	raw json.RawMessage // what c was compiled from
	c   *compiled
}

type compiled struct {
	schema *jsonschema.Schema
	err    error // the schema did not compile: the tool works unvalidated

	// blind: no keyword anywhere in the schema reads a string's
	// contents, so validation sees only that a value is a string (see
	// stringBlind), and arguments are validated without their text.
	blind bool

	key  [32]byte // its key in schemas.cache
	refs int      // tools whose current schema it is (under schemas.mu)
}

// maxSchemaSize bounds what is compiled; a larger schema is not used for
// validation (with a warning), it does not fail the tool.
const maxSchemaSize = 1 << 20

// noLoader refuses every $ref outside the schema: a server's schema must
// not make the host read files or reach the network.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("external $ref %q is not followed", url)
}

// get returns the compiled input (or output) schema of server's tool; a
// schema that does not compile is logged (once: the result is cached) and
// not used.
func (s *schemas) get(server, tool string, output bool, raw json.RawMessage) *compiled {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil
	}
	tk := schemaKey{server, tool, output}
	s.mu.Lock()
	defer s.mu.Unlock()
	prev, had := s.byTool[tk]
	if had && bytes.Equal(prev.raw, raw) {
		return prev.c
	}
	if s.cache == nil {
		s.cache = map[[32]byte]*compiled{}
		s.byTool = map[schemaKey]toolSchema{}
	}
	key := sha256.Sum256(raw)
	c, ok := s.cache[key]
	if !ok {
		c = compileSchema(raw)
		c.key = key
		s.cache[key] = c
	}
	c.refs++
	if had {
		// The tool's schema changed: the old one goes once no tool has it.
		if prev.c.refs--; prev.c.refs == 0 {
			delete(s.cache, prev.c.key)
		}
	}
	s.byTool[tk] = toolSchema{raw, c}
	if !ok && c.err != nil && s.log != nil {
		s.log.Warn("tool schema does not compile; the tool is used without validation",
			"server", server, "tool", tool, "error", c.err)
	}
	return c
}

func compileSchema(raw json.RawMessage) *compiled {
	if len(raw) > maxSchemaSize {
		return &compiled{err: fmt.Errorf("schema is %d bytes, over the %d byte limit", len(raw), maxSchemaSize)}
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return &compiled{err: fmt.Errorf("schema is not JSON: %w", err)}
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(noLoader{})
	c.DefaultDraft(jsonschema.Draft2020)
	const loc = "mem:///schema.json"
	if err := c.AddResource(loc, doc); err != nil {
		return &compiled{err: err}
	}
	sch, err := c.Compile(loc)
	if err != nil {
		return &compiled{err: err}
	}
	return &compiled{schema: sch, blind: stringBlind(doc)}
}

// stringReaders are the keywords (of every draft) whose outcome depends on
// what a string value says, not only on its being a string: its length,
// pattern and format, its content encoding, and equality (enum, const,
// uniqueItems). Every other keyword looks at types, keys and numbers.
var stringReaders = map[string]bool{
	"minLength": true, "maxLength": true, "pattern": true, "format": true,
	"contentEncoding": true, "contentMediaType": true, "contentSchema": true,
	"enum": true, "const": true, "uniqueItems": true,
}

// stringBlind reports whether no object anywhere in the schema document
// has a key that is a string-reading keyword. It looks at every key, also
// property names and $defs that merely share a keyword's name: a false
// "no" only costs speed, a false "yes" would change a verdict.
func stringBlind(doc any) bool {
	switch v := doc.(type) {
	case map[string]any:
		for k, x := range v {
			if stringReaders[k] || !stringBlind(x) {
				return false
			}
		}
	case []any:
		for _, x := range v {
			if !stringBlind(x) {
				return false
			}
		}
	}
	return true
}

// validate checks raw against c. raw is JSON already checked where it
// came in (rawArgs, a filter's output decoded by encoding/json, a
// result's frame), so it is not scanned again: a 1 MB argument was.
func (c *compiled) validate(raw json.RawMessage) ([]string, error) {
	if c == nil || c.schema == nil {
		return nil, nil
	}
	if len(raw) == 0 {
		raw = json.RawMessage("{}")
	}
	v, err := decodeChecked(raw, c.blind)
	if err != nil {
		return nil, err
	}
	err = c.schema.Validate(v)
	if err == nil {
		return nil, nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return nil, err
	}
	return schemaerr.Lines(ve), nil
}

// decodeJSON decodes a document the way jsonschema.UnmarshalJSON does
// (objects as map[string]any, arrays as []any, numbers exact as
// json.Number) for the validator. It is on every call's path, where a
// json.Decoder costs more than the validation itself, so a document that
// wire.ValidJSON accepts is taken apart here in one pass; anything else gets
// the library's error.
//
// The strings and numbers it returns share data's memory: the value lives
// only while one validation runs, and nothing writes to data meanwhile, so
// a 1 MB argument is not copied to be checked. With blind (the schema
// reads no string's contents) every string value is "": the validator
// copies each string it is given, whatever the schema.
func decodeJSON(data []byte, blind bool) (any, error) {
	if !wire.ValidJSON(data) {
		return jsonschema.UnmarshalJSON(bytes.NewReader(data))
	}
	d := jsonDecoder{data: data, blind: blind}
	return d.value(0), nil
}

// decodeChecked is decodeJSON for data known to be valid JSON, without
// scanning it first. Should it not be after all, the decoder notices (a
// byte where the grammar wants another, the end where it wants more) and
// the document goes the checking way, which reports the error.
func decodeChecked(data []byte, blind bool) (any, error) {
	d := jsonDecoder{data: data, blind: blind}
	v := d.value(0)
	if d.space(); d.bad || d.i != len(data) {
		return decodeJSON(data, blind)
	}
	return v, nil
}

// jsonDecoder walks a document that should be valid JSON. It checks what
// it needs to take the document apart (each structural byte, each literal,
// each string's end) and nothing more: a document it cannot take apart
// sets bad, and what it returned is then garbage.
type jsonDecoder struct {
	data  []byte
	i     int
	blind bool // string values decode as ""
	bad   bool // not JSON: the caller asks the library why
}

func (d *jsonDecoder) space() { d.i = wire.SkipWS(d.data, d.i) }

// peek skips space and returns the next byte, not consuming it; 0 (which
// no JSON value starts with) at the end.
func (d *jsonDecoder) peek() byte {
	if d.space(); d.i < len(d.data) {
		return d.data[d.i]
	}
	d.bad = true
	return 0
}

// next is peek that consumes the byte.
func (d *jsonDecoder) next() byte {
	c := d.peek()
	if !d.bad {
		d.i++
	}
	return c
}

// value decodes the value at d.i; depth bounds nesting as wire.ValidJSON
// does, so a document that was never checked cannot exhaust the stack.
func (d *jsonDecoder) value(depth int) any {
	if depth > wire.MaxDepth {
		d.bad = true
		return nil
	}
	switch d.peek() {
	case '{':
		d.i++
		m := map[string]any{}
		if d.peek() == '}' {
			d.i++
			return m
		}
		for !d.bad {
			if d.peek() != '"' {
				break
			}
			k := d.str(false)
			if d.next() != ':' {
				break
			}
			m[k] = d.value(depth + 1)
			switch d.next() {
			case '}':
				return m
			case ',':
				continue
			}
			break
		}
	case '[':
		d.i++
		a := []any{}
		if d.peek() == ']' {
			d.i++
			return a
		}
		for !d.bad {
			a = append(a, d.value(depth+1))
			switch d.next() {
			case ']':
				return a
			case ',':
				continue
			}
			break
		}
	case '"':
		return d.str(d.blind)
	case 't':
		return d.literal("true", true)
	case 'f':
		return d.literal("false", false)
	case 'n':
		return d.literal("null", nil)
	default:
		start := d.i
		for d.i < len(d.data) && strings.IndexByte("+-.0123456789eE", d.data[d.i]) >= 0 {
			d.i++
		}
		if d.i > start {
			return json.Number(view(d.data[start:d.i]))
		}
	}
	d.bad = true
	return nil
}

// literal consumes word, which v stands for.
func (d *jsonDecoder) literal(word string, v any) any {
	if !bytes.HasPrefix(d.data[d.i:], []byte(word)) {
		d.bad = true
		return nil
	}
	d.i += len(word)
	return v
}

// str decodes the string at d.i ("" when blank); one with escapes or
// invalid UTF-8 (which becomes U+FFFD) is left to encoding/json.
func (d *jsonDecoder) str(blank bool) string {
	start := d.i
	end, escaped, err := wire.StringEnd(d.data, d.i)
	if err != nil {
		d.bad = true
		return ""
	}
	d.i = end
	if blank {
		return ""
	}
	tok := d.data[start:end]
	if !escaped && utf8.Valid(tok) {
		return view(tok[1 : len(tok)-1])
	}
	s, err := wire.Unquote(tok)
	if err != nil {
		d.bad = true
	}
	return s
}

// view is b as a string without copying it; b must not change while the
// string is in use.
func view(b []byte) string {
	return unsafe.String(unsafe.SliceData(b), len(b))
}
