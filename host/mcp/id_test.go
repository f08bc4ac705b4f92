package mcp

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// Ids that are neither a string nor an integer get -32600 with a null id,
// and the session goes on (issue 37: {"a": 1} was taken as an id).
func TestBadRequestIDs(t *testing.T) {
	raw, other := Pipe()
	p := NewPeer(other, PeerOptions{})
	p.Start()
	defer p.Close()
	defer raw.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, id := range []string{`{"a":1}`, `[1]`, `true`, `1.5`, `1e3`, `null`} {
		if err := raw.WriteMessage(ctx, []byte(`{"jsonrpc":"2.0","id":`+id+`,"method":"ping"}`)); err != nil {
			t.Fatal(err)
		}
		b, err := raw.ReadMessage()
		if err != nil {
			t.Fatalf("id %s: %v", id, err)
		}
		var m struct {
			ID    json.RawMessage
			Error *RPCError
		}
		if err := json.Unmarshal(b, &m); err != nil || m.Error == nil || m.Error.Code != CodeInvalidRequest || string(m.ID) != "null" ||
			!strings.Contains(m.Error.Message, "a JSON-RPC id is a string or an integer") {
			t.Errorf("id %s: got %s", id, b)
		}
	}
	for _, id := range []string{`"a"`, `7`, `-2`} {
		raw.WriteMessage(ctx, []byte(`{"jsonrpc":"2.0","id":`+id+`,"method":"ping"}`))
		b, err := raw.ReadMessage()
		if err != nil || !strings.Contains(string(b), `"id":`+id+`,"result":{}`) {
			t.Errorf("id %s: %s %v", id, b, err)
		}
	}
}

// FuzzRequestID: CheckRequestID accepts exactly the strings and the
// integers among valid JSON values.
func FuzzRequestID(f *testing.F) {
	for _, s := range []string{`1`, `-1`, `"x"`, `{"a":1}`, `[]`, `true`, `false`, `null`, `1.5`, `1e3`, `-0`, `"\u0000"`, `12345678901234567890123`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) == 0 || !json.Valid(b) || strings.TrimSpace(string(b)) != string(b) {
			return
		}
		var v any
		d := json.NewDecoder(strings.NewReader(string(b)))
		d.UseNumber()
		if d.Decode(&v) != nil {
			return
		}
		want := false
		switch x := v.(type) {
		case string:
			want = true
		case json.Number:
			want = !strings.ContainsAny(string(x), ".eE")
		}
		if got := CheckRequestID(b) == nil; got != want {
			t.Fatalf("CheckRequestID(%s) accepted=%v, want %v", b, got, want)
		}
	})
}
