package httpserver

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/nexus-mcp/nexus/host/mcp"
)

// rawPost sends a POST's headers and the first byte of a body that says
// it has 1000, then reads the answer's status line and waits for the
// server to close the connection. The read deadline (30 s) is a generous
// bound on an answer the server gives at once; before issue 37 it never
// came.
func rawPost(url string, hdr string) (status string, closed bool) {
	status, _, closed = rawPostBody(url, hdr)
	return status, closed
}

// rawPostBody is rawPost that also returns the answer's body.
func rawPostBody(url string, hdr string) (status, body string, closed bool) {
	c, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		return err.Error(), "", false
	}
	defer c.Close()
	fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n%sContent-Length: 1000\r\n\r\n{",
		strings.TrimPrefix(url, "http://"), hdr)
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return "no answer: " + err.Error(), "", false
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	_, err = br.ReadByte()
	return resp.Status, string(b), errors.Is(err, io.EOF)
}

func authAlice(r *http.Request) (string, error) {
	if r.Header.Get("Authorization") == "Bearer a" {
		return "alice", nil
	}
	return "", &AuthError{Status: http.StatusUnauthorized, Message: "no"}
}

// An unauthenticated POST is refused on its headers: 401 at once, its
// body unread, and the connection closed (issue 37: 200 such connections
// held the server, each waiting for a body it would then refuse).
func TestUnauthenticatedBodyNotRead(t *testing.T) {
	e := newEnv(t, Options{Authenticate: authAlice})
	type result struct {
		status string
		closed bool
	}
	res := make(chan result, 20)
	for i := range 20 {
		hdr := ""
		if i%2 == 1 {
			hdr = "Authorization: Bearer wrong\r\n"
		}
		go func() {
			s, c := rawPost(e.url, hdr)
			res <- result{s, c}
		}()
	}
	for range 20 {
		if r := <-res; !strings.HasPrefix(r.status, "401") || !r.closed {
			t.Errorf("got %q, closed %v; want 401 and the connection closed", r.status, r.closed)
		}
	}
}

// A body that trickles in gets 408 and the connection closes.
func TestSlowBody(t *testing.T) {
	e := newEnv(t, Options{Authenticate: authAlice, BodyTimeout: 100 * time.Millisecond, MinBodyRate: 1 << 20})
	s, body, closed := rawPostBody(e.url, "Authorization: Bearer a\r\n")
	if !strings.HasPrefix(s, "408") || !closed || !strings.Contains(body, "the request body did not arrive in time: 1 of 1000 bytes") {
		t.Errorf("got %q %s, closed %v; want 408 and the connection closed", s, body, closed)
	}
	t.Logf("%s", body)
	// A body sent at once is not held to the deadline after it is read.
	sid := e.open(map[string]string{"Authorization": "Bearer a"})
	resp, body := e.do(http.MethodPost, "/mcp", `{"jsonrpc":"2.0","id":2,"method":"ping"}`, map[string]string{"Authorization": "Bearer a", "Mcp-Session-Id": sid})
	if resp.StatusCode != 200 || !strings.Contains(body, `"result"`) {
		t.Errorf("ping: %d %s", resp.StatusCode, body)
	}
}

func TestDuplicateAuthorization(t *testing.T) {
	e := newEnv(t, Options{Authenticate: authAlice})
	req, _ := http.NewRequest(http.MethodPost, e.url+"/mcp", strings.NewReader(initBody))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Add("Authorization", "Bearer a")
	req.Header.Add("Authorization", "Bearer b")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 400 || !strings.Contains(string(b), "2 Authorization headers; send exactly one") || resp.Header.Get("Mcp-Session-Id") != "" {
		t.Errorf("got %d %s", resp.StatusCode, b)
	}
}

func TestCheckHost(t *testing.T) {
	e := newEnv(t, Options{CheckHost: func(host string) error {
		if strings.HasPrefix(host, "127.0.0.1:") {
			return nil
		}
		return errors.New("Host " + host + " is not served here")
	}})
	req, _ := http.NewRequest(http.MethodPost, e.url+"/mcp", strings.NewReader(initBody))
	req.Host = "rebind.example:80"
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	r, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(r.Body)
	r.Body.Close()
	if r.StatusCode != 403 || !strings.Contains(string(b), "Host rebind.example:80 is not served here") {
		t.Errorf("foreign Host: %d %s", r.StatusCode, b)
	}
	if resp, body := e.do(http.MethodPost, "/mcp", initBody, nil); resp.StatusCode != 200 {
		t.Errorf("own Host: %d %s", resp.StatusCode, body)
	}
}

// Ids that are neither strings nor integers are refused over HTTP too.
func TestBadIDOverHTTP(t *testing.T) {
	e := newEnv(t, Options{})
	sid := e.open(nil)
	for _, id := range []string{`{"a":1}`, `1.5`, `true`, `null`, `[]`} {
		resp, body := e.do(http.MethodPost, "/mcp", `{"jsonrpc":"2.0","id":`+id+`,"method":"ping"}`, map[string]string{"Mcp-Session-Id": sid})
		if resp.StatusCode != 400 || !strings.Contains(body, "-32600") || !strings.Contains(body, "a JSON-RPC id is a string or an integer") {
			t.Errorf("id %s: %d %s", id, resp.StatusCode, body)
		}
	}
}

// refusing answers initialize with an error, as the gateway does when the
// session store does not take the session's record.
type refusing struct{}

func (refusing) HandleRequest(ctx context.Context, method string, _ json.RawMessage) (any, error) {
	if method == mcp.MethodInitialize {
		return nil, &mcp.RPCError{Code: mcp.CodeInternalError, Message: "the store did not take it"}
	}
	return struct{}{}, nil
}
func (refusing) HandleNotification(context.Context, string, json.RawMessage) {}

// A failed initialize sends no session id, and its session is gone.
func TestFailedInitializeHasNoSession(t *testing.T) {
	h := New(func(ctx context.Context, conn mcp.Conn, _ *Session) error {
		p := mcp.NewPeer(conn, mcp.PeerOptions{Handler: refusing{}, NoDrain: true})
		p.Start()
		select {
		case <-p.Done():
		case <-ctx.Done():
			p.Close()
		}
		return nil
	}, Options{})
	srv := httptest.NewServer(h)
	t.Cleanup(func() { h.Close(); srv.CloseClientConnections(); srv.Close() })
	e := &env{t: t, h: h, url: srv.URL}
	req, _ := http.NewRequest(http.MethodPost, e.url, strings.NewReader(initBody))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), "the store did not take it") || resp.Header.Get("Mcp-Session-Id") != "" {
		t.Errorf("failed initialize: %d %v %s", resp.StatusCode, resp.Header, b)
	}
	if n := h.Sessions(); n != 0 {
		t.Errorf("%d sessions after a failed initialize", n)
	}
}

// blocker serves a "block" tool that runs until it is cancelled, and
// "talkblock", which logs first (so its answer becomes an SSE stream).
type blocker struct{ started, cancelled chan string }

func newBlocker() *blocker {
	return &blocker{started: make(chan string, 4), cancelled: make(chan string, 4)}
}

func (b *blocker) serve() ServeFunc {
	s := mcp.NewServer(mcp.Implementation{Name: "t", Version: "1"}, mcp.ServerOptions{Logging: true})
	run := func(ctx context.Context, name string) (*mcp.CallToolResult, error) {
		b.started <- name
		<-ctx.Done()
		b.cancelled <- name
		return nil, ctx.Err()
	}
	s.AddTool(mcp.Tool{Name: "block"}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return run(ctx, "block")
	})
	s.AddTool(mcp.Tool{Name: "talkblock"}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		req.Session.Log(ctx, "info", "t", "first")
		return run(ctx, "talkblock")
	})
	return func(ctx context.Context, conn mcp.Conn, _ *Session) error { return s.Serve(ctx, conn) }
}

func waitFor(t *testing.T, ch <-chan string, want string) {
	t.Helper()
	select {
	case got := <-ch:
		if got != want {
			t.Fatalf("got %s, want %s", got, want)
		}
	case <-time.After(time.Minute): // generous: the event comes at once
		t.Fatalf("no %s within a minute", want)
	}
}

// A client that closes its POST before the answer cancels the request on
// the server side, as notifications/cancelled would: at once when it never
// learned an event id (a pending JSON answer), after ResumeGrace when its
// SSE stream was not resumed.
func TestDisconnectCancels(t *testing.T) {
	b := newBlocker()
	h := New(b.serve(), Options{ResumeGrace: 50 * time.Millisecond})
	srv := httptest.NewServer(h)
	t.Cleanup(func() { h.Close(); srv.CloseClientConnections(); srv.Close() })
	e := &env{t: t, h: h, url: srv.URL}
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	srv.Config.Handler = mux
	sid := e.open(nil)
	for _, tool := range []string{"block", "talkblock"} {
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, e.url+"/mcp",
			strings.NewReader(`{"jsonrpc":"2.0","id":"`+tool+`","method":"tools/call","params":{"name":"`+tool+`"}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", sid)
		done := make(chan struct{})
		go func() {
			defer close(done)
			if resp, err := client.Do(req); err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
		waitFor(t, b.started, tool)
		cancel()
		<-done
		waitFor(t, b.cancelled, tool)
	}
}
