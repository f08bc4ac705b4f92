package wasm

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/nexus-mcp/nexus/sdk/event"
)

func TestEncodeEvent(t *testing.T) {
	yes, no := true, false
	for _, e := range []event.Event{
		{},
		{ABI: 1, Phase: "request", Method: "tools/call", Agent: event.Agent{ID: "a\"\n<", Permission: "yolo"},
			Server: event.Server{Name: "s", Info: &event.Info{Name: "n", Version: "1\u2028"}},
			Tool:   &event.Tool{Name: "t", Annotations: &event.Annotations{Title: "T", ReadOnlyHint: &no, DestructiveHint: &yes, IdempotentHint: &yes, OpenWorldHint: &no}},
			Params: json.RawMessage(`{"a":[1,2,{"b":null}]}`), Result: json.RawMessage(`{"content":[]}`)},
		{Phase: "response", Tool: &event.Tool{Name: "x", Annotations: &event.Annotations{}}, Result: json.RawMessage(`"bad \u00ff"`)},
		{Method: "tools/list", Tool: &event.Tool{Name: "d", Definition: json.RawMessage(`{"name":"d","description":"<IMPORTANT>","inputSchema":{"type":"object"}}`)},
			Listing: &event.Listing{ID: "1", Tools: []event.ListedTool{{Server: "s", Name: "d"}}}},
	} {
		got, err := appendEvent(nil, &e)
		if err != nil {
			t.Fatal(err)
		}
		e.ABI = event.ABI
		want, _ := json.Marshal(&e)
		if !sameJSON(got, want) {
			t.Errorf("got  %s\nwant %s", got, want)
		}
	}
	if _, err := appendEvent(nil, &event.Event{Params: json.RawMessage(`{nope`)}); err == nil {
		t.Fatal("invalid params encoded")
	}
	if _, err := appendEvent(nil, &event.Event{Tool: &event.Tool{Name: "x", Definition: json.RawMessage(`{`)}}); err == nil {
		t.Fatal("invalid definition encoded")
	}
}

func sameJSON(a, b []byte) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}

// appendEvent writes every field of the schema: a field added to
// sdk/event must be added there too.
func TestEncodeEventKnowsTheSchema(t *testing.T) {
	// Event.Listing is not in the JSON (json:"-"): 9 fields, 8 written.
	known := map[string]int{"Event": 9, "Agent": 2, "Server": 2, "Info": 2, "Tool": 3, "Annotations": 5}
	for _, v := range []any{event.Event{}, event.Agent{}, event.Server{}, event.Info{}, event.Tool{}, event.Annotations{}} {
		typ := reflect.TypeOf(v)
		if typ.NumField() != known[typ.Name()] {
			var names []string
			for i := 0; i < typ.NumField(); i++ {
				names = append(names, typ.Field(i).Name)
			}
			t.Errorf("event.%s has fields %s; appendEvent writes %d", typ.Name(), strings.Join(names, ", "), known[typ.Name()])
		}
	}
}

func BenchmarkEncodeEvent(b *testing.B) {
	yes := true
	e := &event.Event{Phase: "request", Method: "tools/call", Agent: event.Agent{ID: "cli", Permission: "trusted"}, Server: event.Server{Name: "github"},
		Tool: &event.Tool{Name: "delete_repo", Annotations: &event.Annotations{DestructiveHint: &yes}}, Params: json.RawMessage(`{"name":"delete_repo","arguments":{"repo":"x"}}`)}
	b.Run("append", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for i := 0; i < b.N; i++ {
			buf, _ = appendEvent(buf[:0], e)
		}
	})
	b.Run("encoding/json", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			json.Marshal(e)
		}
	})
}
