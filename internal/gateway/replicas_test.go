package gateway_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/config"
	"github.com/nexus-mcp/nexus/internal/gateway"
	"github.com/nexus-mcp/nexus/internal/gateway/store"
	"github.com/nexus-mcp/nexus/internal/testenv"
	httptransport "github.com/nexus-mcp/nexus/internal/transport/http"
)

// replica is one gateway process of several sharing a store.
type replica struct {
	*httpEnv
	srv *httptest.Server
}

// kill stops a replica as a crash would, as far as its clients can tell:
// its connections drop, and the others learn it is gone.
func (r *replica) kill() {
	r.srv.CloseClientConnections()
	r.hh.Close()
	r.srv.Close()
}

func newReplicas(t *testing.T, st store.Store, n int) []*replica {
	t.Helper()
	return newReplicasOpts(t, gateway.HTTPOptions{Store: st, StoreName: "memory"}, n)
}

func newReplicasOpts(t *testing.T, o gateway.HTTPOptions, n int) []*replica {
	t.Helper()
	var out []*replica
	for range n {
		e := newEnv(t, nil)
		hh, err := e.g.HTTP(o)
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(hh)
		out = append(out, &replica{httpEnv: &httpEnv{env: e, hh: hh, url: srv.URL}, srv: srv})
	}
	// Every replica stops before any env checks for leaks (each env
	// counts goroutines, so the others must be gone).
	t.Cleanup(func() {
		for _, r := range out {
			r.hh.Close()
			r.srv.CloseClientConnections()
			r.srv.Close()
			r.g.Close()
			r.h.Close()
		}
	})
	return out
}

// roundRobin is a load balancer with no stickiness: each request goes to
// the next replica still up.
type roundRobin struct {
	rt    http.RoundTripper
	mu    sync.Mutex
	hosts []string
	down  map[string]bool
	n     int
	hits  map[string]int
	sid   string // the Mcp-Session-Id a replica gave
}

func newRoundRobin(rs []*replica) *roundRobin {
	rr := &roundRobin{down: map[string]bool{}, hits: map[string]int{}}
	for _, r := range rs {
		u, _ := url.Parse(r.url)
		rr.hosts = append(rr.hosts, u.Host)
	}
	return rr
}

func (rr *roundRobin) RoundTrip(req *http.Request) (*http.Response, error) {
	rr.mu.Lock()
	var host string
	for range rr.hosts {
		host = rr.hosts[rr.n%len(rr.hosts)]
		rr.n++
		if !rr.down[host] {
			break
		}
	}
	rr.hits[host]++
	rr.mu.Unlock()
	req = req.Clone(req.Context())
	req.URL.Host, req.Host = host, host
	resp, err := rr.rt.RoundTrip(req)
	if err == nil && resp.Header.Get("Mcp-Session-Id") != "" {
		rr.mu.Lock()
		rr.sid = resp.Header.Get("Mcp-Session-Id")
		rr.mu.Unlock()
	}
	return resp, err
}

func (rr *roundRobin) markDown(r *replica) {
	u, _ := url.Parse(r.url)
	rr.mu.Lock()
	rr.down[u.Host] = true
	rr.mu.Unlock()
}

// dialThrough connects the repo's own client through the balancer.
func dialThrough(t *testing.T, rr *roundRobin, base, token string, o mcp.ClientOptions) *mcp.Client {
	t.Helper()
	ctx := ctxT(t)
	conn, err := httptransport.Dial(ctx, httptransport.Config{Server: "gw", URL: base + gateway.EndpointPath,
		Options: httptransport.Options{AllowPrivateNetworks: true, MaxRetries: new(int),
			Headers: map[string]string{"Authorization": "Bearer " + token}},
		WrapTransport: func(rt http.RoundTripper) http.RoundTripper { rr.rt = rt; return rr }})
	if err != nil {
		t.Fatal(err)
	}
	c, err := mcp.Connect(ctx, conn, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// Three replicas behind a balancer with no stickiness serve one session:
// each request lands on another replica, which learns the session from
// the store; a sampling request a replica sends is answered by a POST
// that lands elsewhere and finds its way back; the log level set on one
// replica holds on the others; another agent's token cannot take the
// session over; deleting it ends it everywhere.
func TestReplicasShareSessions(t *testing.T) {
	eachStore(t, testReplicasShareSessions)
}

// eachStore runs a test on the in-memory store (replicas in one process)
// and on a real redis-server on loopback.
func eachStore(t *testing.T, f func(t *testing.T, st store.Store)) {
	t.Run("memory", func(t *testing.T) { f(t, store.NewMemory()) })
	t.Run("redis", func(t *testing.T) {
		st, err := store.NewRedis(store.RedisOptions{URL: testenv.RedisServer(t)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		f(t, st)
	})
}

func testReplicasShareSessions(t *testing.T, st store.Store) {
	rs := newReplicas(t, st, 3)
	rr := newRoundRobin(rs)
	var sampled atomic.Int32
	var logs sync.Map
	c := dialThrough(t, rr, rs[0].url, "claude-token", mcp.ClientOptions{
		Sampling: func(ctx context.Context, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
			sampled.Add(1)
			return &mcp.CreateMessageResult{Role: "assistant", Model: "m", Content: json.RawMessage(`{"type":"text","text":"sampled"}`)}, nil
		},
		OnLog: func(m mcp.LogMessage) { logs.Store(m.Level, true) },
	})
	ctx := ctxT(t)
	tools, err := c.ListTools(ctx)
	if err != nil || !strings.Contains(names(tools), "mcp_testserver_echo") {
		t.Fatalf("list: %v %s", err, names(tools))
	}
	for i := range 9 {
		msg := fmt.Sprintf("m%d", i)
		res, err := c.CallTool(ctx, "mcp_testserver_echo", map[string]string{"message": msg}, nil)
		if err != nil || !strings.Contains(res.Content[0].Text, msg) {
			t.Fatalf("call %d: %v %+v", i, err, res)
		}
	}
	for i := range 6 {
		res, err := c.CallTool(ctx, "mcp_testserver_sample", map[string]string{"prompt": fmt.Sprintf("p%d", i)}, nil)
		if err != nil || res.IsError || !strings.Contains(res.Content[0].Text, "sampled") {
			t.Fatalf("sample %d: %v %+v", i, err, res)
		}
	}
	if n := sampled.Load(); n != 6 {
		t.Errorf("the client answered %d sampling requests, want 6", n)
	}
	for _, r := range rs {
		if n := r.g.Sessions(); n != 1 {
			t.Errorf("replica %s serves %d sessions, want 1 (every replica served a request)", r.url, n)
		}
	}
	if err := c.SetLogLevel(ctx, "error"); err != nil {
		t.Fatal(err)
	}
	logs.Clear()
	rr.mu.Lock()
	sid := rr.sid
	rr.mu.Unlock()
	rec, err := st.Get(ctx, sid)
	if err != nil || rec.LogLevel != "error" || rec.Protocol != mcp.Version20251125 || rec.Principal != "claude" || len(rec.Init) == 0 {
		t.Fatalf("the record: %+v %v", rec, err)
	}
	// The other replicas hear of the change through the store's pub/sub: a
	// moment later, not at once.
	want := mcp.LoggingLevel("error").Severity()
	deadline := time.Now().Add(10 * time.Second)
	for _, r := range rs {
		for gateway.SessionLevel(r.hh, sid) != want {
			if time.Now().After(deadline) {
				t.Fatalf("replica %s still has level %d", r.url, gateway.SessionLevel(r.hh, sid))
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	// echo logs at info: below the level, on whichever replica serves it.
	for range 3 {
		if _, err := c.CallTool(ctx, "mcp_testserver_echo", map[string]string{"message": "quiet"}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok := logs.Load(mcp.LoggingLevel("info")); ok {
		t.Error("an info log line reached a client that set the level to error")
	}

	// Another agent's token, on any replica: refused.
	for _, r := range rs {
		resp, body := r.post(`{"jsonrpc":"2.0","id":9,"method":"tools/list"}`, map[string]string{"Authorization": "Bearer ci-token", "Mcp-Session-Id": sid})
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("ci on %s: %d %s", r.url, resp.StatusCode, body)
		}
	}

	c.Close() // DELETE, on one replica: every replica ends its instance
	deadline = time.Now().Add(10 * time.Second)
	for _, r := range rs {
		for r.g.Sessions() != 0 {
			if time.Now().After(deadline) {
				t.Fatalf("replica %s still serves %d sessions after DELETE", r.url, r.g.Sessions())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	if _, err := st.Get(ctx, sid); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the record outlived DELETE: %v", err)
	}
	resp, _ := rs[1].post(`{"jsonrpc":"2.0","id":9,"method":"tools/list"}`, map[string]string{"Authorization": "Bearer claude-token", "Mcp-Session-Id": sid})
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("a deleted session: %d", resp.StatusCode)
	}
}

// A replica dies while a call runs on it and its answer streams (SSE,
// progress first): the client resumes the stream on another replica with
// Last-Event-ID, gets the events the dead replica had sent, and then an
// error saying the call may not have finished and can be retried — not
// silence, and not a second run. The session goes on on the others.
func TestReplicaDiesMidCall(t *testing.T) {
	eachStore(t, testReplicaDiesMidCall)
}

func testReplicaDiesMidCall(t *testing.T, st store.Store) {
	rs := newReplicas(t, st, 3)
	rr := newRoundRobin(rs)
	c := dialThrough(t, rr, rs[0].url, "claude-token", mcp.ClientOptions{})
	ctx := ctxT(t)
	if _, err := c.ListTools(ctx); err != nil {
		t.Fatal(err)
	}
	// A slow call that reports progress: its answer becomes an SSE stream.
	progressed := make(chan struct{}, 64)
	done := make(chan error, 1)
	go func() {
		_, err := c.CallTool(ctx, "mcp_testserver_slow_operation", map[string]any{"duration": 60, "steps": 600}, &mcp.CallOptions{
			OnProgress: func(mcp.Progress) {
				select {
				case progressed <- struct{}{}:
				default:
				}
			},
		})
		done <- err
	}()
	for range 2 {
		wait(t, progressed, "progress from the slow call")
	}
	var victim *replica
	for _, r := range rs {
		if r.hh.InFlight() > 0 {
			victim = r
		}
	}
	if victim == nil {
		t.Fatal("no replica has the call in flight")
	}
	rr.markDown(victim)
	victim.kill()
	select {
	case err := <-done:
		var rerr *mcp.RPCError
		if !errors.As(err, &rerr) || !strings.Contains(rerr.Message, "retry it if that is safe") || !strings.Contains(string(rerr.Data), `"retryable":true`) {
			t.Fatalf("the call on the dead replica: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the call on the dead replica was never answered")
	}
	// The session goes on.
	for i := range 4 {
		res, err := c.CallTool(ctx, "mcp_testserver_echo", map[string]string{"message": fmt.Sprint(i)}, nil)
		if err != nil || !strings.Contains(res.Content[0].Text, fmt.Sprint(i)) {
			t.Fatalf("after the death, call %d: %v %+v", i, err, res)
		}
	}
}

// A session another replica opened, when the store does not answer:
// a clear 503, and new sessions are refused with the store named. The
// replica holding a session keeps serving it.
func TestReplicasWithoutStore(t *testing.T) {
	st := &failing{Store: store.NewMemory()}
	rs := newReplicas(t, st, 2)
	sid := rs[0].open("claude-token")
	st.down.Store(true)
	resp, body := rs[1].post(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, map[string]string{"Authorization": "Bearer claude-token", "Mcp-Session-Id": sid})
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, "session store does not answer") || resp.Header.Get("Retry-After") == "" {
		t.Errorf("another replica's session, store down: %d %s", resp.StatusCode, body)
	}
	resp, body = rs[0].post(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, map[string]string{"Authorization": "Bearer claude-token", "Mcp-Session-Id": sid})
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "mcp_probe_block") {
		t.Errorf("own session, store down: %d %s", resp.StatusCode, body)
	}
	resp, body = rs[1].post(initBody, map[string]string{"Authorization": "Bearer claude-token"})
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, "cannot open a session") || !strings.Contains(body, "store down") {
		t.Errorf("a new session, store down: %d %s", resp.StatusCode, body)
	}
	if n := rs[1].hh.InFlight(); n != 0 {
		t.Errorf("in flight: %d", n)
	}
}

// A replica keeps serving its own sessions while the store is down, for
// at most the idle timeout; then it ends them (the client learns it with
// 404, or 503 naming the store, and its new initialize gets the store's
// reason).
func TestReplicaOutlivesStoreForIdleTimeout(t *testing.T) {
	st := &failing{Store: store.NewMemory()}
	rs := newReplicasOpts(t, gateway.HTTPOptions{Store: st, StoreName: "memory",
		Limits: config.GatewayLimits{SessionIdleTimeout: 400 * time.Millisecond}}, 1)
	sid := rs[0].open("claude-token")
	st.down.Store(true)
	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	hdr := map[string]string{"Authorization": "Bearer claude-token", "Mcp-Session-Id": sid}
	resp, body := rs[0].post(list, hdr)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("just after the store went down: %d %s", resp.StatusCode, body)
	}
	deadline := time.Now().Add(20 * time.Second)
	for resp.StatusCode == http.StatusOK {
		if time.Now().After(deadline) {
			t.Fatal("the session lived on 20 s after the store went down, past its 400 ms idle timeout")
		}
		time.Sleep(20 * time.Millisecond) // active: the idle sweep does not end it
		resp, body = rs[0].post(list, hdr)
	}
	// Ended here; taking it up again needs the store, which is away.
	if resp.StatusCode != http.StatusNotFound && (resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, "session store does not answer")) {
		t.Errorf("after the idle timeout without the store: %d %s", resp.StatusCode, body)
	}
}

// failing is a store that can be made not to answer.
type failing struct {
	store.Store
	down atomic.Bool
}

var errDown = errors.New("store down (test)")

func (f *failing) Create(ctx context.Context, s *store.Session, ttl time.Duration) error {
	if f.down.Load() {
		return errDown
	}
	return f.Store.Create(ctx, s, ttl)
}

func (f *failing) Touch(ctx context.Context, id string, ttl time.Duration) error {
	if f.down.Load() {
		return errDown
	}
	return f.Store.Touch(ctx, id, ttl)
}

func (f *failing) Get(ctx context.Context, id string) (*store.Session, error) {
	if f.down.Load() {
		return nil, errDown
	}
	return f.Store.Get(ctx, id)
}

// A legacy (HTTP+SSE) session lives on the replica holding its stream; a
// message POSTed to another replica is sent there, and its answer comes
// on the stream.
func TestReplicasLegacy(t *testing.T) {
	rs := newReplicas(t, store.NewMemory(), 2)
	ctx := ctxT(t)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, rs[0].url+gateway.SSEPath, nil)
	req.Header.Set("Authorization", "Bearer claude-token")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	lines := bufio.NewReader(resp.Body)
	var endpoint string
	for endpoint == "" {
		line, err := lines.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "data: "); ok {
			endpoint = v
		}
	}
	post := func(body string) {
		req, _ := http.NewRequest(http.MethodPost, rs[1].url+endpoint, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer claude-token")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted {
			t.Fatalf("POST to the other replica: %d %s", resp.StatusCode, b)
		}
	}
	post(strings.Replace(initBody, "2025-11-25", "2024-11-05", 1))
	post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	post(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	for {
		line, err := lines.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(line, `"id":2`) {
			if !strings.Contains(line, "mcp_probe_block") {
				t.Fatalf("tools/list answer: %s", line)
			}
			break
		}
	}
}
