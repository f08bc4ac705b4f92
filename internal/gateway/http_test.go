package gateway_test

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/config"
	"github.com/nexus-mcp/nexus/internal/gateway"
	"github.com/nexus-mcp/nexus/internal/gateway/store"
	"github.com/nexus-mcp/nexus/internal/testenv"
	httptransport "github.com/nexus-mcp/nexus/internal/transport/http"
)

type httpEnv struct {
	*env
	hh  *gateway.HTTPHandler
	url string
}

func newHTTPEnv(t *testing.T, o gateway.HTTPOptions) *httpEnv {
	t.Helper()
	return serveEnv(t, newEnv(t, nil), o)
}

// serveEnv serves e's gateway over HTTP on loopback until the test ends.
// Its cleanup is registered after whatever e's setup registered (an
// upstream's), so it runs before them.
func serveEnv(t testing.TB, e *env, o gateway.HTTPOptions) *httpEnv {
	t.Helper()
	hh, err := e.g.HTTP(o)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(hh)
	t.Cleanup(func() {
		hh.Close()
		srv.CloseClientConnections()
		srv.Close()
	})
	return &httpEnv{env: e, hh: hh, url: srv.URL}
}

var client = &http.Client{Timeout: 30 * time.Second}

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

// post sends one message; hdr may set Authorization, Mcp-Session-Id, Origin.
func (e *httpEnv) post(body string, hdr map[string]string) (*http.Response, string) {
	e.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, e.url+gateway.EndpointPath, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
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

func (e *httpEnv) open(token string) string {
	e.t.Helper()
	resp, body := e.post(initBody, map[string]string{"Authorization": "Bearer " + token})
	if resp.StatusCode != http.StatusOK {
		e.t.Fatalf("initialize: %d %s", resp.StatusCode, body)
	}
	return resp.Header.Get("Mcp-Session-Id")
}

func TestHTTPTokens(t *testing.T) {
	e := newHTTPEnv(t, gateway.HTTPOptions{})
	for _, c := range []struct {
		name, auth string
		status     int
		want       string
	}{
		{"no token", "", 401, "Authorization: Bearer"},
		{"not bearer", "Basic abc", 401, "must be Bearer"},
		{"unknown token", "Bearer nope", 401, "unknown bearer token"},
		{"huge token", "Bearer " + strings.Repeat("x", 9<<10), 401, "over 8 KiB"},
	} {
		hdr := map[string]string{}
		if c.auth != "" {
			hdr["Authorization"] = c.auth
		}
		resp, body := e.post(initBody, hdr)
		if resp.StatusCode != c.status || !strings.Contains(body, c.want) {
			t.Errorf("%s: %d %s", c.name, resp.StatusCode, body)
		}
		if resp.Header.Get("WWW-Authenticate") == "" {
			t.Errorf("%s: 401 without WWW-Authenticate", c.name)
		}
	}
	sid := e.open("claude-token")
	// ci's token cannot use claude's session.
	resp, body := e.post(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, map[string]string{"Authorization": "Bearer ci-token", "Mcp-Session-Id": sid})
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("another identity's session: %d %s", resp.StatusCode, body)
	}
	resp, body = e.post(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, map[string]string{"Authorization": "Bearer claude-token", "Mcp-Session-Id": sid})
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "mcp_testserver_add") {
		t.Errorf("own session: %d %s", resp.StatusCode, body)
	}
	// A sandboxed agent's identity is known, and refused.
	lsid := e.open("locked-token")
	resp, body = e.post(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, map[string]string{"Authorization": "Bearer locked-token", "Mcp-Session-Id": lsid})
	if !strings.Contains(body, "sandboxed") {
		t.Errorf("sandboxed agent: %d %s", resp.StatusCode, body)
	}

	// The real client, with a token.
	ctx := ctxT(t)
	conn, err := httptransport.Dial(ctx, httptransport.Config{Server: "gw", URL: e.url + gateway.EndpointPath,
		Options: httptransport.Options{AllowPrivateNetworks: true, Headers: map[string]string{"Authorization": "Bearer ci-token"}}})
	if err != nil {
		t.Fatal(err)
	}
	c, err := mcp.Connect(ctx, conn, mcp.ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	tools, err := c.ListTools(ctx)
	if err != nil || names(tools) != "mcp_probe_block mcp_probe_echo" {
		t.Errorf("ci over HTTP: %v %s", err, names(tools))
	}
}

func TestHTTPGuards(t *testing.T) {
	e := newHTTPEnv(t, gateway.HTTPOptions{
		AllowedOrigins: []string{"https://app.example.com"},
		Limits:         config.GatewayLimits{MaxBodyBytes: 4096, MaxSessions: 3},
	})
	auth := map[string]string{"Authorization": "Bearer claude-token"}
	with := func(k, v string) map[string]string {
		m := map[string]string{"Authorization": "Bearer claude-token", k: v}
		return m
	}
	for _, c := range []struct {
		name   string
		body   string
		hdr    map[string]string
		status int
		want   string
	}{
		{"foreign origin", initBody, with("Origin", "https://evil.example"), 403, "not allowed"},
		{"configured origin", initBody, with("Origin", "https://app.example.com"), 200, "protocolVersion"},
		{"loopback origin", initBody, with("Origin", "http://localhost:3000"), 200, "protocolVersion"},
		{"malformed JSON", `{"jsonrpc":`, auth, 400, "not a JSON-RPC message"},
		{"batch", `[` + initBody + `]`, auth, 400, "batches are not supported"},
		{"oversized", `{"jsonrpc":"2.0","id":1,"method":"x","params":"` + strings.Repeat("a", 5000) + `"}`, auth, 413, "max_body_bytes"},
		{"no session", `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, auth, 400, "Mcp-Session-Id"},
		{"unknown session", `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, with("Mcp-Session-Id", "nope"), 404, "unknown or ended session"},
		{"bad protocol version", initBody, with("Mcp-Protocol-Version", "1999-01-01"), 400, "unsupported MCP-Protocol-Version"},
	} {
		resp, body := e.post(c.body, c.hdr)
		if resp.StatusCode != c.status || !strings.Contains(body, c.want) {
			t.Errorf("%s: %d %s", c.name, resp.StatusCode, body)
		}
	}
	// Two sessions opened above; one more fits, the next is refused with
	// the limit's name and how to raise it.
	e.open("claude-token")
	resp, body := e.post(initBody, auth)
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, "max_sessions") || !strings.Contains(body, "gateway { limits") {
		t.Errorf("over max_sessions: %d %s", resp.StatusCode, body)
	}
}

// A client that never reads a response stream loses its session, not the
// process's memory.
func TestHTTPUnreadStream(t *testing.T) {
	e := newHTTPEnv(t, gateway.HTTPOptions{Limits: config.GatewayLimits{MaxSSEEvents: 8}})
	sid := e.open("claude-token")
	hdr := map[string]string{"Authorization": "Bearer claude-token", "Mcp-Session-Id": sid}
	e.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, hdr)
	// A call with progress turns its answer into an SSE stream; this
	// client reads its headers and then nothing while 200 events come.
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, e.url+gateway.EndpointPath,
		strings.NewReader(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"mcp_testserver_slow_operation","arguments":{"duration":0.2,"steps":200},"_meta":{"progressToken":1}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	// Read nothing but the priming event, and close: the events pile up
	// unread in the stream's buffer.
	bufio.NewReader(resp.Body).ReadString('\n')
	resp.Body.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		r, body := e.post(`{"jsonrpc":"2.0","id":6,"method":"ping"}`, hdr)
		if r.StatusCode == http.StatusNotFound {
			break // the session is gone
		}
		if time.Now().After(deadline) {
			t.Fatalf("the session outlived its unread stream: %d %s", r.StatusCode, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestHTTPNeedsAWayIn(t *testing.T) {
	e := newEnv(t, func(c *config.Config) {
		for _, a := range c.Agents {
			a.Tokens = nil
		}
	})
	if _, err := e.g.HTTP(gateway.HTTPOptions{}); err == nil || !strings.Contains(err.Error(), "--agent") {
		t.Errorf("no tokens, no agent: %v", err)
	}
	if _, err := e.g.HTTP(gateway.HTTPOptions{Agent: "nobody"}); err == nil || !strings.Contains(err.Error(), `"nobody" is not configured`) {
		t.Errorf("unknown agent: %v", err)
	}
}

// ListenAndServe with a certificate serves HTTPS, and stops cleanly when
// its context ends.
func TestHTTPS(t *testing.T) {
	e := newEnv(t, nil)
	hh, err := e.g.HTTP(gateway.HTTPOptions{Agent: "claude"})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile, pool := selfSigned(t, dir)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	ready := make(chan net.Addr, 1)
	go func() {
		done <- hh.Serve(ctx, ln, gateway.ListenOptions{TLSCert: certFile, TLSKey: keyFile, Grace: time.Second, Ready: func(a net.Addr) { ready <- a }})
	}()
	addr := <-ready
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
	defer tr.CloseIdleConnections()
	defer client.CloseIdleConnections()
	hc := &http.Client{Timeout: 30 * time.Second, Transport: tr}
	resp, err := hc.Get("https://" + addr.String() + gateway.HealthPath)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.TLS == nil {
		t.Errorf("health over TLS: %d %v", resp.StatusCode, resp.TLS)
	}
	// Plain HTTP to the TLS port is refused, not served.
	if r, err := client.Get("http://" + addr.String() + gateway.HealthPath); err == nil {
		r.Body.Close()
		if r.StatusCode == 200 {
			t.Error("plain HTTP was served on the TLS listener")
		}
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Serve: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Serve did not return after its context ended")
	}
}

// selfSigned writes a certificate for 127.0.0.1 and its key.
func selfSigned(t *testing.T, dir string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "nexus test"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	kb, _ := x509.MarshalECPrivateKey(key)
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600)
	return certFile, keyFile, pool
}

// /readyz checks the session store: ready while Redis answers, 503 naming
// the store (without its password) when it does not. The unreachable one
// is a closed loopback port.
func TestReadyChecksStore(t *testing.T) {
	up, err := store.NewRedis(store.RedisOptions{URL: testenv.RedisServer(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()
	down, err := store.NewRedis(store.RedisOptions{URL: "redis://:pw@127.0.0.1:1/0", Timeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer down.Close()
	for _, c := range []struct {
		st     store.Store
		url    string
		status int
		want   string
	}{
		{up, "redis://127.0.0.1/0", http.StatusOK, `"ready"`},
		{down, "redis://:pw@127.0.0.1:1/0", http.StatusServiceUnavailable, `"store":"redis://:***@127.0.0.1:1/0"`},
	} {
		e := newHTTPEnv(t, gateway.HTTPOptions{Agent: "claude", Store: c.st, StoreName: store.Name(c.url)})
		resp, err := client.Get(e.url + gateway.ReadyPath)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.status || !strings.Contains(string(b), c.want) || strings.Contains(string(b), ":pw@") {
			t.Errorf("status %d: %s", resp.StatusCode, b)
		}
	}
}

// A gateway with no state key makes its own, which is all one process
// needs; it warns only when a session store makes it one of several
// replicas, which must share one.
func TestHTTPStateKeyWarning(t *testing.T) {
	e := newEnv(t, nil)
	for _, c := range []struct {
		name  string
		key   []byte
		store bool
		warns bool
	}{
		{"one process", nil, false, false},
		{"replicas without a key", nil, true, true},
		{"replicas with a key", make([]byte, 32), true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var log strings.Builder
			g := gateway.New(e.g.Host(), gateway.Options{StateKey: c.key, Logger: hclog.New(&hclog.LoggerOptions{Output: &syncWriter{w: &log}})})
			defer g.Close()
			o := gateway.HTTPOptions{Agent: "claude"}
			if c.store {
				o.Store = store.NewMemory()
			}
			hh, err := g.HTTP(o)
			if err != nil {
				t.Fatal(err)
			}
			hh.Close()
			if got := strings.Contains(log.String(), "no requestState key is configured"); got != c.warns {
				t.Errorf("warned %v, want %v; log:\n%s", got, c.warns, log.String())
			}
		})
	}
}

// syncWriter serializes a logger's writes to w.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
