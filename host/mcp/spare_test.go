package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"runtime"
	"testing"
	"time"
)

// goid is the running goroutine's number, from its stack's header.
func goid() string {
	b := make([]byte, 64)
	b = b[:runtime.Stack(b, false)]
	f := bytes.Fields(b)
	if len(f) < 2 {
		return string(b)
	}
	return string(f[1])
}

// A request spawned off the reader (a server's request read while a
// caller reads its own reply) runs on a spare worker when one waits: the
// goroutine that served the last, with the stack it grew, not a new one.
// The wait is bounded by the session: Close ends it.
func TestSpawnReusesSpareWorker(t *testing.T) {
	ran := make(chan string, 2)
	h := handlerFunc(func(ctx context.Context, method string, params json.RawMessage) (any, error) {
		ran <- goid()
		return struct{}{}, nil
	})
	a, b := Pipe()
	server := NewPeer(b, PeerOptions{Handler: h})
	server.Start()
	client := NewPeer(a, PeerOptions{})
	client.Start()
	defer client.Close()
	defer server.Close()
	next := func() string {
		select {
		case g := <-ran:
			return g
		case <-time.After(10 * time.Second):
			t.Fatal("the spawned request was not served within 10 s")
			return ""
		}
	}
	server.spawn(server.onRequest(json.RawMessage(`1`), "first", nil))
	first := next()
	// The worker waits for the next request (spareIdle): the hand-off
	// below is taken as soon as it does.
	in := server.onRequest(json.RawMessage(`2`), "second", nil)
	select {
	case server.spare <- in:
	case <-time.After(10 * time.Second):
		t.Fatal("no spare worker took a request within 10 s of the last one's end")
	}
	if second := next(); second != first {
		t.Errorf("the second request ran on goroutine %s, not on the spare worker %s", second, first)
	}
	server.Close()
	// No worker waits past the session's end.
	select {
	case server.spare <- server.onRequest(json.RawMessage(`3`), "third", nil):
		t.Error("a spare worker took a request after Close")
	case <-time.After(100 * time.Millisecond):
	}
}
