package wire

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
)

// marshalPlain is json.Marshal without HTML escaping: AppendAny's rule.
func marshalPlain(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	err := enc.Encode(v)
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'}), err
}

// AppendAny writes what encoding/json writes, under one HTML rule, for
// the shapes it handles itself and for those it hands to encoding/json.
func TestAppendAnyMatchesEncodingJSON(t *testing.T) {
	type custom struct {
		A int    `json:"a"`
		S string `json:"s,omitempty"`
	}
	deep := any("leaf")
	for range maxAnyDepth + 5 {
		deep = []any{deep}
	}
	for _, v := range []any{
		nil,
		map[string]any{"message": "hello"},
		map[string]any{"b": 1.5, "a": "x", "c": true, "d": nil, "e": []any{1.0, "two", false, nil}, "f": map[string]any{"z": 1e21, "y": 1e-7, "x": math.Copysign(0, -1), "w": 123456789.0}},
		map[string]any{"quote\"key": "line\nbreak\ttab\\ \x01 \u2028 é 🙂", "html": "<a&b>"},
		map[string]string{"k2": "v2", "k1": "v1"},
		map[string]any{"n": int(-3), "i64": int64(1 << 40), "u": uint(7), "f32": float32(0.1), "i32": int32(-9), "u64": uint64(1 << 63)},
		[]any{}, []string{"a", "b"}, map[string]any{},
		map[string]any{"many": map[string]any{"k1": 1.0, "k2": 2.0, "k3": 3.0, "k4": 4.0, "k5": 5.0, "k6": 6.0, "k7": 7.0, "k8": 8.0, "k9": 9.0, "k10": 10.0}},
		map[string]any{"custom": custom{A: 1}},
		map[string]any{"raw": json.RawMessage(`{"x":1}`)},
		deep,
		"just a string", 42.0, true,
		map[string]any{"nilmap": map[string]any(nil), "nilslice": []any(nil)},
	} {
		want, werr := marshalPlain(v)
		got, gerr := AppendAny(nil, v)
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("%#v: error %v, encoding/json %v", v, gerr, werr)
		}
		var a, b any
		if err := json.Unmarshal(got, &a); err != nil {
			t.Fatalf("%#v: invalid JSON %s: %v", v, got, err)
		}
		json.Unmarshal(want, &b)
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%#v:\n got %s\nwant %s", v, got, want)
		}
		if !strings.ContainsAny(string(want), `\`) && string(got) != string(want) {
			t.Errorf("%#v: bytes differ:\n got %s\nwant %s", v, got, want)
		}
	}
	for _, bad := range []any{map[string]any{"x": math.NaN()}, map[string]any{"x": math.Inf(1)}, map[string]any{"ch": make(chan int)}} {
		if _, err := AppendAny(nil, bad); err == nil {
			t.Errorf("%#v: no error", bad)
		}
	}
}

// TestAppendAnyOneHTMLRule: <, > and & come out as they are whether
// AppendAny writes the value itself or hands it to encoding/json (a value
// holding a struct). The two ways once differed: the same arguments went
// to a server as "<" or as "\u003c" depending on their Go type.
func TestAppendAnyOneHTMLRule(t *testing.T) {
	type arg struct {
		Q string `json:"q"`
	}
	for _, v := range []any{
		map[string]any{"q": "<a&b>"},
		map[string]any{"q": "<a&b>", "s": arg{Q: "<a&b>"}},
		arg{Q: "<a&b>"},
	} {
		got, err := AppendAny(nil, v)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(got, []byte(`\u00`)) || !bytes.Contains(got, []byte(`"<a&b>"`)) {
			t.Errorf("%#v encoded as %s: want <, > and & unescaped", v, got)
		}
	}
}

func BenchmarkAppendAny(b *testing.B) {
	v := map[string]any{"message": "hello", "count": 3.0, "tags": []any{"a", "b"}}
	var base, mine float64
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			json.Marshal(v)
		}
		base = float64(b.Elapsed()) / float64(b.N)
	})
	b.Run("nexus", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			AppendAny(nil, v)
		}
		mine = float64(b.Elapsed()) / float64(b.N)
		if base > 0 {
			b.ReportMetric(base/mine, "x-faster")
		}
	})
}
