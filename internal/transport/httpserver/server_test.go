package httpserver

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nexus-mcp/nexus/host/mcp"
)

func TestAppendEvent(t *testing.T) {
	got := string(appendEvent(nil, "p1", 3, []byte("a\nb")))
	if got != "id: p1-3\ndata: a\ndata: b\n\n" {
		t.Errorf("%q", got)
	}
	if got := string(appendEvent(nil, "g", 0, nil)); got != "id: g-0\ndata:\n\n" {
		t.Errorf("%q", got)
	}
	if got := string(appendLegacyEvent(nil, []byte(`{"a":1}`))); got != "event: message\ndata: {\"a\":1}\n\n" {
		t.Errorf("%q", got)
	}
	// CR is JSON white space and an SSE line end: a lone one would cut a
	// data line, CRLF must not make an empty line (the event's end).
	if got := string(appendEvent(nil, "p1", 4, []byte("{\"a\":\r1,\r\n\"b\":2}"))); got != "id: p1-4\ndata: {\"a\":\ndata: 1,\ndata: \ndata: \"b\":2}\n\n" {
		t.Errorf("%q", got)
	}
}

// held and release let a test keep a "hold" call in flight.
var (
	held    = make(chan struct{}, 1)
	release = make(chan struct{})
)

// server is an mcp.Server whose "talk" tool logs its argument and then
// answers with it, so a test can see which stream each log went to; its
// "hold" tool answers once release is closed.
func server() ServeFunc {
	s := mcp.NewServer(mcp.Implementation{Name: "t", Version: "1"}, mcp.ServerOptions{Logging: true})
	s.AddTool(mcp.Tool{Name: "hold"}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		held <- struct{}{}
		select {
		case <-release:
		case <-ctx.Done():
		}
		return &mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent("released")}}, nil
	})
	s.AddTool(mcp.Tool{Name: "talk"}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var a struct{ Word string }
		json.Unmarshal(req.Arguments, &a)
		meet(ctx) // both calls are in flight at once
		req.Session.Log(ctx, "info", "talk", a.Word)
		meet(ctx) // and stay so until both have logged
		return &mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent(a.Word)}}, nil
	})
	return func(ctx context.Context, conn mcp.Conn, _ *Session) error { return s.Serve(ctx, conn) }
}

var (
	pairMu      sync.Mutex
	pairWaiting chan struct{}
)

// meet holds a "talk" call until another one reaches meet too, then lets
// both go on: a rendezvous of two calls in flight, not a sleep that hopes
// for one.
func meet(ctx context.Context) {
	pairMu.Lock()
	if w := pairWaiting; w != nil {
		pairWaiting = nil
		pairMu.Unlock()
		close(w)
		return
	}
	w := make(chan struct{})
	pairWaiting = w
	pairMu.Unlock()
	select {
	case <-w:
		return
	case <-ctx.Done():
	case <-time.After(10 * time.Second): // the other never came; the test fails
	}
	pairMu.Lock()
	if pairWaiting == w {
		pairWaiting = nil
	}
	pairMu.Unlock()
}

type env struct {
	t   *testing.T
	h   *Handler
	url string
}

func newEnv(t *testing.T, o Options) *env {
	t.Helper()
	h := New(server(), o)
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	mux.HandleFunc("/sse", h.LegacySSE)
	mux.HandleFunc("/messages", h.LegacyMessage)
	srv := httptest.NewServer(mux)
	t.Cleanup(func() { h.Close(); srv.CloseClientConnections(); srv.Close() })
	return &env{t: t, h: h, url: srv.URL}
}

var client = &http.Client{Timeout: 30 * time.Second}

func (e *env) do(method, path, body string, hdr map[string]string) (*http.Response, string) {
	e.t.Helper()
	req, _ := http.NewRequest(method, e.url+path, strings.NewReader(body))
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b)
}

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

func (e *env) open(hdr map[string]string) string {
	e.t.Helper()
	resp, body := e.do(http.MethodPost, "/mcp", initBody, hdr)
	if resp.StatusCode != 200 {
		e.t.Fatalf("initialize: %d %s", resp.StatusCode, body)
	}
	sid := resp.Header.Get("Mcp-Session-Id")
	h := map[string]string{"Mcp-Session-Id": sid}
	for k, v := range hdr {
		h[k] = v
	}
	e.do(http.MethodPost, "/mcp", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, h)
	return sid
}

// Two calls in flight at once: each one's log message travels on its own
// request's stream (mcp.RelatedRequest), not the newest one's.
func TestRelatedRequestRouting(t *testing.T) {
	e := newEnv(t, Options{})
	sid := e.open(nil)
	var wg sync.WaitGroup
	for _, word := range []string{"alpha", "beta"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, body := e.do(http.MethodPost, "/mcp", `{"jsonrpc":"2.0","id":"`+word+`","method":"tools/call","params":{"name":"talk","arguments":{"word":"`+word+`"}}}`,
				map[string]string{"Mcp-Session-Id": sid})
			other := map[string]string{"alpha": "beta", "beta": "alpha"}[word]
			if !strings.Contains(body, `"data":"`+word+`"`) || strings.Contains(body, other) {
				t.Errorf("%s's stream: %s", word, body)
			}
		}()
	}
	wg.Wait()
}

func TestOriginsAndCORS(t *testing.T) {
	e := newEnv(t, Options{AllowOrigin: func(o string) bool { return o == "https://app.example.com" }})
	resp, body := e.do(http.MethodPost, "/mcp", initBody, map[string]string{"Origin": "https://evil.example"})
	if resp.StatusCode != 403 || !strings.Contains(body, "not allowed") {
		t.Errorf("foreign origin: %d %s", resp.StatusCode, body)
	}
	resp, _ = e.do(http.MethodOptions, "/mcp", "", map[string]string{"Origin": "https://app.example.com", "Access-Control-Request-Method": "POST"})
	if resp.StatusCode != 204 || resp.Header.Get("Access-Control-Allow-Origin") != "https://app.example.com" ||
		!strings.Contains(resp.Header.Get("Access-Control-Allow-Headers"), "Mcp-Session-Id") {
		t.Errorf("preflight: %d %v", resp.StatusCode, resp.Header)
	}
	resp, _ = e.do(http.MethodPost, "/mcp", initBody, map[string]string{"Origin": "https://app.example.com"})
	if resp.StatusCode != 200 || !strings.Contains(resp.Header.Get("Access-Control-Expose-Headers"), "Mcp-Session-Id") {
		t.Errorf("allowed origin: %d %v", resp.StatusCode, resp.Header)
	}
}

func TestAuthenticate(t *testing.T) {
	e := newEnv(t, Options{Authenticate: func(r *http.Request) (string, error) {
		switch r.Header.Get("Authorization") {
		case "Bearer a":
			return "alice", nil
		case "Bearer b":
			return "bob", nil
		case "Bearer x":
			return "", &AuthError{Status: 403, Message: "x may not"}
		}
		return "", errors.New("who are you")
	}})
	resp, body := e.do(http.MethodPost, "/mcp", initBody, nil)
	if resp.StatusCode != 401 || !strings.Contains(body, "who are you") {
		t.Errorf("no credentials: %d %s", resp.StatusCode, body)
	}
	resp, body = e.do(http.MethodPost, "/mcp", initBody, map[string]string{"Authorization": "Bearer x"})
	if resp.StatusCode != 403 || !strings.Contains(body, "x may not") {
		t.Errorf("refused: %d %s", resp.StatusCode, body)
	}
	sid := e.open(map[string]string{"Authorization": "Bearer a"})
	for _, m := range []string{http.MethodPost, http.MethodGet, http.MethodDelete} {
		resp, _ = e.do(m, "/mcp", `{"jsonrpc":"2.0","id":2,"method":"ping"}`, map[string]string{"Authorization": "Bearer b", "Mcp-Session-Id": sid, "Accept": "application/json, text/event-stream"})
		if resp.StatusCode != 403 {
			t.Errorf("%s with another principal's session: %d", m, resp.StatusCode)
		}
	}
}

func TestLimits(t *testing.T) {
	release = make(chan struct{})
	e := newEnv(t, Options{MaxRequestsPerSession: 1, MaxBodyBytes: 1024, Raise: func(l string) string { return "raise " + l }})
	sid := e.open(nil)
	resp, body := e.do(http.MethodPost, "/mcp", `{"jsonrpc":"2.0","id":1,"method":"x","params":"`+strings.Repeat("a", 2000)+`"}`, map[string]string{"Mcp-Session-Id": sid})
	if resp.StatusCode != 413 || !strings.Contains(body, "raise max_body_bytes") {
		t.Errorf("oversized: %d %s", resp.StatusCode, body)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.do(http.MethodPost, "/mcp", `{"jsonrpc":"2.0","id":"held","method":"tools/call","params":{"name":"hold"}}`, map[string]string{"Mcp-Session-Id": sid})
	}()
	select {
	case <-held:
	case <-time.After(30 * time.Second):
		t.Fatal("the held call never started")
	}
	resp, body = e.do(http.MethodPost, "/mcp", `{"jsonrpc":"2.0","id":3,"method":"ping"}`, map[string]string{"Mcp-Session-Id": sid})
	if resp.StatusCode != 429 || !strings.Contains(body, "raise max_requests_per_session") || resp.Header.Get("Retry-After") == "" {
		t.Errorf("a second request in flight: %d %v %s", resp.StatusCode, resp.Header, body)
	}
	close(release)
	<-done
	resp, _ = e.do(http.MethodPost, "/mcp", `{"jsonrpc":"2.0","id":4,"method":"ping"}`, map[string]string{"Mcp-Session-Id": sid})
	if resp.StatusCode != 200 {
		t.Errorf("after the held call: %d", resp.StatusCode)
	}
}

// The legacy HTTP+SSE transport: the endpoint event, then every message on
// the one stream; the session ends with it.
func TestLegacy(t *testing.T) {
	e := newEnv(t, Options{})
	req, _ := http.NewRequest(http.MethodGet, e.url+"/sse", nil)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	rd := bufio.NewReader(resp.Body)
	event := func() (string, string) {
		var name, data string
		for {
			line, err := rd.ReadString('\n')
			if err != nil {
				t.Fatal(err)
			}
			line = strings.TrimRight(line, "\n")
			switch {
			case line == "":
				return name, data
			case strings.HasPrefix(line, "event: "):
				name = line[7:]
			case strings.HasPrefix(line, "data: "):
				data += line[6:]
			}
		}
	}
	name, endpoint := event()
	if name != "endpoint" || !strings.HasPrefix(endpoint, "/messages?sessionId=") {
		t.Fatalf("first event %q %q", name, endpoint)
	}
	r, body := e.do(http.MethodPost, endpoint, initBody, nil)
	if r.StatusCode != 202 {
		t.Fatalf("initialize: %d %s", r.StatusCode, body)
	}
	if name, data := event(); name != "message" || !strings.Contains(data, `"protocolVersion"`) {
		t.Fatalf("answer %q %q", name, data)
	}
	r, _ = e.do(http.MethodPost, "/mcp", `{"jsonrpc":"2.0","id":2,"method":"ping"}`, map[string]string{"Mcp-Session-Id": strings.TrimPrefix(endpoint, "/messages?sessionId=")})
	if r.StatusCode != 400 {
		t.Errorf("a legacy session on the streamable endpoint: %d", r.StatusCode)
	}
	resp.Body.Close()
	deadline := time.Now().Add(10 * time.Second)
	for e.h.Sessions() > 0 {
		if time.Now().After(deadline) {
			t.Fatal("the legacy session outlived its stream")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A POST's body goes to the deliver for checked messages when the server
// gave one (mcp.CheckedPushConn), anything else to the plain one; before
// the server starts there is none.
func TestDeliverFunc(t *testing.T) {
	sc := newSessionConn(&Options{}, false)
	var got []string
	plain := func([]byte) error { got = append(got, "plain"); return nil }
	checked := func([]byte) error { got = append(got, "checked"); return nil }
	if sc.deliverFunc(true) != nil || sc.deliverFunc(false) != nil {
		t.Fatal("a deliver before the server started")
	}
	sc.SetDeliverChecked(checked)
	if sc.deliverFunc(true) != nil {
		t.Fatal("the checked deliver without the plain one") // the Peer sets it first
	}
	sc.SetDeliver(plain)
	sc.deliverFunc(true)(nil)
	sc.deliverFunc(false)(nil)
	if strings.Join(got, " ") != "checked plain" {
		t.Fatalf("delivered through %v, want checked then plain", got)
	}
}
