package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/nexus-mcp/nexus/internal/wire"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// TestSchemaCache: a schema is compiled once however many tools and calls
// use it; one that does not compile is remembered as such and validates
// nothing.
func TestSchemaCache(t *testing.T) {
	var s schemas
	raw := json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}}}`)
	a := s.get("x", "t", false, raw)
	b := s.get("y", "u", false, append(json.RawMessage(nil), raw...))
	if a == nil || a != b || a.schema == nil || len(s.cache) != 1 {
		t.Fatalf("the same schema compiled twice (%p, %p, %d cached)", a, b, len(s.cache))
	}
	if probs, err := a.validate(json.RawMessage(`{"n": "x"}`)); err != nil || len(probs) != 1 {
		t.Fatalf("cached schema does not validate: %v %v", probs, err)
	}
	bad := s.get("x", "bad", false, json.RawMessage(`{"type": 12}`))
	if bad == nil || bad.err == nil || bad.schema != nil {
		t.Fatalf("a broken schema compiled: %+v", bad)
	}
	if s.get("x", "bad", false, json.RawMessage(`{"type": 12}`)) != bad || len(s.cache) != 2 {
		t.Fatal("a broken schema is compiled again on every call")
	}
	if probs, err := bad.validate(json.RawMessage(`{"anything": 1}`)); err != nil || probs != nil {
		t.Fatalf("a broken schema refused a call: %v %v", probs, err)
	}
	if s.get("x", "none", false, nil) != nil || s.get("x", "none", false, json.RawMessage("  ")) != nil {
		t.Fatal("an absent schema is not nil")
	}
}

func BenchmarkSchemaValidate(b *testing.B) {
	var s schemas
	raw := json.RawMessage(`{"type":"object","properties":{"message":{"type":"string"}},"required":["message"]}`)
	args := json.RawMessage(`{"message":"hello"}`)
	b.ReportAllocs()
	for b.Loop() {
		if probs, err := s.get("s", "echo", false, raw).validate(args); err != nil || len(probs) > 0 {
			b.Fatal(probs, err)
		}
	}
}

// FuzzDecodeJSON: the validator's decoder gives what the library's would.
func FuzzDecodeJSON(f *testing.F) {
	for _, s := range []string{
		`{}`, `[]`, `{"message":"hello","n":3}`, ` { "a" : [1, -2.5e10, true, false, null, {"b": "\u00e9\n"}] } `,
		`"s\"q"`, `12345678901234567890123`, `{"a":1,"a":2}`, `"\xff"`, `[[[[]]]]`, `{"a":}`, `{} {}`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := decodeJSON(data, false)
		want, werr := jsonschema.UnmarshalJSON(bytes.NewReader(data))
		if (err == nil) != (werr == nil) {
			t.Fatalf("%q: error %v, library %v", data, err, werr)
		}
		if err == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: decoded %#v, library %#v", data, got, want)
		}
		if err != nil {
			return
		}
		// Blind, every string value (not key) is "" and the rest is the same.
		blind, _ := decodeJSON(data, true)
		if want := blank(want); !reflect.DeepEqual(blind, want) {
			t.Fatalf("%q: blind decoded %#v, want %#v", data, blind, want)
		}
	})
}

// blank is v with every string value "".
func blank(v any) any {
	switch x := v.(type) {
	case string:
		return ""
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = blank(e)
		}
		return m
	case []any:
		a := make([]any, len(x))
		for i, e := range x {
			a[i] = blank(e)
		}
		return a
	}
	return v
}

// FuzzBlindSchema: for a schema stringBlind accepts, validating a document
// without its strings' text gives the same problems as with it; and a
// schema with any string-reading keyword is never blind.
func FuzzBlindSchema(f *testing.F) {
	for _, c := range [][2]string{
		{`{"type":"object","properties":{"message":{"type":"string"}},"required":["message"]}`, `{"message":"hello"}`},
		{`{"type":"object","properties":{"message":{"type":"string"}},"required":["message"]}`, `{"message":7}`},
		{`{"type":"array","items":{"type":["string","null"]},"minItems":2}`, `["a",null,"b"]`},
		{`{"type":"array","uniqueItems":true}`, `["a","b"]`},
		{`{"enum":["a","b"]}`, `"c"`},
		{`{"const":"x"}`, `"x"`},
		{`{"maxLength":2}`, `"abc"`},
		{`{"pattern":"^a"}`, `"ba"`},
		{`{"format":"email"}`, `"x"`},
		{`{"properties":{"a":{"$ref":"#/$defs/s"}},"$defs":{"s":{"type":"string","minLength":3}}}`, `{"a":"xy"}`},
		{`{"additionalProperties":false,"properties":{"a":{}}}`, `{"a":"1","b":"2"}`},
		{`{"anyOf":[{"type":"string"},{"type":"integer"}],"not":{"type":"boolean"}}`, `"s"`},
		{`{"propertyNames":{"maxLength":1}}`, `{"ab":"x"}`},
		{`{"contains":{"type":"string"},"minContains":2}`, `["a",1,"b"]`},
		{`{"if":{"type":"string"},"then":{"maxLength":1},"else":{"minimum":3}}`, `"ab"`},
		{`{"dependentRequired":{"a":["b"]}}`, `{"a":"x"}`},
	} {
		f.Add([]byte(c[0]), []byte(c[1]))
	}
	f.Fuzz(func(t *testing.T, schema, doc []byte) {
		if len(schema) > 1<<10 || len(doc) > 1<<10 {
			return // each input stays cheap
		}
		c := compileSchema(schema)
		if c.err != nil || !wire.ValidJSON(doc) {
			return
		}
		for k := range stringReaders {
			if c.blind && bytes.Contains(schema, []byte(`"`+k+`"`)) {
				t.Fatalf("%s names %s and is blind", schema, k)
			}
		}
		if !c.blind {
			return
		}
		full, _ := decodeJSON(doc, false)
		blind, _ := decodeJSON(doc, true)
		if (c.schema.Validate(full) == nil) != (c.schema.Validate(blind) == nil) {
			t.Fatalf("schema %s, document %s: blind validation disagrees", schema, doc)
		}
		want, _ := c.validate(doc)
		c.blind = false
		got, _ := c.validate(doc)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("schema %s, document %s: problems %q blind, %q with text", schema, doc, want, got)
		}
	})
}

// Strings are views of the arguments, so the validator's value must not
// outlive the call: a problem that quotes a string is a copy.
func TestSchemaProblemsOwnTheirText(t *testing.T) {
	var s schemas
	c := s.get("x", "t", false, json.RawMessage(`{"properties":{"a":{"pattern":"^z"}}}`))
	args := []byte(`{"a":"hello"}`)
	probs, err := c.validate(args)
	if err != nil || len(probs) != 1 {
		t.Fatalf("problems %q, %v", probs, err)
	}
	before := strings.Clone(probs[0])
	copy(args, bytes.Repeat([]byte("#"), len(args)))
	if probs[0] != before || !strings.Contains(before, "hello") {
		t.Fatalf("problem changed with the arguments' memory: %q, was %q", probs[0], before)
	}
}

// A schema that changes on every refresh does not grow the cache: a
// compiled schema stays only while some tool's current schema is it.
func TestSchemaCacheDropsReplacedSchemas(t *testing.T) {
	var s schemas
	shared := json.RawMessage(`{"type":"object"}`)
	s.get("x", "keep", false, shared)
	for i := range 100 {
		s.get("x", "churn", false, json.RawMessage(fmt.Sprintf(`{"type":"object","description":"v%d"}`, i)))
	}
	if len(s.cache) != 2 {
		t.Fatalf("%d schemas cached after 100 changes of one tool's schema, want 2", len(s.cache))
	}
	// The churning tool moves to the shared schema and back: the shared
	// one stays for the tool that still has it.
	s.get("x", "churn", false, shared)
	if len(s.cache) != 1 {
		t.Fatalf("%d schemas cached, want 1 (the shared one)", len(s.cache))
	}
	c := s.get("x", "churn", false, json.RawMessage(`{"type":"string"}`))
	if len(s.cache) != 2 || s.get("x", "keep", false, shared).schema == nil {
		t.Fatalf("%d schemas cached, want 2; the kept tool lost its schema", len(s.cache))
	}
	if probs, err := c.validate(json.RawMessage(`5`)); err != nil || len(probs) != 1 {
		t.Fatalf("the new schema does not validate: %v %v", probs, err)
	}
}

// FuzzDecodeChecked: on valid JSON, decodeChecked gives what decodeJSON
// gives; anything else is an error, whatever byte stands where the
// grammar wants another (the decoder once took any byte for ':' or ',').
func FuzzDecodeChecked(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":[1,"x",{"b":null}]}`, `"s\"q"`, `{"a":}`, `{"a" 1}`, `[`, `"`, `{"a":1} x`, ``, `"o test f`, `{"k":"v} `,
		`{"a"x1}`, `[1x2]`, `{"a":1 "b":2}`, `{"a":1,}`, `[1,]`, `{1:2}`, `tru`, `trux`, `nul`, `[x]`, `"\x"`, strings.Repeat("[", wire.MaxDepth+2)} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := decodeChecked(data, false)
		if !wire.ValidJSON(data) {
			if err == nil {
				t.Fatalf("%q is not JSON, yet decoded to %#v", data, got)
			}
			return
		}
		want, werr := decodeJSON(data, false)
		if (err == nil) != (werr == nil) || !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: %#v %v, want %#v %v", data, got, err, want, werr)
		}
	})
}
