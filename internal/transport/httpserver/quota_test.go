package httpserver

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nexus-mcp/nexus/host/mcp"
)

// gate holds "wait" calls until it opens, telling the test of each that
// started.
type gate struct {
	started chan struct{}
	open    chan struct{}
}

// newQuotaEnv is an endpoint whose principal is the bearer token ("a" is
// alice, "b" is bob) and whose "wait" tool answers once g opens.
func newQuotaEnv(t *testing.T, o Options) (*env, *gate) {
	t.Helper()
	g := &gate{started: make(chan struct{}, 64), open: make(chan struct{})}
	s := mcp.NewServer(mcp.Implementation{Name: "t", Version: "1"}, mcp.ServerOptions{})
	s.AddTool(mcp.Tool{Name: "wait"}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		g.started <- struct{}{}
		select {
		case <-g.open:
		case <-ctx.Done():
		}
		return &mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent("done")}}, nil
	})
	o.Authenticate = func(r *http.Request) (string, error) {
		return map[string]string{"Bearer a": "alice", "Bearer b": "bob"}[r.Header.Get("Authorization")], nil
	}
	o.Raise = func(l string) string { return "raise " + l }
	h := New(func(ctx context.Context, conn mcp.Conn, _ *Session) error { return s.Serve(ctx, conn) }, o)
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		select {
		case <-g.open:
		default:
			close(g.open)
		}
		h.Close()
		srv.CloseClientConnections()
		srv.Close()
	})
	return &env{t: t, h: h, url: srv.URL + "/mcp"}, g
}

func (e *env) as(who, sid string) map[string]string {
	h := map[string]string{"Authorization": "Bearer " + who}
	if sid != "" {
		h["Mcp-Session-Id"] = sid
	}
	return h
}

// waitCall is a tools/call of "wait" with a body of about size bytes.
func waitCall(id string, size int) string {
	return `{"jsonrpc":"2.0","id":"` + id + `","method":"tools/call","params":{"name":"wait","arguments":{"pad":"` + strings.Repeat("x", size) + `"}}}`
}

// Gap 6 of issue 37: after alice opened max_sessions sessions, bob got
// 503. Alice now runs into her own cap (429, saying which), and bob still
// gets in.
func TestSessionsPerPrincipal(t *testing.T) {
	e, _ := newQuotaEnv(t, Options{MaxSessions: 5, MaxSessionsPerPrincipal: 3})
	for range 3 {
		e.open(e.as("a", ""))
	}
	resp, body := e.do(http.MethodPost, "", initBody, e.as("a", ""))
	if resp.StatusCode != http.StatusTooManyRequests || !strings.Contains(body, "raise max_sessions_per_agent") || !strings.Contains(body, "alice") || resp.Header.Get("Retry-After") == "" {
		t.Errorf("alice past her cap: %d %v %s", resp.StatusCode, resp.Header, body)
	}
	e.open(e.as("b", ""))
	e.open(e.as("b", ""))
	resp, body = e.do(http.MethodPost, "", initBody, e.as("b", ""))
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, "raise max_sessions") {
		t.Errorf("past the global cap: %d %s", resp.StatusCode, body)
	}
}

// Gap 6 of issue 37: 1,040 slow calls of alice's kept bob at 503
// "max_requests". Alice's flood now fills her own share only: past it
// she gets 429, and bob's calls are served.
func TestRequestsPerPrincipal(t *testing.T) {
	e, g := newQuotaEnv(t, Options{MaxRequests: 8, MaxRequestsPerPrincipal: 4, MaxRequestsPerSession: 64})
	var sids []string
	for range 2 {
		sids = append(sids, e.open(e.as("a", "")))
	}
	bob := e.open(e.as("b", ""))
	var wg sync.WaitGroup
	defer wg.Wait()
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e.do(http.MethodPost, "", waitCall("a"+string(rune('0'+i)), 1), e.as("a", sids[i%2]))
		}()
	}
	for range 4 {
		<-g.started
	}
	// Alice's flood: more calls than her share, from both her sessions.
	for i := range 6 {
		resp, body := e.do(http.MethodPost, "", waitCall("more", 1), e.as("a", sids[i%2]))
		if resp.StatusCode != http.StatusTooManyRequests || !strings.Contains(body, "raise max_requests_per_agent") {
			t.Fatalf("alice past her share: %d %s", resp.StatusCode, body)
		}
	}
	// Bob is served, up to what is left of the global cap.
	var bwg sync.WaitGroup
	for i := range 4 {
		bwg.Add(1)
		go func() {
			defer bwg.Done()
			resp, body := e.do(http.MethodPost, "", waitCall("b"+string(rune('0'+i)), 1), e.as("b", bob))
			if resp.StatusCode != http.StatusOK || !strings.Contains(body, "done") {
				t.Errorf("bob during alice's flood: %d %s", resp.StatusCode, body)
			}
		}()
	}
	for range 4 {
		<-g.started
	}
	close(g.open)
	bwg.Wait()
}

// Gap 9 of issue 37: bodies in flight were not bounded. Request bodies
// and answers count against a budget, in all and per principal (a
// request reserves its body's size twice, once for its answer): a
// request over it waits, then gets 429 (its principal's share) or 503
// (everyone's) with Retry-After.
func TestInflightBytes(t *testing.T) {
	e, g := newQuotaEnv(t, Options{MaxBodyBytes: 100 << 10, MaxInflightBytes: 400 << 10, MaxInflightBytesPerPrincipal: 250 << 10, InflightWait: 50 * time.Millisecond})
	alice := e.open(e.as("a", ""))
	bob := e.open(e.as("b", ""))
	var wg sync.WaitGroup
	defer wg.Wait()
	hold := func(who, sid, id string) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if resp, body := e.do(http.MethodPost, "", waitCall(id, 90<<10), e.as(who, sid)); resp.StatusCode != http.StatusOK {
				t.Errorf("held call %s: %d %s", id, resp.StatusCode, body)
			}
		}()
		<-g.started
	}
	hold("a", alice, "a1")
	resp, body := e.do(http.MethodPost, "", waitCall("a2", 90<<10), e.as("a", alice))
	if resp.StatusCode != http.StatusTooManyRequests || !strings.Contains(body, "raise max_inflight_bytes_per_agent") || resp.Header.Get("Retry-After") == "" {
		t.Errorf("alice past her share of bytes: %d %v %s", resp.StatusCode, resp.Header, body)
	}
	// Alice's bytes are not bob's: his calls fit beside hers.
	hold("b", bob, "b1")
	// Together they fill the global budget: a third principal waits,
	// then is told so.
	carol := e.open(map[string]string{"Authorization": "Bearer c"}) // principal ""
	resp, body = e.do(http.MethodPost, "", waitCall("c1", 90<<10), map[string]string{"Authorization": "Bearer c", "Mcp-Session-Id": carol})
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, "raise max_inflight_bytes") || resp.Header.Get("Retry-After") == "" {
		t.Errorf("past the global budget: %d %s", resp.StatusCode, body)
	}
	close(g.open)
	wg.Wait()
	if mine, all := e.h.bytes.held("alice"); mine != 0 || all != 0 {
		t.Errorf("after every call: alice holds %d, all %d bytes", mine, all)
	}
}

// A body that does not fit waits for bytes to be released, and goes
// when they are; a wait ends with its request's context.
func TestBudgetWaits(t *testing.T) {
	b := newBudget(100, 60, time.Minute)
	if ok, _ := b.acquire(context.Background(), "alice", 50); !ok {
		t.Fatal("first body refused")
	}
	got := make(chan bool)
	go func() {
		ok, _ := b.acquire(context.Background(), "alice", 50)
		got <- ok
	}()
	b.release("alice", 50)
	if !<-got {
		t.Error("a waiting body was refused after room was made")
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		ok, full := b.acquire(ctx, "alice", 50)
		if ok || full != "agent" {
			t.Errorf("cancelled wait: %v %q", ok, full)
		}
		got <- ok
	}()
	cancel()
	<-got
	// Bob's share is his own; the global budget is shared.
	if ok, _ := b.acquire(context.Background(), "bob", 50); !ok {
		t.Error("bob's body refused beside alice's")
	}
	if mine, all := b.held("bob"); mine != 50 || all != 100 {
		t.Errorf("held: bob %d, all %d", mine, all)
	}
}
