package mcp

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"
)

// relatedConn is a Conn that says every frame it reads came on the
// response stream of the last request written through it, as streamable
// HTTP says of a POST's SSE answer; with none said (stdio's way) after
// off is set.
type relatedConn struct {
	Conn
	mu   sync.Mutex
	last json.RawMessage // the id of the last request written
	off  bool
	rel  json.RawMessage // the reader's: the frame last read's
}

func (c *relatedConn) WriteMessage(ctx context.Context, msg []byte) error {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if json.Unmarshal(msg, &m) == nil && m.Method != "" && m.ID != nil {
		c.mu.Lock()
		c.last = m.ID
		c.mu.Unlock()
	}
	return c.Conn.WriteMessage(ctx, msg)
}

func (c *relatedConn) ReadMessage() ([]byte, error) {
	b, err := c.Conn.ReadMessage()
	c.mu.Lock()
	c.rel = c.last
	if c.off {
		c.rel = nil
	}
	c.mu.Unlock()
	return b, err
}

func (c *relatedConn) FrameRelated() json.RawMessage {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rel
}

// A request the other side sends on a call's response stream is tied to
// that call: its handler's CallOf is the caller's context. Over a conn
// that does not say, it is not related.
func TestCallOfRequest(t *testing.T) {
	a, b := Pipe()
	rc := &relatedConn{Conn: a}
	type got struct {
		call    context.Context
		related bool
	}
	seen := make(chan got, 2)
	client := NewPeer(rc, PeerOptions{Handler: handlerFunc(func(ctx context.Context, method string, _ json.RawMessage) (any, error) {
		call, related := CallOf(ctx)
		seen <- got{call, related}
		return map[string]any{}, nil
	})})
	var server *Peer
	server = NewPeer(b, PeerOptions{Handler: handlerFunc(func(ctx context.Context, method string, _ json.RawMessage) (any, error) {
		// Asked back during the call, as a server's elicitation is.
		var r json.RawMessage
		if err := server.Call(ctx, "ask", nil, &r); err != nil {
			return nil, err
		}
		return map[string]any{}, nil
	})})
	client.Start()
	server.Start()
	defer client.Close()
	defer server.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var r json.RawMessage
	if err := client.Call(context.WithValue(ctx, testKey{}, "caller"), "work", nil, &r); err != nil {
		t.Fatal(err)
	}
	if g := <-seen; !g.related || g.call == nil || g.call.Value(testKey{}) != "caller" {
		t.Errorf("the request's handler was not told the call it came with: %+v", g)
	}
	rc.mu.Lock()
	rc.off = true
	rc.mu.Unlock()
	if err := client.Call(ctx, "work", nil, &r); err != nil {
		t.Fatal(err)
	}
	if g := <-seen; g.related || g.call != nil {
		t.Errorf("a request the conn said nothing of is related: %+v", g)
	}
}
