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
	server, _ := peerPair(t, PeerOptions{Handler: h}, PeerOptions{})
	next := func() string {
		select {
		case g := <-ran:
			return g
		case <-time.After(10 * time.Second):
			t.Fatal("the spawned request was not served within 10 s")
			return ""
		}
	}
	server.spawn(server.onRequest(json.RawMessage(`1`), "first", nil, nil))
	first := next()
	// The worker waits for the next request (spareIdle): the hand-off
	// below is taken as soon as it does.
	in := server.onRequest(json.RawMessage(`2`), "second", nil, nil)
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
	case server.spare <- server.onRequest(json.RawMessage(`3`), "third", nil, nil):
		t.Error("a spare worker took a request after Close")
	case <-time.After(100 * time.Millisecond):
	}
}

// A reader overtaken while it served a slow request (the idle timer gave
// the role to another) waits to read again, and the next time the role
// needs a reader it is that goroutine, with the stack it grew, not a new
// one.
func TestOvertakenReaderReadsAgain(t *testing.T) {
	gate := make(chan struct{})
	ran := make(chan string, 4)
	h := handlerFunc(func(ctx context.Context, method string, params json.RawMessage) (any, error) {
		ran <- goid()
		if method == "slow" {
			select {
			case <-gate:
			case <-ctx.Done():
			}
		}
		return struct{}{}, nil
	})
	server, client := peerPair(t, PeerOptions{Handler: h}, PeerOptions{})
	call := func(method string) chan error {
		done := make(chan error, 1)
		go func() { done <- client.Call(context.Background(), method, nil, nil) }()
		return done
	}
	wait := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !ok(); time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 10 s", what)
			}
		}
	}
	next := func() string {
		t.Helper()
		select {
		case g := <-ran:
			return g
		case <-time.After(10 * time.Second):
			t.Fatal("a request was not served within 10 s")
			return ""
		}
	}
	answered := func(done chan error) {
		t.Helper()
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("a request was not answered within 10 s")
		}
	}
	d1 := call("slow")
	g1 := next() // the reader serves it itself
	wait("another reader takes the role from the one serving", func() bool {
		server.mu.Lock()
		defer server.mu.Unlock()
		return server.reading
	})
	gate <- struct{}{}
	answered(d1)
	wait("the overtaken reader waits to read again", func() bool {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		for _, g := range bytes.Split(buf, []byte("\n\n")) {
			if bytes.HasPrefix(g, []byte("goroutine "+g1+" ")) && bytes.Contains(g, []byte("spareReader")) {
				return true
			}
		}
		return false
	})
	d2 := call("slow") // read and served by the reader that overtook g1
	if g2 := next(); g2 == g1 {
		t.Fatalf("the second request ran on %s, the waiting reader", g2)
	}
	d3 := call("fast") // the second is overtaken: the waiting reader reads this one
	if g3 := next(); g3 != g1 {
		t.Errorf("the request read once the second was overtaken ran on goroutine %s, not on the waiting reader %s", g3, g1)
	}
	answered(d3)
	gate <- struct{}{}
	answered(d2)
}
