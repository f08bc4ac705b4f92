package mcp

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"
)

// feedConn reads the frames it was given, then blocks until closed; it
// keeps what the peer writes.
type feedConn struct {
	in     chan []byte
	closed chan struct{}
	once   sync.Once
	mu     sync.Mutex
	out    [][]byte
}

func (c *feedConn) ReadMessage() ([]byte, error) {
	select {
	case f := <-c.in:
		return f, nil
	case <-c.closed:
		return nil, ErrClosed
	}
}

func (c *feedConn) WriteMessage(_ context.Context, msg []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.out = append(c.out, append([]byte(nil), msg...))
	return nil
}

func (c *feedConn) Close() error { c.once.Do(func() { close(c.closed) }); return nil }

// A client may send its first requests without waiting for initialize's
// answer; none of them is served before initialize has been (a gateway
// would refuse them as coming before it), however long it takes.
func TestNothingOvertakesInitialize(t *testing.T) {
	c := &feedConn{in: make(chan []byte, 4), closed: make(chan struct{})}
	started, release := make(chan struct{}), make(chan struct{})
	var mu sync.Mutex
	var order []string
	h := handlerFunc(func(_ context.Context, method string, _ json.RawMessage) (any, error) {
		if method == MethodInitialize {
			close(started)
			<-release
		}
		mu.Lock()
		order = append(order, method)
		mu.Unlock()
		return struct{}{}, nil
	})
	p := NewPeer(c, PeerOptions{Handler: h})
	p.Start()
	defer p.Close()
	c.in <- []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`)
	c.in <- []byte(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	<-started
	// Long past serveDelay, after which another reader would take over a
	// slow request and serve the next one.
	time.Sleep(100 * time.Millisecond)
	mu.Lock()
	early := len(order)
	mu.Unlock()
	close(release)
	if early != 0 {
		t.Fatalf("%d request(s) served while initialize was still being served", early)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		n := len(order)
		mu.Unlock()
		if n == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("tools/list was not served within 10 s of initialize")
		}
		time.Sleep(time.Millisecond)
	}
	if order[0] != MethodInitialize {
		t.Errorf("order %v", order)
	}
}
