package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/audit"
	"github.com/nexus-mcp/nexus/internal/config"
	"github.com/nexus-mcp/nexus/internal/engine"
	"github.com/nexus-mcp/nexus/internal/gateway"
	"github.com/nexus-mcp/nexus/internal/lock"
	"github.com/nexus-mcp/nexus/internal/rawfake"
	"github.com/nexus-mcp/nexus/internal/taskfake"
	"github.com/nexus-mcp/nexus/internal/telemetry"
	"github.com/nexus-mcp/nexus/internal/testserver"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// probe records what the upstream "probe" server saw: the block tool waits
// until its call is cancelled and reports that here.
type probe struct {
	started   chan struct{}
	cancelled chan struct{}
}

func newProbe() *probe {
	return &probe{started: make(chan struct{}, 16), cancelled: make(chan struct{}, 16)}
}

func (p *probe) server() *mcp.Server {
	s := mcp.NewServer(mcp.Implementation{Name: "probe", Version: "1"}, mcp.ServerOptions{})
	s.AddTool(mcp.Tool{Name: "block"}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		p.started <- struct{}{}
		<-ctx.Done()
		p.cancelled <- struct{}{}
		return nil, ctx.Err()
	})
	s.AddTool(mcp.Tool{Name: "echo"}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent("probe:" + string(req.Arguments))}}, nil
	})
	return s
}

// env is a gateway in front of in-process servers: "testserver" (the
// built-in test server) and "probe".
type env struct {
	t     testing.TB
	cfg   *config.Config
	h     *engine.Host
	g     *gateway.Gateway
	probe *probe
	ctx   context.Context
}

func ptr[T any](v T) *T { return &v }

func newEnv(t testing.TB, edit func(*config.Config)) *env {
	t.Helper()
	return newEnvLocked(t, edit, nil)
}

// newEnvLocked is newEnv with a lockfile the host enforces.
func newEnvLocked(t testing.TB, edit func(*config.Config), pinned *lock.Lock) *env {
	t.Helper()
	return newEnvOpts(t, edit, func(o *engine.Options) { o.Lock = pinned })
}

// newEnvOpts is newEnv with the host's options changed by opts.
func newEnvOpts(t testing.TB, edit func(*config.Config), opts func(*engine.Options)) *env {
	t.Helper()
	before := runtime.NumGoroutine()
	cfg := &config.Config{
		Servers: []*config.Server{
			{Name: "probe", Type: config.TypeStdio, Command: []string{"probe"}, Enabled: true},
			{Name: "testserver", Type: config.TypeStdio, Command: []string{"testserver"}, Enabled: true},
		},
		Agents: []*config.Agent{
			{Name: "claude", Permission: "yolo", Deny: []string{"testserver.fail"}, Tokens: []string{"claude-token"}},
			{Name: "ci", Permission: "yolo", Servers: []string{"probe"}, Tokens: []string{"ci-token"}},
			{Name: "locked", Permission: "sandboxed", Tokens: []string{"locked-token"}},
		},
	}
	if edit != nil {
		edit(cfg)
	}
	ctx, cancel := context.WithCancel(context.Background())
	e := &env{t: t, cfg: cfg, probe: newProbe(), ctx: ctx}
	var wg sync.WaitGroup
	ho := engine.Options{
		Confirm: gateway.Confirm{},
		Transport: func(_ context.Context, srv *config.Server) (mcp.Conn, error) {
			var s *mcp.Server
			switch srv.Command[0] {
			case "tasks":
				client, server := mcp.Pipe()
				p := mcp.NewPeer(server, mcp.PeerOptions{Handler: &taskfake.Server{}})
				p.Start()
				wg.Add(1)
				go func() {
					defer wg.Done()
					select {
					case <-p.Done():
					case <-ctx.Done():
						p.Close()
					}
				}()
				return client, nil
			case "rawfake":
				return rawfake.Pipe(ctx), nil
			case "probe":
				s = e.probe.server()
			case "modern": // the conformance fixtures, tasks among them, MCP 2026-07-28 only
				s = testserver.New(testserver.Options{ModernOnly: true, Conformance: true})
			default: // testserver [VARIANT]
				o := testserver.Options{}
				if len(srv.Command) > 1 {
					o.Variant = srv.Command[1]
				}
				s = testserver.New(o)
			}
			client, server := mcp.Pipe()
			wg.Add(1)
			go func() { defer wg.Done(); s.Serve(ctx, server); s.EndTasks() }()
			return client, nil
		},
	}
	if opts != nil {
		opts(&ho)
	}
	e.h = engine.New(cfg, ho)
	e.g = gateway.New(e.h, gateway.Options{PageSize: 3})
	t.Cleanup(func() {
		e.g.Close()
		e.h.Close()
		cancel()
		wg.Wait()
		noLeaks(t, before)
	})
	return e
}

// noLeaks waits for the goroutine count to come back to what it was.
func noLeaks(t testing.TB, before int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Errorf("goroutines: %d before, %d after:\n%s", before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// connect opens a downstream session as agent with the client options o.
func (e *env) connect(agent string, o mcp.ClientOptions) *mcp.Client {
	e.t.Helper()
	if o.ProtocolVersion == "" {
		// These tests are of legacy (2025-11-25) sessions; modern agents
		// have their own (modern_test.go).
		o.ProtocolVersion = mcp.LatestVersion
	}
	down, up := mcp.Pipe()
	done := make(chan struct{})
	go func() { defer close(done); e.g.Serve(e.ctx, up, agent) }()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := mcp.Connect(ctx, down, o)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { c.Close(); <-done })
	return c
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func names(tools []mcp.Tool) string {
	var out []string
	for _, t := range tools {
		out = append(out, t.Name)
	}
	return strings.Join(out, " ")
}

func TestCatalog(t *testing.T) {
	e := newEnv(t, nil)
	c := e.connect("claude", mcp.ClientOptions{})
	ctx := ctxT(t)
	tools, err := c.ListTools(ctx) // pages of 3: the client follows the cursors
	if err != nil {
		t.Fatal(err)
	}
	got := names(tools)
	for _, want := range []string{"mcp_probe_block", "mcp_probe_echo", "mcp_testserver_echo", "mcp_testserver_add"} {
		if !strings.Contains(got, want) {
			t.Errorf("tools/list lacks %s: %s", want, got)
		}
	}
	if strings.Contains(got, "mcp_testserver_fail") {
		t.Errorf("a denied tool is listed: %s", got)
	}
	res, err := c.CallTool(ctx, "mcp_testserver_echo", map[string]string{"message": "hi"}, nil)
	if err != nil || res.Content[0].Text != "hi" {
		t.Fatalf("call: %v %+v", err, res)
	}
	// Refused like a tool that does not exist, and the server never sees it.
	_, err = c.CallTool(ctx, "mcp_testserver_fail", map[string]string{"message": "x"}, nil)
	var rerr *mcp.RPCError
	if !errors.As(err, &rerr) || rerr.Code != mcp.CodeInvalidParams || !strings.Contains(rerr.Message, "may not use") {
		t.Errorf("denied call: %v", err)
	}
	_, err = c.CallTool(ctx, "mcp_nope_nothing", nil, nil)
	if !errors.As(err, &rerr) || rerr.Code != mcp.CodeInvalidParams {
		t.Errorf("unknown tool: %v", err)
	}

	// An agent limited to probe sees probe alone.
	ci := e.connect("ci", mcp.ClientOptions{})
	tools, err = ci.ListTools(ctx)
	if err != nil || names(tools) != "mcp_probe_block mcp_probe_echo" {
		t.Errorf("ci's tools: %v %s", err, names(tools))
	}
	if _, err := ci.CallTool(ctx, "mcp_testserver_echo", map[string]string{"message": "x"}, nil); err == nil {
		t.Error("ci called a server it may not see")
	}

	prompts, err := c.ListPrompts(ctx)
	if err != nil || !strings.Contains(fmt.Sprint(prompts), "mcp_testserver_greeting") {
		t.Fatalf("prompts: %v %v", err, prompts)
	}
	var pr mcp.GetPromptResult
	if err := c.Peer().Call(ctx, mcp.MethodPromptsGet, map[string]any{"name": "mcp_testserver_greeting", "arguments": map[string]string{"name": "Ada"}}, &pr); err != nil || !strings.Contains(fmt.Sprint(pr.Messages), "Ada") {
		t.Errorf("prompts/get: %v %+v", err, pr)
	}
	rr, err := c.ReadResource(ctx, "file:///readme.txt")
	if err != nil || !strings.Contains(rr.Contents[0].Text, "Nexus test server") {
		t.Errorf("read: %v", err)
	}
	if _, err := c.ReadResource(ctx, "nope://x"); err == nil {
		t.Error("reading an unknown URI worked")
	}
	comp, err := c.Complete(ctx, &mcp.CompleteParams{Ref: mcp.CompleteReference{Type: "ref/prompt", Name: "mcp_testserver_code_review"},
		Argument: struct {
			Name  string `json:"name"`
			Value string `json:"value"`
		}{"language", "py"}})
	if err != nil || !strings.Contains(fmt.Sprint(comp.Completion.Values), "python") {
		t.Errorf("complete: %v %+v", err, comp)
	}
}

func TestPrefixes(t *testing.T) {
	e := newEnv(t, func(c *config.Config) {
		c.Servers[0].Prefix = ptr("")      // probe: bare names
		c.Servers[1].Prefix = ptr("test_") // testserver
	})
	c := e.connect("claude", mcp.ClientOptions{})
	ctx := ctxT(t)
	tools, err := c.ListTools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := names(tools)
	if !strings.Contains(got, "block") || strings.Contains(got, "mcp_probe") || !strings.Contains(got, "test_echo") {
		t.Fatalf("names: %s", got)
	}
	res, err := c.CallTool(ctx, "echo", json.RawMessage(`{"x":1}`), nil)
	if err != nil || res.Content[0].Text != `probe:{"x":1}` {
		t.Fatalf("bare name: %v %+v", err, res)
	}
	res, err = c.CallTool(ctx, "test_echo", map[string]string{"message": "m"}, nil)
	if err != nil || res.Content[0].Text != "m" {
		t.Fatalf("prefixed name: %v %+v", err, res)
	}
}

// Two servers with bare names that both have "echo": the later is left out,
// never silently shadowing the other.
func TestPrefixCollision(t *testing.T) {
	e := newEnv(t, func(c *config.Config) {
		c.Servers[0].Prefix = ptr("")
		c.Servers[1].Prefix = ptr("")
	})
	c := e.connect("claude", mcp.ClientOptions{})
	tools, err := c.ListTools(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(" "+names(tools)+" ", " echo "); n != 1 {
		t.Errorf("echo listed %d times: %s", n, names(tools))
	}
	res, err := c.CallTool(ctxT(t), "echo", json.RawMessage(`{}`), nil)
	if err != nil || !strings.HasPrefix(res.Content[0].Text, "probe:") {
		t.Errorf("echo went to the wrong server: %v %+v", err, res)
	}
}

// A client that cancels, or goes away, cancels its upstream call.
func TestCancellation(t *testing.T) {
	e := newEnv(t, nil)
	c := e.connect("claude", mcp.ClientOptions{})
	ctx, cancel := context.WithCancel(ctxT(t))
	errc := make(chan error, 1)
	go func() { _, err := c.CallTool(ctx, "mcp_probe_block", nil, nil); errc <- err }()
	wait(t, e.probe.started, "the upstream call to start")
	cancel()
	wait(t, e.probe.cancelled, "the upstream call to be cancelled")
	if err := <-errc; err == nil {
		t.Error("a cancelled call returned no error")
	}

	// Disconnecting mid-call.
	down, up := mcp.Pipe()
	served := make(chan struct{})
	go func() { defer close(served); e.g.Serve(e.ctx, up, "claude") }()
	c2, err := mcp.Connect(ctxT(t), down, mcp.ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	go c2.CallTool(context.Background(), "mcp_probe_block", nil, nil)
	wait(t, e.probe.started, "the second upstream call to start")
	c2.Close()
	wait(t, e.probe.cancelled, "the disconnected client's upstream call to be cancelled")
	wait(t, served, "Serve to return")
}

func wait[T any](t *testing.T, ch <-chan T, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(30 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// Server-initiated requests reach the client whose call caused them, and
// no other, even when two sessions call at once.
func TestServerRequestsStayInTheirSession(t *testing.T) {
	e := newEnv(t, nil)
	ctx := ctxT(t)
	var wg sync.WaitGroup
	for i := range 2 {
		name := fmt.Sprintf("client-%d", i)
		var mu sync.Mutex
		var seen []string
		c := e.connect("claude", mcp.ClientOptions{
			Sampling: func(ctx context.Context, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
				mu.Lock()
				seen = append(seen, string(p.Messages[0].Content))
				mu.Unlock()
				return &mcp.CreateMessageResult{Role: "assistant", Model: name, Content: json.RawMessage(`{"type":"text","text":"from ` + name + `"}`)}, nil
			},
			Roots: func(context.Context) ([]mcp.Root, error) { return []mcp.Root{{URI: "file:///" + name}}, nil },
		})
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 5 {
				res, err := c.CallTool(ctx, "mcp_testserver_sample", map[string]string{"prompt": fmt.Sprintf("%s-%d", name, j)}, nil)
				if err != nil || !strings.Contains(res.Content[0].Text, "from "+name) {
					t.Errorf("%s: %v %+v", name, err, res)
				}
				res, err = c.CallTool(ctx, "mcp_testserver_roots", nil, nil)
				if err != nil || !strings.Contains(res.Content[0].Text, "file:///"+name) {
					t.Errorf("%s roots: %v %+v", name, err, res)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			for _, s := range seen {
				if !strings.Contains(s, name) {
					t.Errorf("%s was asked %s", name, s)
				}
			}
		}()
	}
	wg.Wait()

	// A client that declared no sampling shares the connection, where no
	// server can ask anything.
	plain := e.connect("claude", mcp.ClientOptions{})
	res, err := plain.CallTool(ctx, "mcp_testserver_sample", map[string]string{"prompt": "x"}, nil)
	if err == nil && !res.IsError {
		t.Errorf("sampling reached a client that declared none: %+v", res)
	}
}

// A trusted agent's first use of a server is confirmed by the person
// behind the client, through elicitation; without elicitation it is denied
// with the fix.
func TestConfirmByElicitation(t *testing.T) {
	e := newEnv(t, func(c *config.Config) {
		c.Agents = append(c.Agents, &config.Agent{Name: "careful", Permission: "trusted"})
	})
	ctx := ctxT(t)
	asked := 0
	c := e.connect("careful", mcp.ClientOptions{
		Elicitation: func(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
			asked++
			if !strings.Contains(p.Message, `"probe"`) {
				t.Errorf("asked %q", p.Message)
			}
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": "always"}}, nil
		},
	})
	for range 2 {
		res, err := c.CallTool(ctx, "mcp_probe_echo", nil, nil)
		if err != nil || res.IsError {
			t.Fatalf("confirmed call: %v %+v", err, res)
		}
	}
	if asked != 1 {
		t.Errorf("asked %d times, want once (always)", asked)
	}
	plain := e.connect("careful", mcp.ClientOptions{})
	res, err := plain.CallTool(ctx, "mcp_testserver_echo", map[string]string{"message": "x"}, nil)
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].Text, "elicitation") {
		t.Errorf("unconfirmable call: %v %+v", err, res)
	}
}

// Raw frames a client may send: each gets a clear answer and the session
// lives on.
func TestBadInput(t *testing.T) {
	e := newEnv(t, nil)
	down, up := mcp.Pipe()
	served := make(chan error, 1)
	go func() { served <- e.g.Serve(e.ctx, up, "claude") }()
	defer down.Close()
	ask := func(frame string) string {
		t.Helper()
		if err := down.WriteMessage(context.Background(), []byte(frame)); err != nil {
			t.Fatal(err)
		}
		got, err := down.ReadMessage()
		if err != nil {
			t.Fatal(err)
		}
		return string(got)
	}
	for _, c := range []struct{ frame, want string }{
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, "send initialize first"},
		{`{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":"1999-01-01","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`, `"protocolVersion":"2025-11-25"`},
		{`{"jsonrpc":"2.0","id":3,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`, "already initialized"},
		{`{"jsonrpc":"2.0","id":4,"method":"no/such"}`, `"code":-32601`},
		{`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"arguments":{}}}`, "name"},
		{`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":"nope"}`, `"code":-32602`},
		{`{"jsonrpc":"2.0","id":7,"method":"resources/read","params":{}}`, "uri"},
		{`{"jsonrpc":"2.0","id":8,"method":"tools/list","params":{"cursor":"zz"}}`, "invalid cursor"},
		{`{"jsonrpc":"2.0","id":9,"method":"logging/setLevel","params":{"level":"loud"}}`, "level must be one of"},
		{`{"jsonrpc":"2.0","id":10,"method":"completion/complete","params":{"ref":{"type":"ref/nope"}}}`, "ref.type"},
		{`{"jsonrpc":"2.0","id":11,"method":"prompts/get","params":{"name":"mcp_nope"}}`, "unknown prompt"},
		{`{"jsonrpc":"2.0","id":12,"method":"ping"}`, `"result":{}`},
	} {
		if got := ask(c.frame); !strings.Contains(got, c.want) {
			t.Errorf("%s\n got %s\nwant %s", c.frame, got, c.want)
		}
	}
	// Malformed JSON ends the session (the stream cannot be trusted), and
	// nothing else.
	down.WriteMessage(context.Background(), []byte(`{"jsonrpc":`))
	select {
	case <-served:
	case <-time.After(30 * time.Second):
		t.Fatal("the session outlived a malformed frame")
	}
}

// Any tool runs as a task: created at once, polled, its result waited
// for, listed, cancelled (which cancels the call upstream).
// pinWithoutAdd pins the test server's definitions as they are, but for
// its add tool, which the pin leaves out; with pins them all.
func pinWithoutAdd(t *testing.T, ctx context.Context, e *env) (without, with *lock.Server) {
	t.Helper()
	d, err := e.h.Definitions(ctx, "claude", "testserver")
	if err != nil {
		t.Fatal(err)
	}
	var keep []mcp.Tool
	for _, tl := range d.Tools {
		if tl.Name != "add" {
			keep = append(keep, tl)
		}
	}
	if without, err = lock.Pin("testserver", d.Info, keep, nil, nil); err != nil {
		t.Fatal(err)
	}
	if with, err = lock.Pin("testserver", d.Info, d.Tools, nil, nil); err != nil {
		t.Fatal(err)
	}
	return without, with
}

// Through the gateway a lockfile holds as in the CLI: a client does not
// see a tool that is not pinned as it is, and calling it by name is
// refused, with the fix, as a tool result the model can read.
func TestLockfileThroughGateway(t *testing.T) {
	l := &lock.Lock{} // filled below, before the first check reads it
	e := newEnvLocked(t, nil, l)
	ctx := ctxT(t)
	pinned, _ := pinWithoutAdd(t, ctx, e) // add is new to this lockfile
	l.Put(pinned)
	l.Put(&lock.Server{Name: "probe"})
	c := e.connect("claude", mcp.ClientOptions{})
	listed, err := c.ListTools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range listed {
		if tl.Name == "mcp_testserver_add" {
			t.Fatal("a tool the lockfile does not pin is listed")
		}
	}
	res, err := c.CallTool(ctx, "mcp_testserver_add", json.RawMessage(`{"a":1,"b":2}`), nil)
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].Text, "new since the lockfile was written") {
		t.Fatalf("calling it: %v %+v", err, res)
	}
	if res, err := c.CallTool(ctx, "mcp_testserver_echo", json.RawMessage(`{"message":"pinned"}`), nil); err != nil || res.IsError {
		t.Fatalf("a pinned tool: %v %+v", err, res)
	}
}

// A rug pull mid-session through the gateway: the upstream poisons a
// pinned tool and sends list_changed; the gateway tells its client, whose
// re-list no longer shows the tool, and a call of it is refused with what
// changed.
func TestRugPullThroughGateway(t *testing.T) {
	l := &lock.Lock{}
	e := newEnvLocked(t, func(c *config.Config) {
		c.Servers = append(c.Servers, &config.Server{Name: "rugged", Type: config.TypeStdio, Command: []string{"testserver", testserver.VariantRugPull}, Enabled: true})
	}, l)
	ctx := ctxT(t)
	for _, name := range []string{"rugged", "testserver", "probe"} {
		d, err := e.h.Definitions(ctx, "claude", name)
		if err != nil {
			t.Fatal(err)
		}
		pinned, err := lock.Pin(name, d.Info, d.Tools, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		l.Put(pinned)
	}
	changed := make(chan string, 8)
	c := e.connect("claude", mcp.ClientOptions{OnListChanged: func(kind string) { changed <- kind }})
	has := func(name string) bool {
		tools, err := c.ListTools(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, tl := range tools {
			if tl.Name == name {
				return true
			}
		}
		return false
	}
	if !has("mcp_rugged_echo") {
		t.Fatal("the pinned echo is not listed")
	}
	if res, err := c.CallTool(ctx, "mcp_rugged_rug_pull", nil, nil); err != nil || res.IsError {
		t.Fatalf("rug_pull: %v %+v", err, res)
	}
	select {
	case <-changed:
	case <-ctx.Done():
		t.Fatal("no list_changed reached the client")
	}
	if has("mcp_rugged_echo") {
		t.Error("the poisoned echo is still listed")
	}
	res, err := c.CallTool(ctx, "mcp_rugged_echo", json.RawMessage(`{"message":"hi"}`), nil)
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].Text, "its description changed") || !strings.Contains(res.Content[0].Text, "nexus lock --server rugged") {
		t.Fatalf("calling the poisoned echo: %v %+v", err, res)
	}
	// The refusal goes to the model: no byte of the poisoned description
	// (issue 42), only its length and hash.
	for _, w := range []string{"IMPORTANT", "id_rsa", "Before using", "Echo back"} {
		if strings.Contains(res.Content[0].Text, w) {
			t.Errorf("the refusal carries the server's text %q: %s", w, res.Content[0].Text)
		}
	}
}

// Calls through the gateway are audited, each record naming the
// downstream session (its own id, the same for the session's calls,
// another for the next session), and the log verifies.
func TestAuditThroughGateway(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	aw, err := audit.Open(audit.Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer aw.Close()
	e := newEnvOpts(t, nil, func(o *engine.Options) { o.Audit = aw })
	ctx := ctxT(t)
	for range 2 {
		c := e.connect("claude", mcp.ClientOptions{})
		if res, err := c.CallTool(ctx, "mcp_testserver_echo", json.RawMessage(`{"message":"hi"}`), nil); err != nil || res.IsError {
			t.Fatalf("%v %+v", err, res)
		}
		if _, err := c.CallTool(ctx, "mcp_testserver_fail", nil, nil); err == nil {
			t.Fatal("a tool the agent's rules deny was called")
		}
	}
	if err := aw.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := audit.Verify(path); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	var sessions []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var r audit.Record
		json.Unmarshal([]byte(line), &r)
		if r.Method != mcp.MethodToolsCall {
			continue
		}
		sessions = append(sessions, r.Session)
		if r.Agent != "claude" || (r.Tool == "fail") != (r.Decision == "deny") {
			t.Errorf("record %+v", r)
		}
	}
	if len(sessions) != 4 || sessions[0] == "" || sessions[0] != sessions[1] || sessions[1] == sessions[2] || sessions[2] != sessions[3] {
		t.Errorf("sessions %q", sessions)
	}
}

// A tool its server runs only as a task reaches clients through the
// gateway either way: called plainly (the host runs the task upstream and
// answers with its result) or as a task of the gateway's own.
func TestTaskRequiredUpstream(t *testing.T) {
	e := newEnv(t, func(c *config.Config) {
		c.Servers = append(c.Servers, &config.Server{Name: "jobs", Type: config.TypeStdio, Command: []string{"tasks"}, Enabled: true})
	})
	c := e.connect("claude", mcp.ClientOptions{})
	ctx := ctxT(t)
	res, err := c.CallTool(ctx, "mcp_jobs_job", json.RawMessage(`{"n":1}`), nil)
	if err != nil || len(res.Content) == 0 || res.Content[0].Text != `job done {"n":1}` {
		t.Fatalf("plain call: %v %+v", err, res)
	}
	res, err = c.CallToolAsTask(ctx, "mcp_jobs_job", json.RawMessage(`{"n":2}`), nil)
	if err != nil || len(res.Content) == 0 || res.Content[0].Text != `job done {"n":2}` {
		t.Fatalf("as a task: %v %+v", err, res)
	}
}

func TestTasks(t *testing.T) {
	e := newEnv(t, nil)
	c := e.connect("claude", mcp.ClientOptions{})
	ctx := ctxT(t)
	if len(c.Capabilities().Tasks) == 0 {
		t.Fatal("no tasks capability")
	}
	tools, _ := c.ListTools(ctx)
	if len(tools) == 0 || !strings.Contains(string(tools[0].Execution), `"optional"`) {
		t.Errorf("tools do not say they run as tasks: %+v", tools)
	}
	type state struct {
		TaskID, Status, StatusMessage, CreatedAt, LastUpdatedAt string
		TTL                                                     int64
	}
	call := func(tool, args string) state {
		t.Helper()
		var res struct{ Task state }
		if err := c.Peer().Call(ctx, mcp.MethodToolsCall, json.RawMessage(`{"name":"`+tool+`","arguments":`+args+`,"task":{"ttl":60000}}`), &res); err != nil {
			t.Fatal(err)
		}
		if res.Task.TaskID == "" || res.Task.Status != "working" || res.Task.TTL != 60000 || res.Task.CreatedAt == "" {
			t.Fatalf("CreateTaskResult %+v", res.Task)
		}
		return res.Task
	}
	echo := call("mcp_testserver_echo", `{"message":"as a task"}`)
	var result mcp.CallToolResult
	if err := c.Peer().Call(ctx, "tasks/result", map[string]string{"taskId": echo.TaskID}, &result); err != nil || result.Content[0].Text != "as a task" {
		t.Fatalf("tasks/result: %v %+v", err, result)
	}
	if !strings.Contains(string(result.Meta["io.modelcontextprotocol/related-task"]), echo.TaskID) {
		t.Errorf("result meta %v", result.Meta)
	}
	var got state
	if err := c.Peer().Call(ctx, "tasks/get", map[string]string{"taskId": echo.TaskID}, &got); err != nil || got.Status != "completed" {
		t.Errorf("tasks/get: %v %+v", err, got)
	}
	var rerr *mcp.RPCError
	if err := c.Peer().Call(ctx, "tasks/cancel", map[string]string{"taskId": echo.TaskID}, &got); !errors.As(err, &rerr) || rerr.Code != mcp.CodeInvalidParams {
		t.Errorf("cancelling a completed task: %v", err)
	}

	// Invalid arguments are a tool execution error (SEP-1303): the task
	// completes with a result the model reads, and the tool did not run.
	bad := call("mcp_testserver_add", `{"a":"x"}`)
	if err := c.Peer().Call(ctx, "tasks/result", map[string]string{"taskId": bad.TaskID}, &result); err != nil || !result.IsError ||
		len(result.Content) == 0 || !strings.Contains(result.Content[0].Text, "do not match the tool's schema") {
		t.Errorf("invalid arguments' task result: %v %+v", err, result)
	}
	failed := call("mcp_testserver_no_such_tool", `{}`) // a JSON-RPC error
	if err := c.Peer().Call(ctx, "tasks/result", map[string]string{"taskId": failed.TaskID}, &result); !errors.As(err, &rerr) || rerr.Code != mcp.CodeInvalidParams {
		t.Errorf("a failed task's result: %v", err)
	}

	block := call("mcp_probe_block", `{}`)
	wait(t, e.probe.started, "the task's call to start")
	var list struct{ Tasks []state }
	if err := c.Peer().Call(ctx, "tasks/list", nil, &list); err != nil || len(list.Tasks) != 3 {
		t.Fatalf("tasks/list: %v %+v", err, list)
	}
	if err := c.Peer().Call(ctx, "tasks/cancel", map[string]string{"taskId": block.TaskID}, &got); err != nil || got.Status != "cancelled" {
		t.Fatalf("tasks/cancel: %v %+v", err, got)
	}
	wait(t, e.probe.cancelled, "the cancelled task's upstream call to stop")
	if err := c.Peer().Call(ctx, "tasks/get", map[string]string{"taskId": "nope"}, &got); !errors.As(err, &rerr) || !strings.Contains(rerr.Message, "unknown task") {
		t.Errorf("unknown task: %v", err)
	}

	// A task still running when its session ends is cancelled.
	call("mcp_probe_block", `{}`)
	wait(t, e.probe.started, "the last task's call to start")
	c.Close()
	wait(t, e.probe.cancelled, "the ended session's task to stop")
}

// TestResultPassedOn: a result nothing changed reaches the client as the
// server wrote it, not encoded again; one the host's sanitizer changed,
// or whose bytes say more than the result it decodes to (a key given
// twice, which two parsers may read two ways), reaches it encoded from
// what the chain checked.
func TestResultPassedOn(t *testing.T) {
	e := newEnv(t, func(cfg *config.Config) {
		cfg.Servers = append(cfg.Servers, &config.Server{Name: "raw", Type: config.TypeStdio, Command: []string{"rawfake"}, Enabled: true})
	})
	c := e.connect("claude", mcp.ClientOptions{})
	ctx := ctxT(t)
	// Each case: what the server sends, and what the client must get
	// ("" for the same bytes), by a tool's result or by a resource read.
	for _, tc := range []struct {
		sent, want string
		read       bool
	}{
		{`{ "isError":false, "content":[{"text":"caf\u00e9","type":"text"}] }`, "", false},
		{`{"content":[{"type":"text","text":"\u001b[31mred"}]}`, `{"content":[{"type":"text","text":"red"}]}`, false},
		{`{"content":[{"type":"text","text":"first"}],"content":[{"type":"text","text":"second"}]}`, `{"content":[{"type":"text","text":"second"}]}`, false},
		{`{ "contents":[{"text":"caf\u00e9","uri":"file:///a"}] }`, "", true},
		{`{"contents":[{"uri":"file:///a","text":"\u001b[31mred"}]}`, `{"contents":[{"uri":"file:///a","text":"red"}]}`, true},
	} {
		var got json.RawMessage
		o := &mcp.CallOptions{Wire: &got}
		var err error
		if tc.read {
			_, err = c.ReadResourceWith(ctx, "raw:"+url.QueryEscape(tc.sent), o)
		} else {
			args, _ := json.Marshal(map[string]string{"result": tc.sent})
			_, err = c.CallTool(ctx, "mcp_raw_reply", json.RawMessage(args), o)
		}
		if err != nil {
			t.Fatal(err)
		}
		want := tc.want
		if want == "" {
			want = tc.sent
		}
		if string(got) != want {
			t.Errorf("the server sent %s\nthe client got %s\nwant %s", tc.sent, got, want)
		}
	}
}

// TestTraceContinued: a traceparent in a client's tools/call _meta is
// continued: the gateway's spans join the client's trace (a value written
// with escapes reads the same), and one that is not a string is ignored.
func TestTraceContinued(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tel, err := telemetry.New(context.Background(), telemetry.Options{Exporter: exp, Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnvOpts(t, nil, func(o *engine.Options) { o.Telemetry = tel })
	c := e.connect("claude", mcp.ClientOptions{})
	ctx := ctxT(t)
	for _, tc := range []struct{ traceparent, trace string }{
		{`"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"`, "4bf92f3577b34da6a3ce929d0e0e4736"},
		{`"\u0030\u0030-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"`, "0af7651916cd43dd8448eb211c80319c"},
		{`{"not":"a string"}`, ""},
	} {
		exp.Reset()
		o := &mcp.CallOptions{Meta: mcp.Meta{"traceparent": json.RawMessage(tc.traceparent)}}
		if _, err := c.CallTool(ctx, "mcp_testserver_echo", map[string]string{"message": "hi"}, o); err != nil {
			t.Fatal(err)
		}
		if err := tel.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		spans := exp.GetSpans()
		if len(spans) == 0 {
			t.Fatalf("%s: no spans", tc.traceparent)
		}
		for _, sp := range spans {
			got := sp.SpanContext.TraceID().String()
			if (tc.trace != "" && got != tc.trace) || (tc.trace == "" && (got == "4bf92f3577b34da6a3ce929d0e0e4736" || got == "0af7651916cd43dd8448eb211c80319c")) {
				t.Errorf("traceparent %s: span %s in trace %s", tc.traceparent, sp.Name, got)
			}
		}
	}
}
