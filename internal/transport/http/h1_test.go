//go:build unix

// h1 sends requests itself only where it can look at idle connections
// (peekable); elsewhere net/http sends them all.

package httptransport

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nexus-mcp/nexus/host/mcp"
)

// scripted is a loopback TCP server whose connections are handled by a
// test's function, for answers net/http's server would never give.
type scripted struct {
	ln    net.Listener
	conns atomic.Int32 // accepted so far
	wg    sync.WaitGroup
	mu    sync.Mutex
	open  []net.Conn
}

func newScripted(t *testing.T, handle func(n int, c net.Conn, br *bufio.Reader)) *scripted {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &scripted{ln: ln}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			n := int(s.conns.Add(1))
			s.mu.Lock()
			s.open = append(s.open, c)
			s.mu.Unlock()
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				defer c.Close()
				handle(n, c, bufio.NewReader(c))
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		s.mu.Lock()
		for _, c := range s.open {
			c.Close()
		}
		s.mu.Unlock()
		s.wg.Wait()
	})
	return s
}

func (s *scripted) url() string { return "http://" + s.ln.Addr().String() + "/mcp" }

// next records the requests h1 passes on.
type nextRecorder struct {
	mu   sync.Mutex
	seen []string
}

func (n *nextRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	n.mu.Lock()
	n.seen = append(n.seen, req.Method+" "+req.URL.Scheme)
	n.mu.Unlock()
	if req.Body != nil {
		req.Body.Close()
	}
	return nil, errors.New("passed on")
}

func newH1(t *testing.T) (*h1, *nextRecorder) {
	next := &nextRecorder{}
	var d net.Dialer
	t1 := &h1{next: next, dial: d.DialContext}
	t.Cleanup(func() { t1.shutdown() })
	return t1, next
}

func post(ctx context.Context, t *testing.T, rt http.RoundTripper, url, body string) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	return rt.RoundTrip(req)
}

// replyText reads a reply as readReply does: to its length when known.
func replyText(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	if resp.ContentLength > 0 {
		b := make([]byte, resp.ContentLength)
		if _, err := io.ReadFull(resp.Body, b); err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// echoHandler answers each POST with its body, counting connections.
func echoServer(t *testing.T) (*httptest.Server, *atomic.Int32) {
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Query().Get("chunked") != "" {
			w.Write(b[:1])
			w.(http.Flusher).Flush() // no Content-Length: chunked
			w.Write(b[1:])
			return
		}
		w.Write(b)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, &conns
}

func TestH1ReusesConnections(t *testing.T) {
	checkNoLeak(t)
	srv, conns := echoServer(t)
	rt, next := newH1(t)
	for i := range 20 {
		url := srv.URL + "/mcp"
		if i%2 == 1 {
			url += "?chunked=1"
		}
		body := fmt.Sprintf(`{"n":%d}`, i)
		resp, err := post(context.Background(), t, rt, url, body)
		if err != nil {
			t.Fatal(err)
		}
		if got := replyText(t, resp); got != body {
			t.Fatalf("reply %d = %q, want %q", i, got, body)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("20 sequential POSTs used %d connections, want 1", n)
	}
	if len(next.seen) != 0 {
		t.Errorf("passed on to net/http: %v", next.seen)
	}
}

func TestH1PassesOnWhatItDoesNotTake(t *testing.T) {
	rt, next := newH1(t)
	ctx := context.Background()
	big := strings.Repeat("x", h1MaxBody+1)
	withConnection := mustRequest(t, ctx, http.MethodPost, "http://127.0.0.1:1/mcp", "{}")
	withConnection.Header.Set("Connection", "close")
	unknownLength := mustRequest(t, ctx, http.MethodPost, "http://127.0.0.1:1/mcp", "{}")
	unknownLength.ContentLength = 0
	for _, req := range []*http.Request{
		mustRequest(t, ctx, http.MethodGet, "http://127.0.0.1:1/mcp", ""),
		mustRequest(t, ctx, http.MethodDelete, "http://127.0.0.1:1/mcp", ""),
		mustRequest(t, ctx, http.MethodPost, "https://127.0.0.1:1/mcp", "{}"),
		mustRequest(t, ctx, http.MethodPost, "http://127.0.0.1:1/mcp", big),
		mustRequest(t, ctx, http.MethodPost, "http://bücher.example/mcp", "{}"),
		mustRequest(t, ctx, http.MethodPost, "http://[fe80::1%25eth0]:1/mcp", "{}"),
		withConnection,
		unknownLength,
	} {
		if _, err := rt.RoundTrip(req); err == nil || err.Error() != "passed on" {
			t.Errorf("%s %s: %v, want it passed on", req.Method, req.URL, err)
		}
	}
	want := []string{"GET http", "DELETE http", "POST https", "POST http", "POST http", "POST http", "POST http", "POST http"}
	if strings.Join(next.seen, ",") != strings.Join(want, ",") {
		t.Errorf("passed on %v, want %v", next.seen, want)
	}
}

func mustRequest(t *testing.T, ctx context.Context, method, url, body string) *http.Request {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, r)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// TestH1WireFormat: what h1 writes is a request net/http's server parser
// reads back whole: the configured headers, a User-Agent, the length.
func TestH1WireFormat(t *testing.T) {
	got := make(chan *http.Request, 1)
	bodies := make(chan string, 1)
	srv := newScripted(t, func(_ int, c net.Conn, br *bufio.Reader) {
		req, err := http.ReadRequest(br)
		if err != nil {
			t.Error(err)
			return
		}
		b, _ := io.ReadAll(req.Body)
		got <- req
		bodies <- string(b)
		io.WriteString(c, "HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n")
	})
	rt, _ := newH1(t)
	req := mustRequest(t, context.Background(), http.MethodPost, srv.url()+"?a=b%20c", `{"jsonrpc":"2.0"}`)
	req.Header.Set("Mcp-Session-Id", " abc\t")
	req.Header["X-Two"] = []string{"1", "2"}
	req.Header["User-Agent"] = []string{"first", "second"}
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Errorf("status %d", resp.StatusCode)
	}
	r := <-got
	if r.Method != http.MethodPost || r.RequestURI != "/mcp?a=b%20c" || r.Host != srv.ln.Addr().String() {
		t.Errorf("request line %s %s, Host %s", r.Method, r.RequestURI, r.Host)
	}
	if r.Header.Get("Mcp-Session-Id") != "abc" || strings.Join(r.Header["X-Two"], ",") != "1,2" || strings.Join(r.Header["User-Agent"], ",") != "first" {
		t.Errorf("headers %v", r.Header)
	}
	if r.ContentLength != 17 || <-bodies != `{"jsonrpc":"2.0"}` {
		t.Errorf("body length %d", r.ContentLength)
	}
}

// TestH1RefusesHeaderInjection: a value with a line break is not sent at
// all, and the error names the field but not the value; neither it nor a
// body longer than its length costs a connection.
func TestH1RefusesHeaderInjection(t *testing.T) {
	srv := newScripted(t, func(_ int, c net.Conn, br *bufio.Reader) { io.Copy(io.Discard, br) })
	rt, _ := newH1(t)
	defer func() {
		if n := srv.conns.Load(); n != 0 {
			t.Errorf("%d connections made for requests that cannot be sent", n)
		}
	}()
	long := mustRequest(t, context.Background(), http.MethodPost, srv.url(), "{}")
	long.ContentLength = 1
	if _, err := rt.RoundTrip(long); err == nil || !strings.Contains(err.Error(), "longer than its ContentLength") {
		t.Errorf("a body longer than its length: %v", err)
	}
	for _, h := range [][2]string{{"Authorization", "Bearer secret\r\nX-Evil: 1"}, {"Bad Name", "v"}, {"X-Nul", "a\x00b"}} {
		req := mustRequest(t, context.Background(), http.MethodPost, srv.url(), "{}")
		req.Header[h[0]] = []string{h[1]}
		_, err := rt.RoundTrip(req)
		var he *headerError
		if !errors.As(err, &he) || he.field != h[0] {
			t.Fatalf("%q: %v, want a headerError naming it", h[0], err)
		}
		if strings.Contains(err.Error(), "secret") {
			t.Errorf("the error shows the value: %v", err)
		}
	}
}

// TestH1DropsClosedConnections: a connection the server closed while it
// was idle is not written to; the next POST goes out once, on a new one.
func TestH1DropsClosedConnections(t *testing.T) {
	var requests atomic.Int32
	srv := newScripted(t, func(_ int, c net.Conn, br *bufio.Reader) {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		io.Copy(io.Discard, req.Body)
		requests.Add(1)
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}")
		// Keep-alive promised, but the connection ends here.
	})
	rt, _ := newH1(t)
	for i := range 3 {
		resp, err := post(context.Background(), t, rt, srv.url(), "{}")
		if err != nil {
			t.Fatalf("POST %d: %v", i, err)
		}
		replyText(t, resp)
		// Wait until the server's close reached this side, as it
		// would have after any idle time.
		waitFor(t, "the server's close", func() bool { return srv.conns.Load() == int32(i+1) && !idleAlive(rt) })
	}
	if n := requests.Load(); n != 3 {
		t.Errorf("the server got %d requests, want 3", n)
	}
}

// idleAlive reports whether rt holds an idle connection that alive
// accepts.
func idleAlive(rt *h1) bool {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	for _, pc := range rt.idle {
		if alive(pc.Conn) {
			return true
		}
	}
	return false
}

// TestH1ConnectionRules: "Connection: close" and bytes nobody asked for
// both keep a connection out of the pool; informational answers are
// skipped, and a server that sends too many, switches protocols or sends
// endless headers gets an error.
func TestH1ConnectionRules(t *testing.T) {
	cases := []struct {
		name  string
		reply string
		err   string // "" : a 200 with body {}
		conns int32  // after two exchanges
	}{
		{"close", "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}", "", 2},
		{"extra bytes", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}HTTP/1.1 200 OK\r\n", "", 2},
		{"keep-alive", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}", "", 1},
		{"http/1.0", "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\n{}", "", 2},
		{"until close", "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n{}", "", 2},
		{"1xx", "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}", "", 1},
		{"too many 1xx", strings.Repeat("HTTP/1.1 100 Continue\r\n\r\n", max1xx+1) + "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}", "informational", 2},
		{"101", "HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\n\r\n", "switched protocols", 2},
		{"not http", "SSH-2.0-OpenSSH_9.6\r\n", "malformed HTTP", 2},
		{"endless headers", "HTTP/1.1 200 OK\r\n" + strings.Repeat("X-A: "+strings.Repeat("a", 1000)+"\r\n", maxHeaderBytes/1000+10), "over 1048576 bytes", 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			checkNoLeak(t)
			srv := newScripted(t, func(_ int, c net.Conn, br *bufio.Reader) {
				for {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					io.Copy(io.Discard, req.Body)
					if _, err := io.WriteString(c, tc.reply); err != nil {
						return
					}
					if strings.HasPrefix(tc.name, "until close") {
						return
					}
				}
			})
			rt, _ := newH1(t)
			for range 2 {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				resp, err := post(ctx, t, rt, srv.url(), "{}")
				defer cancel()
				if tc.err != "" {
					if err == nil || !strings.Contains(err.Error(), tc.err) {
						t.Fatalf("error %v, want one with %q", err, tc.err)
					}
					continue
				}
				if err != nil {
					t.Fatal(err)
				}
				if got := replyText(t, resp); got != "{}" || resp.StatusCode != 200 {
					t.Fatalf("got %d %q", resp.StatusCode, got)
				}
			}
			if n := srv.conns.Load(); n != tc.conns {
				t.Errorf("two exchanges used %d connections, want %d", n, tc.conns)
			}
		})
	}
}

// TestH1Cancel: a context that ends while h1 waits for the answer's
// headers, or in the middle of its body, ends the wait at once with the
// context's cause, and the connection is not used again.
func TestH1Cancel(t *testing.T) {
	checkNoLeak(t)
	srv := newScripted(t, func(n int, c net.Conn, br *bufio.Reader) {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		io.Copy(io.Discard, req.Body)
		if n == 2 {
			// A stream that never ends.
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n6\r\ndata: \r\n")
		}
		io.Copy(io.Discard, br) // until the connection ends
	})
	rt, _ := newH1(t)
	cause := errors.New("the caller gave up")

	ctx, cancel := context.WithCancelCause(context.Background())
	time.AfterFunc(50*time.Millisecond, func() { cancel(cause) })
	if _, err := post(ctx, t, rt, srv.url(), "{}"); !errors.Is(err, cause) {
		t.Fatalf("waiting for headers: %v, want the cause", err)
	}

	ctx, cancel = context.WithCancelCause(context.Background())
	resp, err := post(ctx, t, rt, srv.url(), "{}")
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 6)
	if _, err := io.ReadFull(resp.Body, buf); err != nil {
		t.Fatal(err)
	}
	time.AfterFunc(50*time.Millisecond, func() { cancel(cause) })
	if _, err := resp.Body.Read(buf); !errors.Is(err, cause) {
		t.Fatalf("reading the stream: %v, want the cause", err)
	}
	resp.Body.Close()
	if n := srv.conns.Load(); n != 2 {
		t.Errorf("%d connections, want 2 (the first one dropped)", n)
	}
	rt.mu.Lock()
	idle := len(rt.idle)
	rt.mu.Unlock()
	if idle != 0 {
		t.Errorf("%d idle connections after two cancelled exchanges", idle)
	}
}

// TestH1CloseEndsStream: closing a stream's body from another goroutine
// ends a Read blocked in it.
func TestH1CloseEndsStream(t *testing.T) {
	checkNoLeak(t)
	srv := newScripted(t, func(_ int, c net.Conn, br *bufio.Reader) {
		if _, err := http.ReadRequest(br); err != nil {
			return
		}
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
		io.Copy(io.Discard, br)
	})
	rt, _ := newH1(t)
	resp, err := post(context.Background(), t, rt, srv.url(), "{}")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := resp.Body.Read(make([]byte, 10))
		done <- err
	}()
	time.Sleep(20 * time.Millisecond)
	resp.Body.Close()
	select {
	case err := <-done:
		if err == nil {
			t.Error("Read after Close returned no error")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not end the Read")
	}
}

// TestH1Concurrent: callers at once each get their own answer; the pool
// keeps at most h1MaxIdle connections.
func TestH1Concurrent(t *testing.T) {
	checkNoLeak(t)
	srv, _ := echoServer(t)
	rt, _ := newH1(t)
	var wg sync.WaitGroup
	for g := range 24 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 30 {
				body := fmt.Sprintf(`{"g":%d,"i":%d}`, g, i)
				resp, err := post(context.Background(), t, rt, srv.URL, body)
				if err != nil {
					t.Error(err)
					return
				}
				if got := replyText(t, resp); got != body {
					t.Errorf("got %q, want %q", got, body)
					return
				}
			}
		}()
	}
	wg.Wait()
	rt.mu.Lock()
	idle := len(rt.idle)
	rt.mu.Unlock()
	if idle > h1MaxIdle {
		t.Errorf("%d idle connections kept, at most %d", idle, h1MaxIdle)
	}
}

// TestH1Close: after shutdown the idle connections are closed (the
// server sees them end) and nothing new is dialled.
func TestH1Close(t *testing.T) {
	ended := make(chan struct{}, 1)
	srv := newScripted(t, func(_ int, c net.Conn, br *bufio.Reader) {
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				ended <- struct{}{}
				return
			}
			io.Copy(io.Discard, req.Body)
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}")
		}
	})
	rt, _ := newH1(t)
	resp, err := post(context.Background(), t, rt, srv.url(), "{}")
	if err != nil {
		t.Fatal(err)
	}
	replyText(t, resp)
	rt.shutdown()
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the idle connection stayed open")
	}
	if _, err := post(context.Background(), t, rt, srv.url(), "{}"); !errors.Is(err, net.ErrClosed) {
		t.Errorf("after close: %v, want net.ErrClosed", err)
	}
	if n := srv.conns.Load(); n != 1 {
		t.Errorf("%d connections, want 1", n)
	}
}

// TestH1ThroughConn: a session's POSTs, JSON and SSE answers alike, go
// through h1 and reuse its connections: 20 calls, a few connections. (An
// SSE answer's body is read to its end on another goroutine after the
// caller has its answer, so the next call may need a second one.)
func TestH1ThroughConn(t *testing.T) {
	e := newEnv(t)
	_, url := e.testServer(nil)
	c, conn := e.connect(e.config(url), mcp.ClientOptions{})
	for i := range 10 {
		if got := call(t, c, "add", map[string]any{"a": i, "b": 1}); got != fmt.Sprint(i+1) {
			t.Fatalf("add = %q", got)
		}
		// echo logs before it answers: an SSE reply.
		if got := call(t, c, "echo", map[string]any{"message": "hi"}); got != "hi" {
			t.Fatalf("echo = %q", got)
		}
	}
	// The last answer's stream is read to its end on another goroutine,
	// which then gives its connection back.
	waitFor(t, "an idle connection kept after the calls", func() bool {
		conn.h1.mu.Lock()
		defer conn.h1.mu.Unlock()
		return len(conn.h1.idle) > 0
	})
	if n := len(e.dial.seen()); n > 4 {
		t.Errorf("%d connections dialled for 20 calls, want at most 4 (h1's and the GET stream's)", n)
	}
}

// FuzzH1Response: whatever a server answers, h1 returns an error or a
// response whose body ends (read to its end or failing), and never
// panics or waits past its context. Each answer comes over an in-memory
// connection, two exchanges per input, so that a connection given back to
// the pool is tried again.
func FuzzH1Response(f *testing.F) {
	for _, s := range []string{
		"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
		"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\ndata: {}\n\n",
		"HTTP/1.0 200 OK\r\n\r\n{}",
		"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n{}",
		"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}",
		"HTTP/1.1 204 No Content\r\n\r\nHTTP/1.1 200 OK\r\n\r\n",
		"HTTP/1.1 101 Switching Protocols\r\n\r\n",
		"garbage\r\n\r\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, answer []byte) {
		if len(answer) > 4<<10 {
			return
		}
		rt := &h1{next: &nextRecorder{}, dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
			client, server := net.Pipe()
			go func() {
				defer server.Close()
				// One answer, then the end of the connection: a body
				// that wants more sees it at once, and the next exchange
				// finds the pooled connection dead when it writes.
				req, err := http.ReadRequest(bufio.NewReader(server))
				if err != nil {
					return
				}
				io.Copy(io.Discard, req.Body)
				server.Write(answer)
			}()
			return client, nil
		}}
		defer rt.shutdown()
		for range 2 {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://127.0.0.1:9/mcp", strings.NewReader("{}"))
			resp, err := rt.RoundTrip(req)
			if err == nil {
				// The body ends: at its end, at the connection's end,
				// or when the context does.
				io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
				resp.Body.Close()
			}
			cancel()
		}
	})
}

// failingConn fails its next Write without writing anything, as a
// connection the server closed just after alive looked at it does.
type failingConn struct {
	*net.TCPConn
	fail *atomic.Bool
}

func (c failingConn) Write(b []byte) (int, error) {
	if c.fail.CompareAndSwap(true, false) {
		return 0, syscall.ECONNRESET
	}
	return c.TCPConn.Write(b)
}

// TestH1ResendsUnwrittenRequest: a request none of which went out on a
// reused connection goes out once more, whole, on a new one.
func TestH1ResendsUnwrittenRequest(t *testing.T) {
	checkNoLeak(t)
	srv, conns := echoServer(t)
	var fail atomic.Bool
	var d net.Dialer
	rt := &h1{next: &nextRecorder{}, dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return failingConn{c.(*net.TCPConn), &fail}, nil
	}}
	defer rt.shutdown()
	for i := range 2 {
		body := fmt.Sprintf(`{"n":%d}`, i)
		resp, err := post(context.Background(), t, rt, srv.URL, body)
		if err != nil {
			t.Fatalf("POST %d: %v", i, err)
		}
		if got := replyText(t, resp); got != body {
			t.Fatalf("reply %q, want %q", got, body)
		}
		fail.Store(true) // the pooled connection's next write fails
	}
	if n := conns.Load(); n != 2 {
		t.Errorf("%d connections, want 2 (the second after the failed write)", n)
	}
}

// TestH1ReapsClosedConnections: an idle connection the server closed is
// closed here too without waiting for the next request, and the reaper
// stops once nothing is idle.
func TestH1ReapsClosedConnections(t *testing.T) {
	checkNoLeak(t)
	srv := newScripted(t, func(_ int, c net.Conn, br *bufio.Reader) {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		io.Copy(io.Discard, req.Body)
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}")
	})
	rt, _ := newH1(t)
	rt.every = 10 * time.Millisecond
	resp, err := post(context.Background(), t, rt, srv.url(), "{}")
	if err != nil {
		t.Fatal(err)
	}
	replyText(t, resp)
	waitFor(t, "the reaper to close the connection and stop", func() bool {
		rt.mu.Lock()
		defer rt.mu.Unlock()
		return len(rt.idle) == 0 && rt.reaper == nil
	})
}

// TestH1ReaperKeepsLiveConnections: reaping leaves an open connection in
// the pool for the next request.
func TestH1ReaperKeepsLiveConnections(t *testing.T) {
	checkNoLeak(t)
	srv, conns := echoServer(t)
	rt, _ := newH1(t)
	rt.every = time.Millisecond
	for range 3 {
		resp, err := post(context.Background(), t, rt, srv.URL, "{}")
		if err != nil {
			t.Fatal(err)
		}
		replyText(t, resp)
		time.Sleep(20 * time.Millisecond) // a few reaps
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("%d connections, want 1: the reaper closed a live one", n)
	}
}
