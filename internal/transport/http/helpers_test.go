package httptransport

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/testenv"
	"github.com/nexus-mcp/nexus/internal/testserver"
)

// Every test talks to loopback only. dialRecorder is the DialContext of
// every Conn under test: it records each address the guard let through and
// refuses anything off loopback, so even a broken guard sends no packet
// anywhere else.
type dialRecorder struct {
	mu    sync.Mutex
	addrs []string
	fail  int   // refuse this many loopback dials first
	err   error // with this error
}

var errOffLoopback = errors.New("test dialer: refusing a non-loopback address")

func (d *dialRecorder) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	d.mu.Lock()
	d.addrs = append(d.addrs, addr)
	fail := d.fail > 0
	if fail {
		d.fail--
	}
	d.mu.Unlock()
	ap, err := netip.ParseAddrPort(addr)
	if err != nil || !ap.Addr().Unmap().IsLoopback() {
		return nil, errOffLoopback
	}
	if fail {
		return nil, d.err
	}
	var nd net.Dialer
	return nd.DialContext(ctx, network, addr)
}

func (d *dialRecorder) seen() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.addrs...)
}

// fakeResolver answers from a table; unknown names fail. It never queries DNS.
type fakeResolver struct {
	mu      sync.Mutex
	answers map[string][][]string // host -> successive answers (the last repeats)
	calls   map[string]int
}

func (r *fakeResolver) LookupIPAddr(ctx context.Context, host string) ([]net.IPAddr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	seq, ok := r.answers[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host (fake resolver)", Name: host, IsNotFound: true}
	}
	if r.calls == nil {
		r.calls = map[string]int{}
	}
	i := min(r.calls[host], len(seq)-1)
	r.calls[host]++
	var out []net.IPAddr
	for _, s := range seq[i] {
		out = append(out, net.IPAddr{IP: net.ParseIP(s)})
	}
	return out, nil
}

// checkNoLeak fails the test if goroutines started during it are still
// running shortly after its cleanups (registered later, so run earlier).
func checkNoLeak(t *testing.T) {
	t.Helper()
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		http.DefaultClient.CloseIdleConnections()
		deadline := time.Now().Add(5 * time.Second)
		for runtime.NumGoroutine() > before {
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<20)
				t.Errorf("goroutine leak: %d before, %d after\n%s", before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
}

func testCtx(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// env is one test's world: a server, a dial recorder and a log.
type env struct {
	t    *testing.T
	dial *dialRecorder
	logs *testenv.Buffer
}

func newEnv(t *testing.T) *env {
	checkNoLeak(t)
	return &env{t: t, dial: &dialRecorder{}, logs: &testenv.Buffer{}}
}

func (e *env) config(url string) Config {
	return Config{
		Server:      "test",
		URL:         url,
		Options:     Options{RetryBackoff: 5 * time.Millisecond},
		Timeout:     5 * time.Second,
		Logger:      hclog.New(&hclog.LoggerOptions{Output: e.logs, Level: hclog.Trace}),
		DialContext: e.dial.DialContext,
		Resolver:    &fakeResolver{answers: map[string][][]string{"localhost": {{"127.0.0.1"}}}},
	}
}

// testServer serves the built-in test server over HTTP on 127.0.0.1,
// optionally behind a middleware; it returns the handler and the MCP URL.
func (e *env) testServer(mw func(http.Handler) http.Handler, opts ...testserver.HTTPOption) (*testserver.HTTPHandler, string) {
	h := testserver.NewHTTPHandler(testserver.Options{}, opts...)
	var handler http.Handler = h
	if mw != nil {
		handler = mw(h)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", handler)
	srv := httptest.NewServer(mux)
	e.t.Cleanup(func() {
		h.Close()
		srv.CloseClientConnections()
		srv.Close()
	})
	return h, srv.URL + "/mcp"
}

// serve runs a custom handler on 127.0.0.1.
func (e *env) serve(h http.Handler) string {
	srv := httptest.NewServer(h)
	e.t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
	})
	return srv.URL
}

func (e *env) dialConn(cfg Config) *Conn {
	e.t.Helper()
	c, err := Dial(testCtx(e.t), cfg)
	if err != nil {
		e.t.Fatalf("Dial: %v", err)
	}
	e.t.Cleanup(func() { c.Close() })
	return c
}

// connect dials and initializes a client session.
func (e *env) connect(cfg Config, co mcp.ClientOptions) (*mcp.Client, *Conn) {
	e.t.Helper()
	c := e.dialConn(cfg)
	if co.Logger == nil {
		co.Logger = hclog.New(&hclog.LoggerOptions{Output: e.logs, Level: hclog.Debug, Name: "client"})
	}
	cl, err := mcp.Connect(testCtx(e.t), c, co)
	if err != nil {
		e.t.Fatalf("Connect: %v", err)
	}
	e.t.Cleanup(func() { cl.Close() })
	return cl, c
}

func call(t *testing.T, c *mcp.Client, name string, args any) string {
	t.Helper()
	res, err := c.CallTool(testCtx(t), name, args, nil)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if res.IsError || len(res.Content) != 1 {
		t.Fatalf("%s: unexpected result %+v", name, res)
	}
	return res.Content[0].Text
}

func wantErrAs[T error](t *testing.T, err error) T {
	t.Helper()
	var target T
	if !errors.As(err, &target) {
		t.Fatalf("want %T, got %T: %v", target, err, err)
	}
	return target
}

func wantContains(t *testing.T, s string, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(s, p) {
			t.Errorf("%q does not contain %q", s, p)
		}
	}
}

// waitFor polls cond until it holds or the test times out.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func readAllLimit(r *http.Request, n int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r.Body, n))
	r.Body = io.NopCloser(bytes.NewReader(b))
	return b, err
}

// legacyOnly skips the era probe, for tests of the legacy handshake's own
// mechanics (its retries, its session, its resumable streams) whose fakes
// count every request.
var legacyOnly = mcp.ClientOptions{ProtocolVersion: mcp.LatestVersion}
