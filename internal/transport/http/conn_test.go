package httptransport

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/testserver"
)

func TestRoundTrip(t *testing.T) {
	e := newEnv(t)
	_, url := e.testServer(nil)
	var mu sync.Mutex
	var logs []mcp.LogMessage
	c, conn := e.connect(e.config(url), mcp.ClientOptions{OnLog: func(m mcp.LogMessage) {
		mu.Lock()
		logs = append(logs, m)
		mu.Unlock()
	}})
	if c.ServerInfo().Name != testserver.Name {
		t.Errorf("server info %+v", c.ServerInfo())
	}
	if conn.SessionID() == "" || conn.ProtocolVersion() != mcp.LatestVersion || conn.Legacy() {
		t.Errorf("session %q version %q legacy %v", conn.SessionID(), conn.ProtocolVersion(), conn.Legacy())
	}
	ctx := testCtx(t)
	tools, err := c.ListTools(ctx)
	if err != nil || len(tools) < 10 {
		t.Fatalf("tools: %d, %v", len(tools), err)
	}
	if got := call(t, c, "add", map[string]any{"a": 2, "b": 3}); got != "5" {
		t.Errorf("add = %q", got)
	}
	// echo logs before it answers, so its reply is an SSE stream.
	if got := call(t, c, "echo", map[string]any{"message": "hi"}); got != "hi" {
		t.Errorf("echo = %q", got)
	}
	mu.Lock()
	if len(logs) != 1 || string(logs[0].Data) != `"hi"` {
		t.Errorf("log notifications: %+v", logs)
	}
	mu.Unlock()
	res, err := c.ReadResource(ctx, "file:///readme.txt")
	if err != nil || len(res.Contents) != 1 {
		t.Fatalf("read: %+v %v", res, err)
	}
	if _, err := c.GetPrompt(ctx, "greeting", map[string]string{"name": "Ada"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	// A tool error is a result, not a transport failure.
	r, err := c.CallTool(ctx, "fail", nil, nil)
	if err != nil || !r.IsError {
		t.Fatalf("fail: %+v %v", r, err)
	}
}

func TestProgressOverSSE(t *testing.T) {
	e := newEnv(t)
	_, url := e.testServer(nil)
	c, _ := e.connect(e.config(url), mcp.ClientOptions{})
	var n atomic.Int32
	res, err := c.CallTool(testCtx(t), "slow_operation", map[string]any{"duration": 0.1, "steps": 4},
		&mcp.CallOptions{OnProgress: func(mcp.Progress) { n.Add(1) }})
	if err != nil || res.IsError {
		t.Fatalf("slow_operation: %+v %v", res, err)
	}
	if n.Load() != 4 {
		t.Errorf("got %d progress notifications, want 4", n.Load())
	}
}

func TestServerRequestsFromTools(t *testing.T) {
	e := newEnv(t)
	_, url := e.testServer(nil)
	c, _ := e.connect(e.config(url), mcp.ClientOptions{
		Sampling: func(ctx context.Context, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Role: "assistant", Content: json.RawMessage(`{"type":"text","text":"sampled"}`), Model: "test"}, nil
		},
		Elicitation: func(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
		},
		Roots: func(ctx context.Context) ([]mcp.Root, error) {
			return []mcp.Root{{URI: "file:///work", Name: "work"}}, nil
		},
	})
	if got := call(t, c, "sample", map[string]any{"prompt": "hello"}); got != "sampled" {
		t.Errorf("sample = %q", got)
	}
	if got := call(t, c, "elicit", nil); !strings.Contains(got, "accept") || !strings.Contains(got, "Ada") {
		t.Errorf("elicit = %q", got)
	}
	if got := call(t, c, "roots", nil); got != "file:///work (work)" {
		t.Errorf("roots = %q", got)
	}
}

func TestStandaloneStream(t *testing.T) {
	e := newEnv(t)
	h, url := e.testServer(nil)
	updated := make(chan string, 4)
	changed := make(chan string, 4)
	c, _ := e.connect(e.config(url), mcp.ClientOptions{
		OnResourceUpdated: func(uri string) { updated <- uri },
		OnListChanged:     func(kind string) { changed <- kind },
	})
	ctx := testCtx(t)
	if err := c.Subscribe(ctx, "file:///readme.txt"); err != nil {
		t.Fatal(err)
	}
	h.Server().ResourceUpdated(ctx, "file:///readme.txt")
	select {
	case uri := <-updated:
		if uri != "file:///readme.txt" {
			t.Errorf("updated %q", uri)
		}
	case <-ctx.Done():
		t.Fatal("no resources/updated")
	}
	h.Server().AddTool(mcp.Tool{Name: "late"}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent("late")}}, nil
	})
	select {
	case kind := <-changed:
		if kind != "tools" {
			t.Errorf("list_changed %q", kind)
		}
	case <-ctx.Done():
		t.Fatal("no list_changed")
	}
	tools, _ := c.Tools(ctx)
	if !slices.ContainsFunc(tools, func(t mcp.Tool) bool { return t.Name == "late" }) {
		t.Error("refreshed list lacks the new tool")
	}
}

// recorder is a middleware that records the requests a server got.
type recorder struct {
	mu   sync.Mutex
	reqs []recorded
}

type recorded struct {
	method string
	header http.Header
	body   string
}

func (rec *recorder) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body []byte
		if r.Body != nil {
			body, _ = readAllLimit(r, 1<<20)
		}
		rec.mu.Lock()
		rec.reqs = append(rec.reqs, recorded{r.Method, r.Header.Clone(), string(body)})
		rec.mu.Unlock()
		next.ServeHTTP(w, r)
	})
}

func (rec *recorder) all() []recorded {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return slices.Clone(rec.reqs)
}

func TestHeadersAndDelete(t *testing.T) {
	e := newEnv(t)
	rec := &recorder{}
	_, url := e.testServer(rec.wrap)
	cfg := e.config(url)
	cfg.Headers = map[string]string{"X-Api-Key": "s3cret"}
	c, conn := e.connect(cfg, legacyOnly)
	sid := conn.SessionID()
	call(t, c, "add", map[string]any{"a": 1, "b": 1})
	waitFor(t, "the GET stream", func() bool {
		return slices.ContainsFunc(rec.all(), func(r recorded) bool { return r.method == "GET" })
	})
	c.Close()
	reqs := rec.all()
	if len(reqs) < 4 {
		t.Fatalf("only %d requests", len(reqs))
	}
	init := reqs[0]
	if init.method != "POST" || !strings.Contains(init.body, `"initialize"`) {
		t.Fatalf("first request %+v", init)
	}
	if init.header.Get("Mcp-Session-Id") != "" || init.header.Get("Mcp-Protocol-Version") != "" {
		t.Errorf("initialize carried session headers: %v", init.header)
	}
	sawGet, sawDelete := false, false
	for i, r := range reqs {
		if r.header.Get("X-Api-Key") != "s3cret" {
			t.Errorf("request %d lacks the configured header", i)
		}
		switch r.method {
		case "POST":
			if r.header.Get("Accept") != "application/json, text/event-stream" || r.header.Get("Content-Type") != "application/json" {
				t.Errorf("POST %d headers %v", i, r.header)
			}
		case "GET":
			sawGet = true
			if r.header.Get("Accept") != "text/event-stream" {
				t.Errorf("GET accept %q", r.header.Get("Accept"))
			}
		case "DELETE":
			sawDelete = true
		}
		if i > 0 {
			if r.header.Get("Mcp-Session-Id") != sid || r.header.Get("Mcp-Protocol-Version") != mcp.LatestVersion {
				t.Errorf("request %d (%s): session %q version %q", i, r.method, r.header.Get("Mcp-Session-Id"), r.header.Get("Mcp-Protocol-Version"))
			}
		}
	}
	if !sawGet || !sawDelete {
		t.Errorf("GET stream opened: %v, DELETE on close: %v", sawGet, sawDelete)
	}
	if strings.Contains(e.logs.String(), "s3cret") {
		t.Error("a header value reached the log")
	}
}

// expirer answers 404 to the current session once armed, as a server that
// dropped it would.
type expirer struct {
	mu    sync.Mutex
	armed bool
	dead  map[string]bool
	inits int
}

func (x *expirer) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sid := r.Header.Get("Mcp-Session-Id")
		x.mu.Lock()
		if x.dead == nil {
			x.dead = map[string]bool{}
		}
		if x.armed && sid != "" {
			x.dead[sid] = true
			x.armed = false
		}
		dead := x.dead[sid]
		if sid == "" && r.Method == "POST" {
			x.inits++
		}
		x.mu.Unlock()
		if dead {
			http.Error(w, "session expired", http.StatusNotFound)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (x *expirer) arm() {
	x.mu.Lock()
	x.armed = true
	x.mu.Unlock()
}

func TestSessionExpired(t *testing.T) {
	e := newEnv(t)
	x := &expirer{}
	_, url := e.testServer(x.wrap)
	c, _ := e.connect(e.config(url), mcp.ClientOptions{})
	call(t, c, "add", map[string]any{"a": 1, "b": 1})
	x.arm()
	_, err := c.CallTool(testCtx(t), "add", map[string]any{"a": 1, "b": 1}, nil)
	if err == nil {
		t.Fatal("call on an expired session succeeded")
	}
	se := wantErrAs[*SessionExpiredError](t, err)
	wantContains(t, se.Error(), `server "test"`, url, "expired")
	<-c.Done()
}

func TestReinitialize(t *testing.T) {
	e := newEnv(t)
	x := &expirer{}
	_, url := e.testServer(x.wrap)
	cfg := e.config(url)
	cfg.Reinitialize = true
	c, conn := e.connect(cfg, legacyOnly)
	first := conn.SessionID()
	call(t, c, "add", map[string]any{"a": 1, "b": 1})
	x.arm()
	if got := call(t, c, "add", map[string]any{"a": 2, "b": 2}); got != "4" {
		t.Errorf("add after re-initialize = %q", got)
	}
	if conn.SessionID() == first || conn.SessionID() == "" {
		t.Errorf("session id %q after re-initialize (was %q)", conn.SessionID(), first)
	}
	x.mu.Lock()
	inits := x.inits
	x.mu.Unlock()
	if inits != 2 {
		t.Errorf("%d initialize requests, want 2", inits)
	}
	// Only once: the next expiry ends the session.
	x.arm()
	_, err := c.CallTool(testCtx(t), "add", map[string]any{"a": 1, "b": 1}, nil)
	se := wantErrAs[*SessionExpiredError](t, err)
	_ = se
}

func TestResumeWithPolling(t *testing.T) {
	e := newEnv(t)
	rec := &recorder{}
	// The server closes every SSE connection after one event (SEP-1699).
	h, url := e.testServer(rec.wrap, testserver.WithPolling(1, 5*time.Millisecond))
	changed := make(chan string, 8)
	c, _ := e.connect(e.config(url), mcp.ClientOptions{OnListChanged: func(kind string) { changed <- kind }})
	var n atomic.Int32
	res, err := c.CallTool(testCtx(t), "slow_operation", map[string]any{"duration": 0.1, "steps": 3},
		&mcp.CallOptions{OnProgress: func(mcp.Progress) { n.Add(1) }})
	if err != nil || res.IsError {
		t.Fatalf("slow_operation: %+v %v", res, err)
	}
	if n.Load() != 3 {
		t.Errorf("%d progress notifications, want 3", n.Load())
	}
	resumes := 0
	for _, r := range rec.all() {
		if r.method == "GET" && strings.HasPrefix(r.header.Get("Last-Event-Id"), "p") {
			resumes++
		}
	}
	if resumes < 3 {
		t.Errorf("%d resumptions of the POST stream, want at least 3", resumes)
	}
	// The standalone stream is polled too and loses nothing.
	for i := range 3 {
		h.Server().AddPrompt(mcp.Prompt{Name: "p" + string(rune('a'+i))}, nil)
	}
	deadline := time.After(10 * time.Second)
	for got := 0; got < 1; {
		select {
		case <-changed:
			got++
		case <-deadline:
			t.Fatal("no list_changed over the polled GET stream")
		}
	}
}

func TestCloseEndsEverything(t *testing.T) {
	e := newEnv(t)
	rec := &recorder{}
	_, url := e.testServer(rec.wrap)
	c, conn := e.connect(e.config(url), mcp.ClientOptions{})
	errc := make(chan error, 1)
	go func() {
		_, err := c.CallTool(context.Background(), "slow_operation", map[string]any{"duration": 30, "steps": 30},
			&mcp.CallOptions{OnProgress: func(mcp.Progress) {}})
		errc <- err
	}()
	waitFor(t, "the call and the GET stream", func() bool {
		var post, get bool
		for _, r := range rec.all() {
			post = post || strings.Contains(r.body, "slow_operation")
			get = get || r.method == "GET"
		}
		return post && get
	})
	start := time.Now()
	c.Close()
	if err := <-errc; err == nil {
		t.Error("the call survived Close")
	}
	if d := time.Since(start); d > 10*time.Second { // the call alone would last 30 s
		t.Errorf("Close took %s", d)
	}
	if err := conn.WriteMessage(context.Background(), []byte(`{"jsonrpc":"2.0","method":"x"}`)); err != mcp.ErrClosed {
		t.Errorf("write after close: %v", err)
	}
	if _, err := conn.ReadMessage(); err != mcp.ErrClosed {
		t.Errorf("read after close: %v", err)
	}
	// checkNoLeak (from newEnv) verifies that no goroutine outlives this.
}

func TestUnauthorizedIsFatalAndRedacted(t *testing.T) {
	e := newEnv(t)
	url := e.serve(fakeMCP(func(w http.ResponseWriter, r *http.Request, id json.RawMessage, method string) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="mcp"`)
		http.Error(w, "token "+r.Header.Get("Authorization")+" rejected", http.StatusUnauthorized)
	}))
	cfg := e.config(url + "/mcp?api_key=k3y")
	cfg.Headers = map[string]string{"Authorization": "Bearer s3cret-t0ken"}
	cl, _ := e.connect(cfg, mcp.ClientOptions{})
	_, err := cl.CallTool(testCtx(t), "x", nil, nil)
	se := wantErrAs[*HTTPStatusError](t, err)
	if se.Status != 401 || se.Header.Get("WWW-Authenticate") == "" {
		t.Errorf("%+v", se)
	}
	<-cl.Done()
	wantContains(t, se.Error(), `server "test"`, "HTTP 401", "credentials", "api_key=***")
	// The server echoed the token into its body; that is the server's
	// doing, but neither the URL key nor our log may carry secrets.
	if strings.Contains(se.URL, "k3y") || strings.Contains(e.logs.String(), "s3cret") || strings.Contains(e.logs.String(), "k3y") {
		t.Errorf("secret leaked: %s\n%s", se.Error(), e.logs.String())
	}
}

func TestPerRequestHTTPError(t *testing.T) {
	e := newEnv(t)
	url := e.serve(fakeMCP(func(w http.ResponseWriter, r *http.Request, id json.RawMessage, method string) {
		if method == "tools/list" {
			http.Error(w, "tool index unavailable", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		writeResult(w, id)
	}))
	cl, _ := e.connect(e.config(url), mcp.ClientOptions{})
	_, err := cl.ListTools(testCtx(t))
	rpc := wantErrAs[*mcp.RPCError](t, err)
	wantContains(t, rpc.Message, "HTTP 500", "tool index unavailable")
	wantContains(t, string(rpc.Data), `"status":500`)
	if res, err := cl.CallTool(testCtx(t), "x", nil, nil); err != nil || res.Content[0].Text != "ok" {
		t.Fatalf("the session did not survive: %+v %v", res, err)
	}
	// fakeMCP answers GET with 405: no standalone stream, and no fuss.
	if strings.Contains(e.logs.String(), "[WARN]") {
		t.Errorf("warnings logged:\n%s", e.logs.String())
	}
}

// TestCredentialsInURL: a user and password in the URL are sent as basic
// authorization with every request (as an http.Client would), never as
// part of the request line, and stay out of the logs.
func TestCredentialsInURL(t *testing.T) {
	e := newEnv(t)
	var mu sync.Mutex
	var bad []string
	_, url := e.testServer(func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if u, p, ok := r.BasicAuth(); !ok || u != "ada" || p != "s3cret" || strings.Contains(r.RequestURI, "s3cret") {
				mu.Lock()
				bad = append(bad, r.Method+" "+r.RequestURI)
				mu.Unlock()
			}
			h.ServeHTTP(w, r)
		})
	})
	url = strings.Replace(url, "http://", "http://ada:s3cret@", 1)
	c, conn := e.connect(e.config(url), mcp.ClientOptions{})
	if got := call(t, c, "add", map[string]any{"a": 1, "b": 1}); got != "2" {
		t.Fatalf("add = %q", got)
	}
	c.Close()
	conn.Close()
	mu.Lock()
	defer mu.Unlock()
	if len(bad) != 0 {
		t.Errorf("requests without the URL's credentials: %v", bad)
	}
	if strings.Contains(e.logs.String(), "s3cret") {
		t.Errorf("the password is in the log:\n%s", e.logs.String())
	}
}
