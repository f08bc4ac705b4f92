package testserver

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/nexus-mcp/nexus/host/mcp"
)

// The handler is tested with raw HTTP here; internal/transport/http tests it
// end to end with the real client.

type httpEnv struct {
	t   *testing.T
	h   *HTTPHandler
	url string
	sid string
}

func newHTTPEnv(t *testing.T, opts ...HTTPOption) *httpEnv {
	t.Helper()
	h := NewHTTPHandler(Options{}, opts...)
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		h.Close()
		srv.CloseClientConnections()
		srv.Close()
	})
	return &httpEnv{t: t, h: h, url: srv.URL}
}

func (e *httpEnv) do(method, body string, hdr map[string]string) *http.Response {
	e.t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, e.url, r)
	if err != nil {
		e.t.Fatal(err)
	}
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
	}
	if method == http.MethodGet {
		req.Header.Set("Accept", "text/event-stream")
	}
	if e.sid != "" {
		req.Header.Set("Mcp-Session-Id", e.sid)
	}
	for k, v := range hdr {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := testClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func (e *httpEnv) status(resp *http.Response, want int) string {
	e.t.Helper()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		e.t.Fatalf("%s: status %d, want %d: %s", resp.Request.Method, resp.StatusCode, want, b)
	}
	return string(b)
}

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

// initialize opens a session.
func (e *httpEnv) initialize() {
	e.t.Helper()
	resp := e.do(http.MethodPost, initBody, nil)
	body := e.status(resp, http.StatusOK)
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		e.t.Fatalf("initialize answered with %q", ct)
	}
	e.sid = resp.Header.Get("Mcp-Session-Id")
	if len(e.sid) != 32 || !strings.Contains(body, `"protocolVersion":"2025-11-25"`) {
		e.t.Fatalf("session %q, body %s", e.sid, body)
	}
	e.status(e.do(http.MethodPost, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, nil), http.StatusAccepted)
}

// testClient bounds every exchange, streams included: a server that stops
// talking fails the test instead of hanging it.
var testClient = &http.Client{Timeout: 10 * time.Second}

type sseEvent struct{ id, data string }

// events reads SSE events until n arrived or the stream ends.
func events(t *testing.T, r io.Reader, n int) []sseEvent {
	t.Helper()
	var out []sseEvent
	var cur sseEvent
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for len(out) < n && sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			out = append(out, cur)
			cur = sseEvent{}
		case strings.HasPrefix(line, "id: "):
			cur.id = line[4:]
		case strings.HasPrefix(line, "data:"):
			cur.data += strings.TrimPrefix(line[5:], " ")
		case strings.HasPrefix(line, "retry: "):
			cur.data = line
		}
	}
	return out
}

func TestHTTPSessionLifecycle(t *testing.T) {
	e := newHTTPEnv(t)
	e.status(e.do(http.MethodPost, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, nil), http.StatusBadRequest)
	e.initialize()
	body := e.status(e.do(http.MethodPost, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"add","arguments":{"a":1,"b":2}}}`, nil), http.StatusOK)
	if !strings.Contains(body, `"text":"3"`) {
		t.Errorf("add: %s", body)
	}
	sid := e.sid
	e.sid = "0123456789abcdef0123456789abcdef"
	e.status(e.do(http.MethodPost, `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`, nil), http.StatusNotFound)
	e.sid = sid
	e.status(e.do(http.MethodDelete, "", nil), http.StatusNoContent)
	e.status(e.do(http.MethodPost, `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`, nil), http.StatusNotFound)
	e.status(e.do(http.MethodGet, "", nil), http.StatusNotFound)
	e.status(e.do(http.MethodDelete, "", nil), http.StatusNotFound)
}

func TestHTTPValidation(t *testing.T) {
	e := newHTTPEnv(t)
	e.status(e.do(http.MethodPost, initBody, map[string]string{"Content-Type": "text/plain"}), http.StatusUnsupportedMediaType)
	e.status(e.do(http.MethodPost, initBody, map[string]string{"Accept": "application/json"}), http.StatusNotAcceptable)
	e.status(e.do(http.MethodPost, "["+initBody+"]", nil), http.StatusBadRequest)
	e.status(e.do(http.MethodPost, "{oops", nil), http.StatusBadRequest)
	e.status(e.do(http.MethodPost, initBody, map[string]string{"Mcp-Protocol-Version": "1999-01-01"}), http.StatusBadRequest)
	e.status(e.do(http.MethodPost, initBody, map[string]string{"Origin": "http://evil.example"}), http.StatusForbidden)
	e.status(e.do(http.MethodPost, initBody, map[string]string{"Origin": "http://localhost:3000"}), http.StatusOK)
	e.status(e.do(http.MethodPut, "", nil), http.StatusMethodNotAllowed)
	e.initialize()
	e.status(e.do(http.MethodGet, "", map[string]string{"Accept": "application/json"}), http.StatusNotAcceptable)
	e.status(e.do(http.MethodGet, "", map[string]string{"Last-Event-Id": "nope"}), http.StatusBadRequest)
	e.status(e.do(http.MethodGet, "", map[string]string{"Last-Event-Id": "g-99"}), http.StatusBadRequest)
}

func TestHTTPReplyAsSSE(t *testing.T) {
	e := newHTTPEnv(t)
	e.initialize()
	resp := e.do(http.MethodPost, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}}}`, nil)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	evs := events(t, resp.Body, 10)
	if len(evs) != 3 {
		t.Fatalf("events %+v", evs)
	}
	if evs[0].data != "" || !strings.HasSuffix(evs[0].id, "-0") {
		t.Errorf("no priming event first: %+v", evs[0])
	}
	if !strings.Contains(evs[1].data, "notifications/message") || !strings.Contains(evs[2].data, `"id":5`) {
		t.Errorf("events %+v", evs)
	}
	stream := strings.TrimSuffix(evs[0].id, "-0")
	if evs[1].id != stream+"-1" || evs[2].id != stream+"-2" {
		t.Errorf("ids %q %q", evs[1].id, evs[2].id)
	}
	// The stream can be replayed from its last id while it is retained.
	r2 := e.do(http.MethodGet, "", map[string]string{"Last-Event-Id": stream + "-1"})
	evs = events(t, r2.Body, 10)
	if len(evs) != 2 || !strings.Contains(evs[1].data, `"id":5`) {
		t.Errorf("replay %+v", evs)
	}
}

func TestHTTPStandaloneStream(t *testing.T) {
	e := newHTTPEnv(t)
	e.initialize()
	// Produced before any GET: buffered for the first one.
	e.h.Server().AddTool(mcp.Tool{Name: "one"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, e.url, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", e.sid)
	resp, err := testClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	evs := events(t, resp.Body, 2)
	if len(evs) != 2 || evs[0].id != "g-0" || evs[1].id != "g-1" || !strings.Contains(evs[1].data, "tools/list_changed") {
		t.Fatalf("events %+v", evs)
	}
	cancel()
	resp.Body.Close()
	// Missed while disconnected, replayed after the last id seen.
	e.h.Server().AddPrompt(mcp.Prompt{Name: "two"}, nil)
	resp = e.do(http.MethodGet, "", map[string]string{"Last-Event-Id": "g-1"})
	evs = events(t, resp.Body, 2)
	if len(evs) != 2 || evs[1].id != "g-2" || !strings.Contains(evs[1].data, "prompts/list_changed") {
		t.Fatalf("events %+v", evs)
	}
}

func TestHTTPPolling(t *testing.T) {
	e := newHTTPEnv(t, WithPolling(1, 10*time.Millisecond))
	e.initialize()
	resp := e.do(http.MethodPost, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}}}`, nil)
	evs := events(t, resp.Body, 10) // the server closes after one message
	if len(evs) != 3 || evs[2].data != "retry: 10" {
		t.Fatalf("events %+v", evs)
	}
	resp = e.do(http.MethodGet, "", map[string]string{"Last-Event-Id": evs[1].id})
	evs = events(t, resp.Body, 10)
	if len(evs) != 2 || !strings.Contains(evs[1].data, `"id":5`) {
		t.Fatalf("resumed %+v", evs)
	}
}

func TestHTTPSessionLimits(t *testing.T) {
	e := newHTTPEnv(t, WithMaxSessions(1), WithSessionIdleTimeout(50*time.Millisecond))
	e.initialize()
	e.sid = ""
	resp := e.do(http.MethodPost, initBody, nil)
	e.status(resp, http.StatusServiceUnavailable)
	if resp.Header.Get("Retry-After") == "" {
		t.Error("503 without Retry-After")
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if e.h.Sessions() == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("idle session not ended")
		}
		time.Sleep(10 * time.Millisecond)
	}
	e.initialize()
}

func TestServeListener(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ServeListener(ctx, Options{}, ln) }()
	base := "http://" + ln.Addr().String()
	e := &httpEnv{t: t, url: base + EndpointPath}
	e.initialize()
	e.url = base + "/other"
	if body := e.status(e.do(http.MethodGet, "", nil), http.StatusNotFound); !strings.Contains(body, EndpointPath) {
		t.Errorf("404 body %q", body)
	}
	// An open stream does not hold up the shutdown.
	e.url = base + EndpointPath
	req, _ := http.NewRequest(http.MethodGet, e.url, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", e.sid)
	resp, err := testClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("ServeListener returned %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ServeListener did not return")
	}
	if err := ServeHTTP(context.Background(), Options{}, "256.0.0.1:0"); err == nil || !strings.Contains(err.Error(), "256.0.0.1:0") {
		t.Errorf("bad address: %v", err)
	}
}
