package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nexus-mcp/nexus/internal/wire"
)

// testServer builds a small server with the features the client tests need.
func testServer(pageSize int) *Server {
	s := NewServer(Implementation{Name: "t", Version: "1"}, ServerOptions{PageSize: pageSize, Logging: true, Instructions: "hi",
		Completion: func(ctx context.Context, ss *ServerSession, p *CompleteParams) (*CompleteResult, error) {
			return &CompleteResult{Completion: Completion{Values: []string{p.Argument.Value + "x"}}}, nil
		}})
	s.AddTool(Tool{Name: "echo", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, r *CallToolRequest) (*CallToolResult, error) {
		var a struct{ Message string }
		_ = json.Unmarshal(r.Arguments, &a)
		_ = r.Session.Log(ctx, "info", "echo", a.Message)
		return &CallToolResult{Content: []Content{TextContent(a.Message)}}, nil
	})
	s.AddTool(Tool{Name: "slow"}, func(ctx context.Context, r *CallToolRequest) (*CallToolResult, error) {
		for i := 1; i <= 3; i++ {
			if err := r.Progress(ctx, float64(i), 3, fmt.Sprintf("step %d", i)); err != nil {
				return nil, err
			}
		}
		<-ctx.Done()
		return nil, ctx.Err()
	})
	s.AddTool(Tool{Name: "roots"}, func(ctx context.Context, r *CallToolRequest) (*CallToolResult, error) {
		roots, err := r.Session.ListRoots(ctx)
		if err != nil {
			return nil, err
		}
		return &CallToolResult{Content: []Content{TextContent(roots[0].URI)}}, nil
	})
	s.AddTool(Tool{Name: "sample"}, func(ctx context.Context, r *CallToolRequest) (*CallToolResult, error) {
		res, err := r.Session.CreateMessage(ctx, &CreateMessageParams{MaxTokens: 5, Messages: []SamplingMessage{{Role: "user", Content: json.RawMessage(`{"type":"text","text":"q"}`)}}})
		if err != nil {
			return nil, err
		}
		return &CallToolResult{Content: []Content{TextContent(string(res.Content))}}, nil
	})
	s.AddTool(Tool{Name: "elicit"}, func(ctx context.Context, r *CallToolRequest) (*CallToolResult, error) {
		res, err := r.Session.Elicit(ctx, &ElicitParams{Mode: "url", Message: "m", URL: "https://example.test/x", ElicitationID: "e1"})
		if err != nil {
			return nil, err
		}
		return &CallToolResult{Content: []Content{TextContent(res.Action)}}, nil
	})
	for i := range 7 {
		name := fmt.Sprintf("t%d", i)
		s.AddTool(Tool{Name: name}, func(ctx context.Context, r *CallToolRequest) (*CallToolResult, error) {
			return &CallToolResult{Content: []Content{TextContent(name)}}, nil
		})
	}
	s.AddResource(Resource{URI: "file:///a.txt", Name: "a"}, func(ctx context.Context, ss *ServerSession, uri string) (*ReadResourceResult, error) {
		return &ReadResourceResult{Contents: []ResourceContents{{URI: uri, Text: "A"}}}, nil
	})
	s.AddResourceTemplate(ResourceTemplate{URITemplate: "file:///u/{id}.json", Name: "u"}, func(ctx context.Context, ss *ServerSession, uri string) (*ReadResourceResult, error) {
		return &ReadResourceResult{Contents: []ResourceContents{{URI: uri, Blob: "AAE=", MimeType: "application/octet-stream"}}}, nil
	})
	s.AddPrompt(Prompt{Name: "p", Arguments: []PromptArgument{{Name: "who", Required: true}}}, func(ctx context.Context, ss *ServerSession, args map[string]string) (*GetPromptResult, error) {
		return &GetPromptResult{Messages: []PromptMessage{{Role: "user", Content: TextContent("hi " + args["who"])}}}, nil
	})
	return s
}

func connectPair(t *testing.T, s *Server, opts ClientOptions) *Client {
	t.Helper()
	a, b := Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Serve(ctx, b); close(done) }()
	c, err := Connect(context.Background(), a, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(); cancel(); <-done })
	return c
}

// peerPair is two started Peers over a Pipe, server with so and client
// with co, both closed when the test ends (Close again is harmless).
func peerPair(t testing.TB, so, co PeerOptions) (server, client *Peer) {
	t.Helper()
	a, b := Pipe()
	server = NewPeer(b, so)
	server.Start()
	client = NewPeer(a, co)
	client.Start()
	t.Cleanup(func() { client.Close(); server.Close() })
	return server, client
}

func TestClientEndToEnd(t *testing.T) {
	var logs []LogMessage
	var mu sync.Mutex
	c := connectPair(t, testServer(3), ClientOptions{OnLog: func(m LogMessage) { mu.Lock(); logs = append(logs, m); mu.Unlock() }})
	ctx := context.Background()
	if c.ProtocolVersion() != LatestVersion || c.ServerInfo().Name != "t" || c.Instructions() != "hi" {
		t.Fatalf("init: %+v", c.InitializeResult())
	}
	tools, err := c.ListTools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(tools) != 12 {
		t.Fatalf("want 12 tools over 4 pages, got %d", len(tools))
	}
	res, err := c.CallTool(ctx, "echo", map[string]string{"message": "hello"}, nil)
	if err != nil || res.Content[0].Text != "hello" {
		t.Fatalf("echo: %v %+v", err, res)
	}
	// The log notification is sent before the response on the same stream.
	mu.Lock()
	if len(logs) != 1 || string(logs[0].Data) != `"hello"` {
		t.Fatalf("logs: %+v", logs)
	}
	mu.Unlock()
	if err := c.SetLogLevel(ctx, "error"); err != nil {
		t.Fatal(err)
	}
	c.CallTool(ctx, "echo", map[string]string{"message": "quiet"}, nil)
	mu.Lock()
	if len(logs) != 1 {
		t.Fatalf("setLevel ignored: %+v", logs)
	}
	mu.Unlock()

	rs, err := c.ListResources(ctx)
	if err != nil || len(rs) != 1 {
		t.Fatal(err, rs)
	}
	tm, err := c.ListResourceTemplates(ctx)
	if err != nil || len(tm) != 1 {
		t.Fatal(err, tm)
	}
	rr, err := c.ReadResource(ctx, "file:///u/42.json")
	if err != nil || rr.Contents[0].Blob != "AAE=" {
		t.Fatal(err, rr)
	}
	if _, err := c.ReadResource(ctx, "file:///nope"); err == nil || !strings.Contains(err.Error(), "resource not found") {
		t.Fatal(err)
	}
	ps, err := c.ListPrompts(ctx)
	if err != nil || len(ps) != 1 {
		t.Fatal(err)
	}
	pr, err := c.GetPrompt(ctx, "p", map[string]string{"who": "bo"})
	if err != nil || pr.Messages[0].Content.Text != "hi bo" {
		t.Fatal(err, pr)
	}
	if _, err := c.GetPrompt(ctx, "p", nil); err == nil {
		t.Fatal("missing required argument accepted")
	}
	cr, err := c.Complete(ctx, &CompleteParams{Ref: CompleteReference{Type: "ref/prompt", Name: "p"}})
	if err != nil || len(cr.Completion.Values) != 1 {
		t.Fatal(err, cr)
	}
	if _, err := c.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Subscribe(ctx, "file:///a.txt"); err != nil {
		t.Fatal(err)
	}
}

func TestUnknownToolIsRPCError(t *testing.T) {
	c := connectPair(t, testServer(0), ClientOptions{})
	_, err := c.CallTool(context.Background(), "nope", nil, nil)
	var rerr *RPCError
	if !errors.As(err, &rerr) || rerr.Code != CodeInvalidParams {
		t.Fatalf("got %v", err)
	}
}

func TestProgressAndCancellation(t *testing.T) {
	s := testServer(0)
	c := connectPair(t, s, ClientOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	var got atomic.Int32
	errc := make(chan error, 1)
	go func() {
		_, err := c.CallTool(ctx, "slow", nil, &CallOptions{OnProgress: func(p Progress) {
			if got.Add(1) == 3 {
				cancel()
			}
		}})
		errc <- err
	}()
	select {
	case err := <-errc:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("want context.Canceled, got %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("call did not return after cancel")
	}
	if got.Load() != 3 {
		t.Fatalf("progress notifications: %d", got.Load())
	}
	// The server-side handler must have been cancelled by notifications/cancelled:
	// poll until no incoming request is left on the server's peer.
	deadline := time.Now().Add(5 * time.Second)
	for {
		n := 0
		for _, ss := range s.liveSessions() {
			ss.peer.mu.Lock()
			n += len(ss.peer.incoming)
			ss.peer.mu.Unlock()
		}
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("server handler never cancelled")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestTimeoutSendsCancelled(t *testing.T) {
	s := testServer(0)
	started, ended := make(chan struct{}, 1), make(chan struct{}, 1)
	s.AddTool(Tool{Name: "block"}, func(ctx context.Context, r *CallToolRequest) (*CallToolResult, error) {
		started <- struct{}{}
		<-ctx.Done()
		ended <- struct{}{}
		return nil, ctx.Err()
	})
	c := connectPair(t, s, ClientOptions{Timeout: 50 * time.Millisecond})
	_, err := c.CallTool(context.Background(), "block", nil, nil)
	var te *TimeoutError
	if !errors.As(err, &te) {
		t.Fatalf("want TimeoutError, got %v", err)
	}
	// The server hears of it: its handler, which runs until cancelled, ends.
	for _, w := range []struct {
		ch   chan struct{}
		what string
	}{{started, "never started"}, {ended, "was not cancelled"}} {
		select {
		case <-w.ch:
		case <-time.After(10 * time.Second):
			t.Fatalf("after 10 s, the server's handler %s", w.what)
		}
	}
	// The session stays usable.
	if _, err := c.CallTool(context.Background(), "echo", map[string]string{"message": "x"}, nil); err != nil {
		t.Fatal(err)
	}
}

func TestServerInitiatedRequests(t *testing.T) {
	c := connectPair(t, testServer(0), ClientOptions{
		Roots: func(ctx context.Context) ([]Root, error) { return []Root{{URI: "file:///r"}}, nil },
		Sampling: func(ctx context.Context, p *CreateMessageParams) (*CreateMessageResult, error) {
			return &CreateMessageResult{Role: "assistant", Content: json.RawMessage(`{"type":"text","text":"a"}`), Model: "m"}, nil
		},
		Elicitation: func(ctx context.Context, p *ElicitParams) (*ElicitResult, error) {
			if p.Mode != "url" || p.ElicitationID != "e1" {
				return nil, fmt.Errorf("bad params %+v", p)
			}
			return &ElicitResult{Action: "accept"}, nil
		},
		ElicitationURL: true,
	})
	ctx := context.Background()
	for tool, want := range map[string]string{"roots": "file:///r", "sample": `{"type":"text","text":"a"}`, "elicit": "accept"} {
		res, err := c.CallTool(ctx, tool, nil, nil)
		if err != nil || res.Content[0].Text != want {
			t.Fatalf("%s: %v %+v", tool, err, res)
		}
	}
}

func TestNoHandlerNoCapability(t *testing.T) {
	c := connectPair(t, testServer(0), ClientOptions{})
	ctx := context.Background()
	for _, tool := range []string{"roots", "sample", "elicit"} {
		_, err := c.CallTool(ctx, tool, nil, nil)
		var ns *NotSupportedError
		if !errors.As(err, &ns) && !strings.Contains(fmt.Sprint(err), "does not offer") {
			t.Fatalf("%s: want not-supported, got %v", tool, err)
		}
	}
	// Even if a server ignores the capabilities, the client answers method not found.
	res, err := c.peer.CallRaw(ctx, "ping", nil)
	if err != nil || string(res) != "{}" {
		t.Fatal(err, string(res))
	}
	h := clientHandler{c}
	_, err = h.HandleRequest(ctx, MethodRootsList, nil)
	var rerr *RPCError
	if !errors.As(err, &rerr) || rerr.Code != CodeMethodNotFound {
		t.Fatalf("got %v", err)
	}
}

func TestCapabilitiesDeclaredOnlyWithHandlers(t *testing.T) {
	c := &Client{opts: ClientOptions{}}
	b, _ := json.Marshal(c.capabilities())
	if string(b) != `{}` {
		t.Fatalf("no handlers: %s", b)
	}
	c.opts.Roots = func(context.Context) ([]Root, error) { return nil, nil }
	c.opts.Elicitation = func(context.Context, *ElicitParams) (*ElicitResult, error) { return nil, nil }
	b, _ = json.Marshal(c.capabilities())
	if string(b) != `{"roots":{},"elicitation":{"form":{}}}` {
		t.Fatalf("got %s", b)
	}
}

func TestListChangedRefreshesCache(t *testing.T) {
	s := testServer(0)
	changed := make(chan string, 4)
	c := connectPair(t, s, ClientOptions{OnListChanged: func(k string) { changed <- k }})
	ctx := context.Background()
	before, _ := c.Tools(ctx)
	s.AddTool(Tool{Name: "new"}, func(ctx context.Context, r *CallToolRequest) (*CallToolResult, error) { return &CallToolResult{}, nil })
	select {
	case k := <-changed:
		if k != "tools" {
			t.Fatal(k)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no list_changed")
	}
	after, _ := c.Tools(ctx)
	if len(after) != len(before)+1 {
		t.Fatalf("cache not refreshed: %d -> %d", len(before), len(after))
	}
}

// newScripted is a fake legacy server driven by a function that sees each
// client frame; it answers the era probe (server/discover) as a legacy
// server does, with method not found.
func newScripted(t *testing.T, serve func(in []byte, send func(string))) Conn {
	a, b := Pipe()
	go func() {
		for {
			m, err := b.ReadMessage()
			if err != nil {
				return
			}
			send := func(s string) { b.WriteMessage(context.Background(), []byte(s)) }
			if methodOf(m) == MethodServerDiscover {
				send(`{"jsonrpc":"2.0","id":` + idOf(m) + `,"error":{"code":-32601,"message":"Method not found"}}`)
				continue
			}
			serve(m, send)
		}
	}()
	t.Cleanup(func() { a.Close() })
	return a
}

func idOf(m []byte) string {
	var e envelope
	parseEnvelope(m, &e)
	return string(e.id)
}

func methodOf(m []byte) string {
	var e envelope
	parseEnvelope(m, &e)
	s, _ := wire.Unquote(e.method)
	return s
}

func initReply(version string) string {
	return `"result":{"protocolVersion":"` + version + `","capabilities":{"tools":{}},"serverInfo":{"name":"s","version":"1"}}}`
}

func TestVersionNegotiation(t *testing.T) {
	for _, v := range SupportedVersions {
		conn := newScripted(t, func(in []byte, send func(string)) {
			if methodOf(in) == "initialize" {
				send(`{"jsonrpc":"2.0","id":` + idOf(in) + `,` + initReply(v))
			}
		})
		c, err := Connect(context.Background(), conn, ClientOptions{})
		if err != nil {
			t.Fatalf("%s: %v", v, err)
		}
		if c.ProtocolVersion() != v {
			t.Fatal(c.ProtocolVersion())
		}
		c.Close()
	}
	conn := newScripted(t, func(in []byte, send func(string)) {
		send(`{"jsonrpc":"2.0","id":` + idOf(in) + `,` + initReply("1999-01-01"))
	})
	_, err := Connect(context.Background(), conn, ClientOptions{})
	var ue *UnsupportedVersionError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "1999-01-01") {
		t.Fatalf("got %v", err)
	}
}

func TestInitializedHasNoParams(t *testing.T) {
	got := make(chan string, 1)
	conn := newScripted(t, func(in []byte, send func(string)) {
		switch methodOf(in) {
		case "initialize":
			send(`{"jsonrpc":"2.0","id":` + idOf(in) + `,` + initReply(LatestVersion))
		case NotificationInitialized:
			got <- string(in)
		}
	})
	c, err := Connect(context.Background(), conn, ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if m := <-got; m != `{"jsonrpc":"2.0","method":"notifications/initialized"}` {
		t.Fatalf("initialized frame: %s", m)
	}
}

// TestHostileServer covers responses for unknown ids, string ids, a flood of
// notifications before the answer, unknown content types and invalid JSON.
func TestHostileServer(t *testing.T) {
	conn := newScripted(t, func(in []byte, send func(string)) {
		id := idOf(in)
		switch methodOf(in) {
		case "initialize":
			send(`{"jsonrpc":"2.0","id":` + id + `,` + initReply(LatestVersion))
		case "tools/call":
			send(`{"jsonrpc":"2.0","id":999999,"result":{}}`)
			send(`{"jsonrpc":"2.0","id":"` + id + `","result":{}}`)
			for i := 0; i < 10000; i++ {
				send(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}`)
			}
			send(`{"jsonrpc":"2.0","id":` + id + `,"result":{"content":[{"type":"text","text":"ok"},{"type":"hologram","beam":[1,2]}],"isError":false}}`)
		case "ping":
			send(`{"jsonrpc":"2.0","id":` + id + `,"result":{}} trailing`)
		}
	})
	var logs atomic.Int32
	c, err := Connect(context.Background(), conn, ClientOptions{OnLog: func(LogMessage) { logs.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.CallTool(context.Background(), "x", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Content) != 2 || res.Content[1].Type != "hologram" || string(res.Content[1].Raw) != `{"type":"hologram","beam":[1,2]}` {
		t.Fatalf("unknown content not kept: %+v", res.Content)
	}
	out, _ := json.Marshal(res)
	if !strings.Contains(string(out), `{"type":"hologram","beam":[1,2]}`) {
		t.Fatalf("unknown content not re-encoded: %s", out)
	}
	if logs.Load() != 10000 {
		t.Fatalf("notifications: %d", logs.Load())
	}
	_, err = c.Ping(context.Background())
	var ie *InvalidMessageError
	if !errors.As(err, &ie) || ie.Offset <= 0 {
		t.Fatalf("invalid JSON: want InvalidMessageError, got %v", err)
	}
	select {
	case <-c.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("session did not end on invalid JSON")
	}
}

func TestConnEOFFailsInFlight(t *testing.T) {
	var conn Conn
	conn = newScripted(t, func(in []byte, send func(string)) {
		if methodOf(in) == "initialize" {
			send(`{"jsonrpc":"2.0","id":` + idOf(in) + `,` + initReply(LatestVersion))
			return
		}
		if methodOf(in) == "tools/call" {
			conn.Close()
		}
	})
	c, err := Connect(context.Background(), conn, ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.CallTool(context.Background(), "x", nil, nil)
	if !errors.Is(err, io.EOF) && !errors.Is(err, ErrClosed) {
		t.Fatalf("got %v", err)
	}
}

func TestConcurrentCalls(t *testing.T) {
	c := connectPair(t, testServer(0), ClientOptions{})
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			msg := fmt.Sprint(i)
			res, err := c.CallTool(context.Background(), "echo", map[string]string{"message": msg}, nil)
			if err != nil {
				errs <- err
				return
			}
			if res.Content[0].Text != msg {
				errs <- fmt.Errorf("mismatched reply %q for %q", res.Content[0].Text, msg)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

func TestBusyWhenQueueFull(t *testing.T) {
	block := make(chan struct{})
	h := handlerFunc(func(ctx context.Context, method string, params json.RawMessage) (any, error) {
		<-block
		return struct{}{}, nil
	})
	_, client := peerPair(t, PeerOptions{Handler: h, MaxHandlers: 1, MaxQueue: 1}, PeerOptions{})
	errc := make(chan error, 3)
	for range 3 {
		go func() { _, err := client.CallRaw(context.Background(), "work", nil); errc <- err }()
	}
	err := <-errc
	var rerr *RPCError
	if !errors.As(err, &rerr) || rerr.Code != CodeBusy {
		t.Fatalf("third request: want busy, got %v", err)
	}
	close(block)
	for range 2 {
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	}
}

type handlerFunc func(ctx context.Context, method string, params json.RawMessage) (any, error)

func (f handlerFunc) HandleRequest(ctx context.Context, method string, params json.RawMessage) (any, error) {
	return f(ctx, method, params)
}
func (f handlerFunc) HandleNotification(context.Context, string, json.RawMessage) {}

func TestPaginationLoopDetected(t *testing.T) {
	conn := newScripted(t, func(in []byte, send func(string)) {
		switch methodOf(in) {
		case "initialize":
			send(`{"jsonrpc":"2.0","id":` + idOf(in) + `,` + initReply(LatestVersion))
		case "tools/list":
			send(`{"jsonrpc":"2.0","id":` + idOf(in) + `,"result":{"tools":[{"name":"a","inputSchema":{}}],"nextCursor":"same"}}`)
		}
	})
	c, err := Connect(context.Background(), conn, ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = c.ListTools(context.Background())
	if err == nil || !strings.Contains(err.Error(), "twice") {
		t.Fatalf("got %v", err)
	}
}

func TestTemplateMatching(t *testing.T) {
	cases := []struct {
		tmpl, uri string
		ok        bool
	}{
		{"file:///u/{id}.json", "file:///u/42.json", true},
		{"file:///u/{id}.json", "file:///u/.json", false},
		{"file:///u/{id}", "file:///u/7", true},
		{"file:///u/{id}", "file:///v/7", false},
		{"a/{x}/b/{y}", "a/1/b/2", true},
		{"a/{x}/b/{y}", "a/1/c/2", false},
	}
	for _, tc := range cases {
		if got := matchTemplate(tc.tmpl, tc.uri); got != tc.ok {
			t.Errorf("match(%q, %q) = %v", tc.tmpl, tc.uri, got)
		}
	}
	if v := TemplateVars("a/{x}/b/{y}", "a/1/b/2"); v["x"] != "1" || v["y"] != "2" {
		t.Fatal(v)
	}
}

func TestAppendString(t *testing.T) {
	for _, s := range []string{"tools/call", `a"b\c`, "\x00\n\x1f", "ünï"} {
		var got string
		if err := json.Unmarshal(wire.AppendString(nil, s), &got); err != nil || got != s {
			t.Fatalf("%q: %v %q", s, err, got)
		}
	}
}

// TestRawServesAsItCame: with ClientOptions.Raw, sampling and elicitation
// requests reach it as the server sent them (a field no type of this
// package knows included) and its result is sent as it is; the checks the
// typed path makes (an object, a declared mode) still refuse before it runs.
func TestRawServesAsItCame(t *testing.T) {
	var got []string
	c := &Client{opts: ClientOptions{
		Sampling: func(context.Context, *CreateMessageParams) (*CreateMessageResult, error) {
			return nil, errors.New("typed handler ran")
		},
		Elicitation: func(context.Context, *ElicitParams) (*ElicitResult, error) {
			return nil, errors.New("typed handler ran")
		},
		Raw: func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
			got = append(got, method+" "+string(params))
			return json.RawMessage(`{"action":"accept","x-later":1}`), nil
		},
	}}
	h := clientHandler{c}
	ctx := context.Background()
	for _, m := range []string{MethodElicitationCreate, MethodSamplingCreateMessage} {
		in := `{"message":"Name?", "x-new":{"a":[1,2]},"_meta":{"k":"v"}}`
		res, err := h.HandleRequest(ctx, m, json.RawMessage(in))
		raw, ok := res.(json.RawMessage)
		if err != nil || !ok || string(raw) != `{"action":"accept","x-later":1}` {
			t.Fatalf("%s: %v %#v", m, err, res)
		}
		if want := m + " " + in; got[len(got)-1] != want {
			t.Fatalf("Raw got %q, want %q", got[len(got)-1], want)
		}
	}
	for _, bad := range []struct{ method, params string }{
		{MethodElicitationCreate, `{"mode":"bogus","message":"x"}`},
		{MethodElicitationCreate, `{"mode":"url","url":"https://example.com","message":"x"}`}, // URL mode not declared
		{MethodElicitationCreate, `[1]`},
		{MethodSamplingCreateMessage, `"x"`},
	} {
		_, err := h.HandleRequest(ctx, bad.method, json.RawMessage(bad.params))
		var rerr *RPCError
		if !errors.As(err, &rerr) || rerr.Code != CodeInvalidParams {
			t.Fatalf("%s %s: want invalid params, got %v", bad.method, bad.params, err)
		}
	}
	if len(got) != 2 {
		t.Fatalf("Raw ran for refused requests: %q", got)
	}
}
