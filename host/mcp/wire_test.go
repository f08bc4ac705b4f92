package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
)

// wireOf decodes a tools/call result as the client does and returns what
// CallOptions.Wire was set to.
func wireOf(t testing.TB, raw string) (*CallToolResult, json.RawMessage, error) {
	t.Helper()
	w := json.RawMessage("stale")
	res, err := decodeResult(MethodToolsCall, json.RawMessage(raw), &CallOptions{Wire: &w})
	return res, w, err
}

// TestCallToolWire: a result is offered as received exactly when encoding
// it again would say the same; anything the codec drops, reads twice or
// changes makes the caller encode it.
func TestCallToolWire(t *testing.T) {
	for _, c := range []struct {
		name, raw string
		passed    bool
	}{
		{"plain", `{"content":[{"type":"text","text":"hi"}]}`, true},
		{"order and spacing", `{ "isError" : false ,"content":[ {"text":"hi","type":"text"} ] }`, true},
		{"escapes", `{"content":[{"type":"text","text":"caf\u00e9\n\"q\" \ud83d\ude00"}]}`, true},
		{"structured and meta", `{"content":[],"structuredContent":{"a":[1,{"b":null}]},"_meta":{"x":1,"y":{"z":2}},"isError":true}`, true},
		{"every block kind", `{"content":[{"type":"image","data":"AAA=","mimeType":"image/png"},{"type":"resource_link","uri":"file:///a","name":"a","title":"A","description":"d","size":3,"mimeType":"text/plain"},` +
			`{"type":"resource","resource":{"uri":"file:///b","text":"b","mimeType":"text/plain","_meta":{"k":"v"}}},{"type":"audio","data":"AA==","mimeType":"audio/wav"}]}`, true},
		{"annotations as encoded", `{"content":[{"type":"text","text":"a","annotations":{"audience":["user"],"priority":0.5}}]}`, true},
		{"a block of a newer kind, kept whole", `{"content":[{"type":"hologram","beam":{"x":1},"beam":2}]}`, true},
		{"defaults say what absence says", `{"content":[{"type":"text","text":"","mimeType":null}],"structuredContent":null,"isError":null}`, true},

		{"unknown member", `{"content":[],"extra":1}`, false},
		{"content twice", `{"content":[{"type":"text","text":"first"}],"content":[{"type":"text","text":"second"}]}`, false},
		{"isError twice", `{"content":[],"isError":true,"isError":false}`, false},
		{"text twice", `{"content":[{"type":"text","text":"first","text":"second"}]}`, false},
		{"unknown member in a block", `{"content":[{"type":"text","text":"a","colour":"red"}]}`, false},
		{"unknown member in an embedded resource", `{"content":[{"type":"resource","resource":{"uri":"file:///b","text":"b","x":1}}]}`, false},
		{"embedded resource without uri", `{"content":[{"type":"resource","resource":{"text":"b"}}]}`, false},
		{"resource twice", `{"content":[{"type":"resource","resource":{"uri":"file:///a","text":"a"},"resource":{"uri":"file:///b"}}]}`, false},
		{"invalid UTF-8", "{\"content\":[{\"type\":\"text\",\"text\":\"a\xffb\"}]}", false},
		{"invalid UTF-8 beside an escape", "{\"content\":[{\"type\":\"text\",\"text\":\"a\\n\xffb\"}]}", false},
		{"unpaired surrogate", `{"content":[{"type":"text","text":"a\ud800b"}]}`, false},
		{"no content", `{"isError":true}`, false},
		{"content null", `{"content":null}`, false},
		{"a block without a type, kept whole", `{"content":[{"text":"a","x":1}]}`, true},
		{"meta key twice", `{"content":[],"_meta":{"k":1,"k":2}}`, false},
		{"meta twice", `{"content":[],"_meta":{"a":1},"_meta":{"b":2}}`, false},
		{"annotations spelled otherwise", `{"content":[{"type":"text","text":"a","annotations":{"priority":0.5,"audience":["user"]}}]}`, false},
		{"annotations in another case", `{"content":[{"type":"text","text":"a","annotations":{"Audience":["user"]}}]}`, false},
		{"size as a float", `{"content":[{"type":"resource_link","uri":"file:///a","name":"a","size":-0}]}`, false},
		{"an altered block before a newer kind", `{"content":[{"type":"text","text":"a","x":1},{"type":"hologram"}]}`, false},
		{"icons empty", `{"content":[{"type":"text","text":"a","icons":[]}]}`, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			res, w, err := wireOf(t, c.raw)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case c.passed && string(w) != c.raw:
				t.Fatalf("Wire = %q, want the bytes as received", w)
			case !c.passed && w != nil:
				t.Fatalf("Wire = %q, want nil: the result must be encoded again", w)
			}
			if c.passed {
				// What passes on says what the decoded result says.
				again, err := res.MarshalJSON()
				if err != nil {
					t.Fatal(err)
				}
				var a, b CallToolResult
				if err := json.Unmarshal(w, &a); err != nil {
					t.Fatal(err)
				}
				if err := json.Unmarshal(again, &b); err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(a, b) {
					t.Fatalf("as received %+v, encoded again %+v", a, b)
				}
			}
		})
	}
	// A block kept whole is not sanitized: a kind that some client could
	// read as text is refused, not passed on.
	for _, raw := range []string{
		`{"content":[{"t\u0079pe":"text","text":"\u001b]0;pwned\u0007"}]}`,
		`{"content":[{"Type":"text","text":"\u001b[2Jhi"}]}`,
		`{"content":[{"type":"text","text":"\u001b[2Jhi","type":"x-new"}]}`,
		`{"content":[{"type":"x-new","t\u0079pe":"text","text":"\u202eevil"}]}`,
	} {
		if _, w, err := wireOf(t, raw); err == nil || !strings.Contains(err.Error(), "could read it as another kind of block") || string(w) != "stale" {
			t.Errorf("%s: %v, Wire %q; want refused", raw, err, w)
		}
	}
	// Without Wire asked for, nothing is kept; a malformed result leaves
	// it as it was.
	if _, err := decodeResult(MethodToolsCall, json.RawMessage(`{"content":[]}`), &CallOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, w, err := wireOf(t, `{"content":7}`); err == nil || string(w) != "stale" {
		t.Fatalf("malformed: %v, Wire %q", err, w)
	}
}

// FuzzCallToolWire: a result offered as received reads, to a parser that
// keeps the first of a repeated key and to one that keeps the last, as
// the result encoded again reads to the same parser (members whose value
// is null, "", false or {} aside): where the codec reads, no key is given
// twice. Go's encoding/json, which matches keys without case and
// unescaped, reads the same kinds and texts.
func FuzzCallToolWire(f *testing.F) {
	for _, s := range []string{
		`{"content":[{"type":"text","text":"hi"}]}`,
		`{"content":[{"type":"text","text":"a","text":"b"}]}`,
		`{"content":[{"type":"hologram","x":{"y":[1,2]}}],"_meta":{"a":1}}`,
		`{"content":[{"type":"resource","resource":{"uri":"u","blob":"AA=="}}],"isError":false}`,
		`{"content":[],"structuredContent":{"k":"v"},"x":null}`,
		`{"content":[{"type":"text","text":"\u00e9\ud800"}]}`,
		`{"content":[{"type":"x-new","Text":"a"},{"Type":"text","text":"b"},{"t\u0079pe":"text"}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 4<<10 || !json.Valid(b) {
			return // the client is handed frames the envelope's scan validated
		}
		res, w, err := wireOf(t, string(b))
		if err != nil || w == nil {
			return
		}
		again, err := res.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		// Go's encoding/json into structs matches keys without case and
		// unescaped: it reads every block's kind, text and the error flag
		// as the codec did.
		var plain plainCallResult
		if err := json.Unmarshal(w, &plain); err != nil {
			t.Fatal(err)
		}
		if plain.IsError != res.IsError || len(plain.Content) != len(res.Content) {
			t.Fatalf("%s\nencoding/json reads %+v, the codec %+v", b, plain, res)
		}
		for i, c := range res.Content {
			if p := plain.Content[i]; p.Type != c.Type || (c.Raw == nil && p.Text != c.Text) {
				t.Fatalf("%s\nblock %d: encoding/json reads %q %q, the codec %q %q", b, i, p.Type, p.Text, c.Type, c.Text)
			}
		}
		for _, first := range []bool{true, false} {
			x, err := generic(w, first)
			if err != nil {
				t.Fatal(err)
			}
			y, err := generic(again, first)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(x, y) {
				t.Fatalf("%s\nas received (first wins: %v): %v\nencoded again: %v", b, first, x, y)
			}
		}
	})
}

// generic decodes b into maps, slices and values, a repeated key keeping
// its first value (first) or its last, and drops object members whose
// value is null, "", false or {}.
func generic(b []byte, first bool) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var value func() (any, error)
	value = func() (any, error) {
		tok, err := d.Token()
		if err != nil {
			return nil, err
		}
		switch tok {
		case json.Delim('{'):
			m := map[string]any{}
			seen := map[string]bool{}
			for d.More() {
				k, err := d.Token()
				if err != nil {
					return nil, err
				}
				v, err := value()
				if err != nil {
					return nil, err
				}
				key := k.(string)
				if first && seen[key] {
					continue
				}
				seen[key] = true
				if mv, _ := v.(map[string]any); v == nil || v == "" || v == false || (mv != nil && len(mv) == 0) {
					delete(m, key)
					continue
				}
				m[key] = v
			}
			_, err := d.Token()
			return m, err
		case json.Delim('['):
			l := []any{}
			for d.More() {
				v, err := value()
				if err != nil {
					return nil, err
				}
				l = append(l, v)
			}
			_, err := d.Token()
			return l, err
		}
		return tok, nil
	}
	v, err := value()
	if err == nil {
		if _, err = d.Token(); !errors.Is(err, io.EOF) {
			return nil, errors.New("data after the value")
		}
		err = nil
	}
	return v, err
}
