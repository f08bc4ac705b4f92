package httptransport

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nexus-mcp/nexus/host/mcp"
)

// fakeMCP is a hand-written streamable HTTP server: it answers initialize
// and notifications itself and hands every other request to fn, so each
// test can misbehave in its own way after a normal handshake.
func fakeMCP(fn func(w http.ResponseWriter, r *http.Request, id json.RawMessage, method string)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		if r.Method == http.MethodDelete {
			return
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		body, _ := io.ReadAll(r.Body)
		json.Unmarshal(body, &m)
		switch {
		case m.Method == mcp.MethodServerDiscover:
			// A legacy server refuses a request outside a session, as
			// the 1.x SDK does; the client then initializes.
			refuseSessionless(w, m.ID)
		case m.Method == "initialize":
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Mcp-Session-Id", "sess-1")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"fake","version":"1"}}}`, m.ID)
		case len(m.ID) == 0 || m.Method == "":
			w.WriteHeader(http.StatusAccepted)
		default:
			fn(w, r, m.ID, m.Method)
		}
	})
}

// refuseSessionless answers as a legacy streamable HTTP server answers a
// request without a session (the era probe): 400 and a JSON-RPC error
// that is none of the modern ones.
func refuseSessionless(w http.ResponseWriter, id json.RawMessage) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32000,"message":"Bad Request: No valid session ID provided"}}`, id)
}

func writeResult(w io.Writer, id json.RawMessage) {
	fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"ok"}]}}`, id)
}

func TestHTMLInsteadOfJSON(t *testing.T) {
	e := newEnv(t)
	page := "<!DOCTYPE html>\n<html><head><title>Sign in</title></head><body>\x1b[31mplease log in</body></html>"
	url := e.serve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, page)
	}))
	c := e.dialConn(e.config(url + "/mcp"))
	_, err := mcp.Connect(testCtx(t), c, mcp.ClientOptions{})
	ue := wantErrAs[*UnexpectedResponseError](t, err)
	wantContains(t, ue.Error(), `server "test"`, url+"/mcp", `Content-Type "text/html; charset=utf-8"`, "<title>Sign in</title>", "MCP endpoint")
	if strings.ContainsAny(ue.BodyExcerpt, "\x1b\n") {
		t.Errorf("excerpt not sanitized: %q", ue.BodyExcerpt)
	}

	// The same page labelled as JSON, after a good handshake: the call
	// fails, the session lives on.
	url = e.serve(fakeMCP(func(w http.ResponseWriter, r *http.Request, id json.RawMessage, method string) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, page)
	}))
	cl, _ := e.connect(e.config(url), mcp.ClientOptions{})
	_, err = cl.CallTool(testCtx(t), "x", nil, nil)
	rpc := wantErrAs[*mcp.RPCError](t, err)
	wantContains(t, rpc.Message, "instead of a JSON-RPC message", "Sign in")
	if cl.Err() != nil {
		t.Errorf("session ended: %v", cl.Err())
	}
}

// TestHugeBody: a server streams up to 1 GiB of JSON; the client stops at
// the 10 MiB limit and never holds more than about that.
func TestHugeBody(t *testing.T) {
	for _, sse := range []bool{false, true} {
		t.Run(fmt.Sprintf("sse=%v", sse), func(t *testing.T) {
			e := newEnv(t)
			var sent atomic.Int64
			url := e.serve(fakeMCP(func(w http.ResponseWriter, r *http.Request, id json.RawMessage, method string) {
				if sse {
					w.Header().Set("Content-Type", "text/event-stream")
					io.WriteString(w, `data: {"jsonrpc":"2.0","id":1,"result":{"x":"`)
				} else {
					w.Header().Set("Content-Type", "application/json") // no Content-Length: chunked
					io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{"x":"`)
				}
				chunk := []byte(strings.Repeat("a", 64<<10))
				for sent.Load() < 1<<30 {
					n, err := w.Write(chunk)
					sent.Add(int64(n))
					if err != nil {
						return
					}
				}
			}))
			cl, _ := e.connect(e.config(url), mcp.ClientOptions{})
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			_, err := cl.CallTool(testCtx(t), "x", nil, nil)
			runtime.ReadMemStats(&after)
			tl := wantErrAs[*BodyTooLargeError](t, err)
			if !errors.As(err, new(*mcp.FrameTooLargeError)) || tl.Limit != mcp.MaxFrameSize {
				t.Errorf("%+v does not unwrap to mcp.FrameTooLargeError", tl)
			}
			wantContains(t, tl.Error(), `server "test"`, url, "10 MiB")
			if got := after.TotalAlloc - before.TotalAlloc; got > 64<<20 {
				t.Errorf("allocated %d MiB reading a capped body", got>>20)
			}
			if s := sent.Load(); s > 64<<20 {
				t.Errorf("the server could write %d MiB: the client kept reading", s>>20)
			}
			<-cl.Done() // an oversized message ends the session, as over stdio
		})
	}
}

func TestEndlessSSELine(t *testing.T) {
	e := newEnv(t)
	url := e.serve(fakeMCP(func(w http.ResponseWriter, r *http.Request, id json.RawMessage, method string) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: ")
		chunk := []byte(strings.Repeat("z", 64<<10))
		for i := 0; i < 1<<14; i++ { // up to 1 GiB, no newline
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	cl, _ := e.connect(e.config(url), mcp.ClientOptions{})
	_, err := cl.CallTool(testCtx(t), "x", nil, nil)
	wantErrAs[*BodyTooLargeError](t, err)
}

func TestSSEEventWithoutData(t *testing.T) {
	e := newEnv(t)
	url := e.serve(fakeMCP(func(w http.ResponseWriter, r *http.Request, id json.RawMessage, method string) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "event: message\n\nid: 1\n\n: keep-alive\n\nevent: message\ndata:\n\ndata: ")
		writeResult(w, id)
		io.WriteString(w, "\n\n")
	}))
	cl, _ := e.connect(e.config(url), mcp.ClientOptions{})
	res, err := cl.CallTool(testCtx(t), "x", nil, nil)
	if err != nil || res.Content[0].Text != "ok" {
		t.Fatalf("%+v %v", res, err)
	}
	// A stream of empty events only ends without an answer: a clear error.
	url = e.serve(fakeMCP(func(w http.ResponseWriter, r *http.Request, id json.RawMessage, method string) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "event: message\n\ndata:\n\n")
	}))
	cl, _ = e.connect(e.config(url), mcp.ClientOptions{})
	_, err = cl.CallTool(testCtx(t), "x", nil, nil)
	rpc := wantErrAs[*mcp.RPCError](t, err)
	wantContains(t, rpc.Message, `server "test"`, "ended before its response", "no event id")
}

func TestInvalidSessionID(t *testing.T) {
	for name, sid := range map[string]string{
		"space":     "abc def",
		"tab":       "abc\tdef",
		"empty":     "",
		"non-ascii": "abcé",
		"too long":  strings.Repeat("a", 257),
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			url := e.serve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header()["Mcp-Session-Id"] = []string{sid}
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{}}`)
			}))
			c := e.dialConn(e.config(url))
			_, err := mcp.Connect(testCtx(t), c, mcp.ClientOptions{})
			ie := wantErrAs[*InvalidSessionIDError](t, err)
			wantContains(t, ie.Error(), `server "test"`, url, "Mcp-Session-Id")
			if sid != "" && strings.Contains(ie.Error(), sid) {
				t.Error("the error repeats the session id")
			}
		})
	}
	if checkSessionID(strings.Repeat("!", 256), 1) != "" || checkSessionID("a~Z0", 1) != "" {
		t.Error("valid ids refused")
	}
}

// TestNeverAnswers: a server that accepts the connection and says nothing.
func TestNeverAnswers(t *testing.T) {
	e := newEnv(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var conns []net.Conn
	var mu sync.Mutex
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	})
	cfg := e.config("http://" + ln.Addr().String() + "/mcp")
	cfg.Timeout = 200 * time.Millisecond
	c := e.dialConn(cfg)
	start := time.Now()
	_, err = mcp.Connect(context.Background(), c, mcp.ClientOptions{})
	re := wantErrAs[*RequestError](t, err)
	if !re.Timeout() {
		t.Errorf("not a timeout: %v", re)
	}
	if d := time.Since(start); d > 10*time.Second { // without the timeout: never
		t.Errorf("took %s", d)
	}
	wantContains(t, re.Error(), `server "test"`, "no response within 200ms")
}

// TestRequestNeverAnswered: after a good handshake a call's POST hangs;
// the session's request timeout ends it, and the POST is abandoned.
func TestRequestNeverAnswered(t *testing.T) {
	e := newEnv(t)
	release := make(chan struct{})
	url := e.serve(fakeMCP(func(w http.ResponseWriter, r *http.Request, id json.RawMessage, method string) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer close(release)
	cl, _ := e.connect(e.config(url), mcp.ClientOptions{Timeout: 200 * time.Millisecond})
	_, err := cl.CallTool(context.Background(), "x", nil, nil)
	wantErrAs[*mcp.TimeoutError](t, err)
}

// TestConnectionReset: the connection dies in the middle of an SSE reply.
// Without an event id the call fails clearly; with one the client resumes.
func TestConnectionReset(t *testing.T) {
	reset := func(w http.ResponseWriter, prefix string) {
		conn, buf, err := http.NewResponseController(w).Hijack()
		if err != nil {
			panic(err)
		}
		buf.WriteString("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
		fmt.Fprintf(buf, "%x\r\n%s\r\n", len(prefix), prefix)
		buf.Flush()
		conn.(*net.TCPConn).SetLinger(0) // RST, not FIN
		conn.Close()
	}
	t.Run("not resumable", func(t *testing.T) {
		e := newEnv(t)
		url := e.serve(fakeMCP(func(w http.ResponseWriter, r *http.Request, id json.RawMessage, method string) {
			reset(w, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":1}}\n\ndata: {\"jsonr")
		}))
		cl, _ := e.connect(e.config(url), mcp.ClientOptions{})
		_, err := cl.CallTool(testCtx(t), "x", nil, nil)
		rpc := wantErrAs[*mcp.RPCError](t, err)
		wantContains(t, rpc.Message, `server "test"`, "ended before its response")
		if cl.Err() != nil {
			t.Errorf("session ended: %v", cl.Err())
		}
	})
	t.Run("resumed", func(t *testing.T) {
		e := newEnv(t)
		var lastID atomic.Value
		h := fakeMCP(func(w http.ResponseWriter, r *http.Request, id json.RawMessage, method string) {
			reset(w, "id: s1-0\nretry: 5\ndata:\n\n")
		})
		url := e.serve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodGet && r.Header.Get("Last-Event-Id") != "" {
				lastID.Store(r.Header.Get("Last-Event-Id"))
				w.Header().Set("Content-Type", "text/event-stream")
				io.WriteString(w, "id: s1-1\ndata: ")
				writeResult(w, json.RawMessage("2"))
				io.WriteString(w, "\n\n")
				return
			}
			h.ServeHTTP(w, r)
		}))
		cl, _ := e.connect(e.config(url), legacyOnly)
		res, err := cl.CallTool(testCtx(t), "x", nil, nil)
		if err != nil || res.Content[0].Text != "ok" {
			t.Fatalf("%+v %v", res, err)
		}
		if got, _ := lastID.Load().(string); got != "s1-0" {
			t.Errorf("resumed with Last-Event-ID %q", got)
		}
	})
}

func TestRetry(t *testing.T) {
	t.Run("503 with Retry-After", func(t *testing.T) {
		e := newEnv(t)
		var posts atomic.Int32
		rec := &recorder{}
		_, url := e.testServer(func(next http.Handler) http.Handler {
			return rec.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodPost && posts.Add(1) <= 2 {
					w.Header().Set("Retry-After", "0")
					http.Error(w, "busy", http.StatusServiceUnavailable)
					return
				}
				next.ServeHTTP(w, r)
			}))
		})
		e.connect(e.config(url), legacyOnly)
		inits := 0
		for _, r := range rec.all() {
			if strings.Contains(r.body, `"initialize"`) {
				inits++
			}
		}
		if inits != 3 {
			t.Errorf("initialize sent %d times, want 3 (two 503s)", inits)
		}
	})
	t.Run("429 until out of retries", func(t *testing.T) {
		e := newEnv(t)
		var n atomic.Int32
		url := e.serve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			n.Add(1)
			http.Error(w, "slow down", http.StatusTooManyRequests)
		}))
		cfg := e.config(url)
		cfg.MaxRetries = new(2)
		c := e.dialConn(cfg)
		_, err := mcp.Connect(testCtx(t), c, legacyOnly)
		se := wantErrAs[*HTTPStatusError](t, err)
		if se.Status != 429 || n.Load() != 3 {
			t.Errorf("status %d after %d attempts", se.Status, n.Load())
		}
		wantContains(t, se.Error(), "HTTP 429 Too Many Requests", "slow down")
	})
	t.Run("500 is not retried", func(t *testing.T) {
		e := newEnv(t)
		var n atomic.Int32
		url := e.serve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			n.Add(1)
			http.Error(w, "boom", http.StatusInternalServerError)
		}))
		c := e.dialConn(e.config(url))
		_, err := mcp.Connect(testCtx(t), c, legacyOnly)
		wantErrAs[*HTTPStatusError](t, err)
		if n.Load() != 1 {
			t.Errorf("%d attempts", n.Load())
		}
	})
	t.Run("connection refused", func(t *testing.T) {
		e := newEnv(t)
		_, url := e.testServer(nil)
		e.dial.fail, e.dial.err = 2, &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
		e.connect(e.config(url), mcp.ClientOptions{})
		if n := len(e.dial.seen()); n < 3 {
			t.Errorf("%d dials, want 3 or more", n)
		}
	})
	t.Run("connection refused, no retries", func(t *testing.T) {
		e := newEnv(t)
		ln, _ := net.Listen("tcp", "127.0.0.1:0")
		addr := ln.Addr().String()
		ln.Close() // nothing listens there now
		cfg := e.config("http://" + addr + "/mcp")
		cfg.MaxRetries = new(0)
		c := e.dialConn(cfg)
		_, err := mcp.Connect(testCtx(t), c, mcp.ClientOptions{})
		re := wantErrAs[*RequestError](t, err)
		if !errors.Is(err, syscall.ECONNREFUSED) || len(e.dial.seen()) != 1 {
			t.Errorf("%v after %d dials", re, len(e.dial.seen()))
		}
		wantContains(t, re.Error(), `server "test"`, "POST http://"+addr+"/mcp failed", "connection refused")
	})
}

func TestRetryAfter(t *testing.T) {
	h := http.Header{}
	def := 7 * time.Second
	for v, want := range map[string]time.Duration{
		"":                              def,
		"3":                             3 * time.Second,
		"0":                             0,
		"86400":                         MaxRetryDelay,
		"-1":                            def,
		"soon":                          def,
		"Wed, 21 Oct 2015 07:28:00 GMT": 0, // in the past
	} {
		h.Set("Retry-After", v)
		if got := retryAfter(h, def); got != want {
			t.Errorf("Retry-After %q: %s, want %s", v, got, want)
		}
	}
	c := &Conn{cfg: Config{Options: Options{RetryBackoff: time.Second}}}
	for attempt, hi := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second} {
		for range 20 {
			if d := c.backoff(attempt); d < hi/2 || d > hi {
				t.Fatalf("backoff(%d) = %s, want in [%s, %s]", attempt, d, hi/2, hi)
			}
		}
	}
	if d := c.backoff(60); d > MaxRetryDelay {
		t.Errorf("backoff not capped: %s", d)
	}
}

// TestDribblingInitialize: a server that sends the initialize reply's
// headers and then a byte a second must not hold the caller: the server's
// timeout ends the read, and so does the caller's context (Ctrl-C).
func TestDribblingInitialize(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	e := newEnv(t)
	srv := e.serve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", "500")
		w.WriteHeader(http.StatusOK)
		for range 500 {
			if _, err := w.Write([]byte(" ")); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-release:
				return
			case <-r.Context().Done():
				return
			case <-time.After(time.Second):
			}
		}
	}))
	cfg := e.config(srv + "/mcp")
	cfg.Timeout = 300 * time.Millisecond
	start := time.Now()
	_, err := mcp.Connect(context.Background(), e.dialConn(cfg), mcp.ClientOptions{})
	re := wantErrAs[*RequestError](t, err)
	if !re.Timeout() {
		t.Errorf("not a timeout: %v", re)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the server's 300ms timeout took %s to end the read", d)
	}

	// No timeout to speak of: the caller's context ends it.
	cfg.Timeout = time.Hour
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start = time.Now()
	_, err = mcp.Connect(ctx, e.dialConn(cfg), mcp.ClientOptions{})
	if err == nil {
		t.Fatal("connected")
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the caller's context took %s to end the read", d)
	}
}
