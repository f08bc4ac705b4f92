package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/nexus-mcp/nexus/internal/testenv"
)

// osPipePair is a client and server conn over real pipes, where both
// sides can read directly (DirectReader).
func osPipePair(t *testing.T) (client, server *StreamConn) {
	t.Helper()
	cr, sw, err := os.Pipe() // server to client
	if err != nil {
		t.Fatal(err)
	}
	sr, cw, err := os.Pipe() // client to server
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cw.Close(); sw.Close() })
	client, server = NewStreamConn(cr, cw, 0), NewStreamConn(sr, sw, 0)
	if !client.DirectReads() || !server.DirectReads() {
		t.Fatal("pipes should support direct reads")
	}
	return client, server
}

// connectDirect connects a client to s over real pipes.
func connectDirect(t *testing.T, s *Server, opts ClientOptions) *Client {
	t.Helper()
	a, b := osPipePair(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Serve(ctx, b); close(done) }()
	c, err := Connect(context.Background(), a, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(); cancel(); b.Close(); <-done })
	return c
}

func TestDirectReadSequential(t *testing.T) {
	c := connectDirect(t, testServer(0), ClientOptions{})
	ctx := context.Background()
	for i := range 200 {
		msg := fmt.Sprint("m", i)
		res, err := c.CallTool(ctx, "echo", map[string]string{"message": msg}, nil)
		if err != nil || res.Content[0].Text != msg {
			t.Fatalf("call %d: %v %+v", i, err, res)
		}
	}
	// Sequential callers read their own replies: almost every frame came
	// that way (the idle timer may hand a few to the background reader).
	if n := c.peer.directFrames.Load(); n < 100 {
		t.Errorf("only %d of ~200 replies were read by their callers", n)
	}
}

func TestDirectReadConcurrent(t *testing.T) {
	c := connectDirect(t, testServer(0), ClientOptions{})
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for w := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				msg := fmt.Sprint(w, "/", i)
				res, err := c.CallTool(context.Background(), "echo", map[string]string{"message": msg}, nil)
				if err != nil {
					errs <- err
					return
				}
				if res.Content[0].Text != msg {
					errs <- fmt.Errorf("reply %q for %q", res.Content[0].Text, msg)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// A caller reading its own reply still honours its context and timeout,
// and the session stays usable afterwards.
func TestDirectReadCancelAndTimeout(t *testing.T) {
	c := connectDirect(t, testServer(0), ClientOptions{Timeout: 100 * time.Millisecond})
	// The cancel comes while the call waits (not before it, and not racing
	// its timeout: that one is long), reading its own reply: the role is
	// held free for it (holdRoleFree), so this holds on a busy machine too.
	holdRoleFree(t, c)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := c.CallTool(ctx, "slow", nil, &CallOptions{Timeout: time.Minute})
		errc <- err
	}()
	if !waitCallWaits(t, errc) {
		cancel()
		t.Fatal("the call did not read its own reply although the reading role was free")
	}
	cancel()
	select {
	case err := <-errc:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled call reading its own reply: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("cancel did not end a call reading its own reply")
	}
	c.peer.idleWait.Store(int64(idleDelay))
	var te *TimeoutError
	if _, err := c.CallTool(context.Background(), "slow", nil, nil); !errors.As(err, &te) {
		t.Fatalf("want a TimeoutError, got %v", err)
	}
	dctx, dcancel := context.WithTimeout(context.Background(), 60*time.Millisecond)
	defer dcancel()
	if _, err := c.CallTool(dctx, "slow", nil, &CallOptions{}); !errors.Is(err, context.DeadlineExceeded) && !errors.As(err, &te) {
		t.Fatalf("ctx deadline: %v", err)
	}
	res, err := c.CallTool(context.Background(), "echo", map[string]string{"message": "after"}, nil)
	if err != nil || res.Content[0].Text != "after" {
		t.Fatalf("session unusable after timeouts: %v %+v", err, res)
	}
}

// Progress for a call restarts its timeout while the caller reads.
func TestDirectReadProgress(t *testing.T) {
	c := connectDirect(t, testServer(0), ClientOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	n := 0
	_, err := c.CallTool(ctx, "slow", nil, &CallOptions{OnProgress: func(p Progress) {
		if n++; n == 3 {
			cancel()
		}
	}})
	if !errors.Is(err, context.Canceled) || n != 3 {
		t.Fatalf("err %v after %d progress notifications", err, n)
	}
}

// A reply longer than the read buffer has only partly arrived when the
// caller looks: the background reader finishes it.
func TestDirectReadLargeReply(t *testing.T) {
	c := connectDirect(t, testServer(0), ClientOptions{})
	big := strings.Repeat("x", 300<<10)
	for range 3 {
		res, err := c.CallTool(context.Background(), "echo", map[string]string{"message": big}, nil)
		if err != nil || res.Content[0].Text != big {
			t.Fatalf("large reply: %v", err)
		}
	}
}

// Requests from the server during a call reach the client's handlers
// while the caller itself is reading.
func TestDirectReadServerRequests(t *testing.T) {
	c := connectDirect(t, testServer(0), ClientOptions{
		Roots: func(ctx context.Context) ([]Root, error) { return []Root{{URI: "file:///r"}}, nil },
		Sampling: func(ctx context.Context, p *CreateMessageParams) (*CreateMessageResult, error) {
			return &CreateMessageResult{Role: "assistant", Content: []byte(`{"type":"text","text":"a"}`), Model: "m"}, nil
		},
	})
	for tool, want := range map[string]string{"roots": "file:///r", "sample": `{"type":"text","text":"a"}`} {
		for range 20 {
			res, err := c.CallTool(context.Background(), tool, nil, nil)
			if err != nil || res.Content[0].Text != want {
				t.Fatalf("%s: %v %+v", tool, err, res)
			}
		}
	}
}

// A request served on the goroutine that read it does not hold up the
// next one for long: a slow handler is overtaken, so a second request is
// answered while the first still runs.
func TestSlowHandlerDoesNotBlockReading(t *testing.T) {
	c := connectDirect(t, testServer(0), ClientOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	slow := make(chan error, 1)
	go func() { _, err := c.CallTool(ctx, "slow", nil, nil); slow <- err }()
	for range 20 {
		if _, err := c.CallTool(context.Background(), "echo", map[string]string{"message": "x"}, nil); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case err := <-slow:
		t.Fatalf("slow call ended early: %v", err)
	default:
	}
	cancel()
	if err := <-slow; !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
}

// Nothing the server sends between calls waits for the next call: the
// idle timer gives the free reading role to a background reader.
func TestNotificationBetweenCalls(t *testing.T) {
	s := testServer(0)
	got := make(chan struct{}, 1)
	c := connectDirect(t, s, ClientOptions{OnListChanged: func(string) {
		select {
		case got <- struct{}{}:
		default:
		}
	}})
	if _, err := c.CallTool(context.Background(), "echo", map[string]string{"message": "x"}, nil); err != nil {
		t.Fatal(err)
	}
	s.AddTool(Tool{Name: "late"}, func(ctx context.Context, r *CallToolRequest) (*CallToolResult, error) { return &CallToolResult{}, nil })
	select {
	case <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("tools/list_changed between calls was never read")
	}
}

// A server that goes away while nobody is reading is noticed without a
// call, and a caller reading directly when it goes sees the error.
func TestDirectReadPeerGone(t *testing.T) {
	a, b := osPipePair(t)
	s := testServer(0)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Serve(ctx, b); close(done) }()
	c, err := Connect(context.Background(), a, ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// The server goes while a call waits reading its own reply (the role
	// held free for it, see holdRoleFree).
	holdRoleFree(t, c)
	cctx, ccancel := context.WithCancel(context.Background())
	defer ccancel()
	errc := make(chan error, 1)
	go func() {
		_, err := c.CallTool(cctx, "slow", nil, nil)
		errc <- err
	}()
	if !waitCallWaits(t, errc) {
		t.Fatal("the call did not read its own reply although the reading role was free")
	}
	cancel()
	b.Close()
	<-done
	b.w.(*os.File).Close() // the server's end of the pipe: the client reads EOF
	select {
	case err := <-errc:
		if err == nil {
			t.Fatal("call succeeded after the server went away")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("call did not fail when the server went away")
	}
	select {
	case <-c.peer.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("session not marked done")
	}
}

// countingWriter counts Write calls.
type countingWriter struct {
	w io.Writer
	n atomic.Int64
}

func (c *countingWriter) Write(b []byte) (int, error) { c.n.Add(1); return c.w.Write(b) }

// rawPeer serves h over real pipes and returns the client's ends and the
// server's write counter.
func rawPeer(t *testing.T, h Handler) (in *bufio.Reader, out *os.File, writes *countingWriter) {
	t.Helper()
	cr, sw, _ := os.Pipe()
	sr, cw, _ := os.Pipe()
	writes = &countingWriter{w: sw}
	p := NewPeer(NewStreamConn(sr, writes, 0), PeerOptions{Handler: h})
	p.Start()
	t.Cleanup(func() { p.Close(); cw.Close(); sw.Close(); cr.Close() })
	return bufio.NewReader(cr), cw, writes
}

// Requests that arrive together are answered in one write; a slow one
// among them does not hold back the others' responses.
func TestResponsesCorked(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	in, out, writes := rawPeer(t, handlerFunc(func(ctx context.Context, method string, params json.RawMessage) (any, error) {
		if method == "slow" {
			select {
			case <-release:
			case <-ctx.Done():
			}
		}
		return map[string]string{"m": method}, nil
	}))
	var batch strings.Builder
	for i := range 10 {
		fmt.Fprintf(&batch, `{"jsonrpc":"2.0","id":%d,"method":"fast"}`+"\n", i)
	}
	if _, err := io.WriteString(out, batch.String()); err != nil {
		t.Fatal(err)
	}
	for range 10 {
		if _, err := in.ReadString('\n'); err != nil {
			t.Fatal(err)
		}
	}
	// Four responses a write at most (corkMax) makes three the floor; a
	// loaded machine may hand the batch over in two reads, which costs a
	// write or two more. Without corking it would be ten.
	if n := writes.n.Load(); n > 5 {
		t.Errorf("10 requests that arrived together took %d writes to answer", n)
	}

	io.WriteString(out, `{"jsonrpc":"2.0","id":"a","method":"fast"}`+"\n"+`{"jsonrpc":"2.0","id":"s","method":"slow"}`+"\n"+`{"jsonrpc":"2.0","id":"b","method":"fast"}`+"\n")
	got := map[string]bool{}
	for range 2 {
		line, err := in.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		var r struct{ ID string }
		json.Unmarshal([]byte(line), &r)
		got[r.ID] = true
	}
	if !got["a"] || !got["b"] {
		t.Fatalf("answered %v while the slow request ran, want a and b", got)
	}
}

// pushConn is a PushConn whose messages come only through Deliver.
type pushConn struct {
	deliver func([]byte) error
	out     chan []byte
	done    chan struct{}
}

func (c *pushConn) SetDeliver(d func([]byte) error) { c.deliver = d }
func (c *pushConn) ReadMessage() ([]byte, error)    { <-c.done; return nil, io.EOF }
func (c *pushConn) WriteMessage(_ context.Context, m []byte) error {
	c.out <- bytes.Clone(m)
	return nil
}
func (c *pushConn) Close() error { return nil }

// A push transport hands messages to the Peer on its own goroutine, and a
// request is served there: the response is written before Deliver returns.
func TestDeliverServesInline(t *testing.T) {
	c := &pushConn{out: make(chan []byte, 4), done: make(chan struct{})}
	defer close(c.done)
	var served atomic.Int32
	p := NewPeer(c, PeerOptions{Handler: handlerFunc(func(ctx context.Context, method string, params json.RawMessage) (any, error) {
		served.Add(1)
		return map[string]string{"m": method}, nil
	})})
	if c.deliver != nil {
		t.Fatal("Deliver handed over before Start")
	}
	p.Start()
	defer p.Close()
	if c.deliver == nil {
		t.Fatal("Start did not hand Deliver to the PushConn")
	}
	if err := c.deliver([]byte(`{"jsonrpc":"2.0","id":1,"method":"hello"}`)); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-c.out:
		if !strings.Contains(string(m), `"m":"hello"`) {
			t.Fatalf("response %s", m)
		}
	default:
		t.Fatal("the response was not written before Deliver returned")
	}
	if err := c.deliver([]byte(`{"jsonrpc":"2.0","id":2,"method":5}`)); err == nil {
		t.Error("a malformed message was accepted")
	}
	p.Close()
	if err := c.deliver([]byte(`{"jsonrpc":"2.0","id":3,"method":"hello"}`)); err == nil {
		t.Error("Deliver after Close succeeded")
	}
	if served.Load() != 1 {
		t.Errorf("served %d requests, want 1", served.Load())
	}
}

// checkedPushConn is a pushConn that also vouches for messages.
type checkedPushConn struct {
	pushConn
	checked func([]byte) error
}

func (c *checkedPushConn) SetDeliverChecked(d func([]byte) error) {
	if c.deliver != nil {
		panic("SetDeliverChecked after SetDeliver") // a handler could see one without the other
	}
	c.checked = d
}

// A message a CheckedPushConn vouches for is served from its own bytes
// (the handler's params are the frame's), one through Deliver from a copy
// (the conn may reuse its buffer), and both the same way otherwise.
func TestDeliverChecked(t *testing.T) {
	c := &checkedPushConn{pushConn: pushConn{out: make(chan []byte, 4), done: make(chan struct{})}}
	defer close(c.done)
	var params json.RawMessage
	p := NewPeer(c, PeerOptions{Handler: handlerFunc(func(_ context.Context, method string, ps json.RawMessage) (any, error) {
		params = ps
		return map[string]string{"m": method}, nil
	})})
	p.Start()
	defer p.Close()
	if c.checked == nil || c.deliver == nil {
		t.Fatal("Start did not hand both delivers to the CheckedPushConn")
	}
	shares := func(a, b []byte) bool {
		start, end := uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(unsafe.Pointer(unsafe.SliceData(b)))+uintptr(len(b))
		at := uintptr(unsafe.Pointer(unsafe.SliceData(a)))
		return at >= start && at < end
	}
	for _, tc := range []struct {
		name    string
		deliver func([]byte) error
		shared  bool
	}{{"checked", c.checked, true}, {"plain", c.deliver, false}} {
		frame := []byte(`{"jsonrpc":"2.0","id":1,"method":"hello","params":{"text":"` + strings.Repeat("a", 100) + `"}}`)
		if err := tc.deliver(frame); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if m := <-c.out; !strings.Contains(string(m), `"m":"hello"`) {
			t.Fatalf("%s: response %s", tc.name, m)
		}
		if want := `{"text":"` + strings.Repeat("a", 100) + `"}`; string(params) != want {
			t.Fatalf("%s: params %s", tc.name, params)
		}
		if shares(params, frame) != tc.shared {
			t.Errorf("%s: params share the frame's memory: %v, want %v", tc.name, !tc.shared, tc.shared)
		}
	}
}

// waitCallWaits waits until a CallTool whose result comes through errc is
// waiting for its reply, and reports whether it reads that reply itself
// (rather than waiting for a background reader to deliver it). It fails
// the test if the call ends first, or does not wait within 10 s.
// holdRoleFree makes c's next call read its own reply, deterministically:
// the reading role, once free, stays free (no background reader takes it
// after idleDelay), and a call frees it (whoever read its reply gives the
// role up, no reply being awaited). An idle timer armed before the delay
// was lengthened may still hand the role to a background reader; then
// another call frees it again, under the long timer.
func holdRoleFree(t *testing.T, c *Client) {
	t.Helper()
	c.peer.idleWait.Store(int64(time.Hour))
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := c.CallTool(context.Background(), "echo", map[string]string{"message": "x"}, nil); err != nil {
			t.Fatal(err)
		}
		for {
			c.peer.mu.Lock()
			free, long := !c.peer.reading, c.peer.idleAt.After(time.Now().Add(time.Minute))
			c.peer.mu.Unlock()
			if free && long {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("after 10 s, the reading role is not free under the long idle timer (free: %v)", free)
			}
			if !free {
				break // a background reader holds it: the next call frees it
			}
			time.Sleep(time.Millisecond)
		}
	}
}

func waitCallWaits(t *testing.T, errc chan error) (direct bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if len(errc) > 0 {
			t.Fatalf("the call ended before the test acted: %v", <-errc)
		}
		if testenv.BlockedIn("IO wait", "(*Peer).readOwn(", "(*Client).CallTool(") {
			return true
		}
		if testenv.BlockedIn("select", "(*Peer).CallRaw(", "(*Client).CallTool(") {
			return false
		}
	}
	t.Fatal("after 10 s, the call is not waiting for its reply")
	return false
}

// Raw JSON with line breaks between tokens, spliced into a frame (a
// result's structured content, a request's raw arguments), goes over a
// newline-delimited stream on one line: the session survives and the
// value arrives intact.
func TestLineBreaksInRawJSON(t *testing.T) {
	s := NewServer(Implementation{Name: "s", Version: "1"}, ServerOptions{})
	s.AddTool(Tool{Name: "t", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(_ context.Context, r *CallToolRequest) (*CallToolResult, error) {
		return &CallToolResult{Content: []Content{TextContent(string(r.Arguments))}, StructuredContent: json.RawMessage("{\n  \"a\": [1,\r\n 2]\n}")}, nil
	})
	s.AddTool(Tool{Name: "cr", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *CallToolRequest) (*CallToolResult, error) {
		return &CallToolResult{Content: []Content{TextContent("x")}, StructuredContent: json.RawMessage("{\"a\":\r1}")}, nil
	})
	s.AddTool(Tool{Name: "broken", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *CallToolRequest) (*CallToolResult, error) {
		return &CallToolResult{Content: []Content{TextContent("x")}, StructuredContent: json.RawMessage("{\n\"a\": tru")}, nil
	})
	c := connectDirect(t, s, ClientOptions{})
	// Raw JSON that is not JSON at all becomes an error response, not a
	// broken frame.
	if _, err := c.CallTool(context.Background(), "broken", nil, nil); err == nil || !strings.Contains(err.Error(), "encoding result: the message is not valid JSON") {
		t.Fatalf("a result with broken raw JSON: %v", err)
	}
	// A lone CR, a line end to readers with universal newlines, is
	// compacted away too.
	if res, err := c.CallTool(context.Background(), "cr", nil, nil); err != nil || string(res.StructuredContent) != `{"a":1}` {
		t.Fatalf("a result with a lone CR: %v %+v", err, res)
	}
	for range 2 {
		res, err := c.CallTool(context.Background(), "t", json.RawMessage("{\n\"k\":\n\"v\"}"), nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := res.Content[0].Text; got != `{"k":"v"}` {
			t.Errorf("arguments arrived as %q", got)
		}
		if got := string(res.StructuredContent); got != `{"a":[1,2]}` {
			t.Errorf("structured content arrived as %q", got)
		}
	}
}
