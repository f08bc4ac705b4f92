package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"testing"
	"time"
)

// oneFrame yields a single frame and then EOF.
type oneFrame struct {
	frame []byte
	sent  bool
	done  chan struct{}
}

func (o *oneFrame) ReadMessage() ([]byte, error) {
	if !o.sent {
		o.sent = true
		return o.frame, nil
	}
	<-o.done
	return nil, io.EOF
}
func (o *oneFrame) WriteMessage(context.Context, []byte) error { return nil }
func (o *oneFrame) Close() error {
	select {
	case <-o.done:
	default:
		close(o.done)
	}
	return nil
}

// FuzzMessageDecode feeds arbitrary frames to a peer with a request pending
// and handlers installed: it must never panic or hang.
func FuzzMessageDecode(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"x"}]}}`,
		`{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"nope"}}`,
		`{"jsonrpc":"2.0","id":"a","method":"roots/list"}`,
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":0.5}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"a"}}`,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse"}}`,
		`{"id":1}`, `[]`, `{}`, `{"jsonrpc":"2.0","id":1e999,"result":1}`, "\xff\xfe", `{"method":5}`,
		`{"jsonrpc":"2.0","id":{"a":1},"method":"roots/list"}`, `{"jsonrpc":"2.0","id":1.5,"method":"ping"}`, `{"jsonrpc":"2.0","id":null,"method":"ping"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		conn := &oneFrame{frame: frame, done: make(chan struct{})}
		c := &Client{ready: make(chan struct{}), opts: ClientOptions{Roots: func(context.Context) ([]Root, error) { return nil, nil }}, tools: &cached[Tool]{}, resources: &cached[Resource]{}, prompts: &cached[Prompt]{}}
		p := NewPeer(conn, PeerOptions{Handler: clientHandler{c}, Timeout: 20 * time.Millisecond})
		c.peer = p
		p.Start()
		var res CallToolResult
		_ = p.Call(context.Background(), "tools/call", nil, &res, WithProgress(json.RawMessage("1"), func(Progress) {}))
		p.Close()
		<-p.Done()
	})
}

// FuzzContent checks unknown content survives a decode/encode round trip.
func FuzzContent(f *testing.F) {
	f.Add([]byte(`{"type":"text","text":"hi"}`))
	f.Add([]byte(`{"type":"weird","x":[1,{"y":2}]}`))
	f.Add([]byte(`{"type":"resource","resource":{"uri":"a","blob":"AA=="}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var c Content
		if json.Unmarshal(b, &c) != nil {
			return
		}
		out, err := json.Marshal(c)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		var back Content
		if err := json.Unmarshal(out, &back); err != nil {
			t.Fatalf("decode of own output %s: %v", out, err)
		}
		if back.Type != c.Type {
			t.Fatalf("type changed %q -> %q", c.Type, back.Type)
		}
	})
}

// FuzzParseMessage holds ParseMessage and Member to encoding/json: a
// frame is accepted when encoding/json finds one valid object, and the
// routing wire.Members are those encoding/json sees.
func FuzzParseMessage(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":{"progressToken":"t"}}}`,
		`{"jsonrpc":"2.0","id":"a","result":{}}`, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}`,
		`{"id":null}`, `{"method":""}`, `{"method":"\u0074ools/list"}`, `[]`, `{} {}`, `{"a":1,}`, "{\"method\":\"\xff\"}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseMessage(b)
		var obj map[string]json.RawMessage
		jerr := json.Unmarshal(b, &obj)
		if err == nil && (jerr != nil || obj == nil) {
			t.Fatalf("accepted %q, which encoding/json refuses: %v", b, jerr)
		}
		if err != nil {
			return
		}
		var want struct {
			ID     json.RawMessage `json:"id"`
			Method *string         `json:"method"`
		}
		if json.Unmarshal(b, &want) != nil {
			return // valid JSON whose method is not a string: refused above
		}
		if want.Method != nil && *want.Method != m.Method && bytes.Count(b, []byte(`"method"`)) == 1 {
			t.Fatalf("method %q, encoding/json %q", m.Method, *want.Method)
		}
		if m.Params != nil {
			_ = Member(m.Params, "_meta") // must not panic on any valid member
		}
	})
}

// FuzzCallToolResult holds the one-pass result decoder to JSON: it never
// accepts what encoding/json rejects, and what it accepts encodes to bytes
// that decode to the same encoding again.
func FuzzCallToolResult(f *testing.F) {
	for _, s := range []string{
		`{"content":[{"type":"text","text":"hello"}]}`,
		`{"content":[{"type":"image","data":"AA==","mimeType":"image/png"},{"type":"new","x":[1,{"y":null}]}],"isError":true}`,
		`{"content":[],"structuredContent":{"a":[1,2]},"_meta":{"k":"v"}}`,
		`{"content":[{"type":"text","text":"\u00e9\n\"q\"","annotations":{"priority":0.5}}]} `,
		`{"content":null}`, `{"content":[{"type":"text","text":"x"},]}`, `{"content":[{"type":"text","text":"\xff"}]}`,
		`{"content":[{"type":"text","text":5}]}`, `{"content":{}}`, `{"isError":"yes"}`, `{"content":[1]}`, `[]`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var r CallToolResult
		if err := r.decodeJSON(b); err != nil {
			return
		}
		if !json.Valid(b) {
			t.Fatalf("accepted invalid JSON %q", b)
		}
		out, err := r.appendJSON(nil)
		if err != nil {
			t.Fatalf("re-encode %+v: %v", r, err)
		}
		var back CallToolResult
		if err := back.decodeJSON(out); err != nil {
			t.Fatalf("decode of own output %s: %v", out, err)
		}
		again, err := back.appendJSON(nil)
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("not stable: %s then %s (%v)", out, again, err)
		}
	})
}
