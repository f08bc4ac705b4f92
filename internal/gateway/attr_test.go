package gateway_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/audit"
	"github.com/nexus-mcp/nexus/internal/config"
	"github.com/nexus-mcp/nexus/internal/engine"
	httptransport "github.com/nexus-mcp/nexus/internal/transport/http"
	"github.com/nexus-mcp/nexus/internal/transport/httpserver"
)

// gater is a legacy-only upstream whose tool "gate" waits until the test
// opens its key's gate, then asks the client for an elicitation under
// that key (with "roots": true, for its roots; with "sample": true, a
// sampling of "Your KEY?"): two calls in flight at
// once ask when the test says.
type gater struct {
	started chan string              // the keys of the calls that reached the tool
	gates   map[string]chan struct{} // by key; closed: the call asks
}

func newGater(keys ...string) *gater {
	g := &gater{started: make(chan string, len(keys)), gates: map[string]chan struct{}{}}
	for _, k := range keys {
		g.gates[k] = make(chan struct{})
	}
	return g
}

func (g *gater) server() *mcp.Server {
	s := mcp.NewServer(mcp.Implementation{Name: "gater", Version: "1"}, mcp.ServerOptions{LegacyOnly: true})
	s.AddTool(mcp.Tool{Name: "gate"}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var args struct {
			Key    string
			Roots  bool
			Sample bool
		}
		json.Unmarshal(req.Arguments, &args)
		gate := g.gates[args.Key]
		if gate == nil {
			return nil, mcp.InvalidParams("no gate %q", args.Key)
		}
		g.started <- args.Key
		select {
		case <-gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if args.Roots {
			roots, err := req.Session.ListRoots(ctx)
			if err != nil {
				return nil, err
			}
			uris := make([]string, len(roots))
			for i, r := range roots {
				uris[i] = r.URI
			}
			return &mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent("roots: " + strings.Join(uris, " "))}}, nil
		}
		if args.Sample {
			content, _ := json.Marshal(mcp.TextContent("Your " + args.Key + "?"))
			r, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 10,
				Messages: []mcp.SamplingMessage{{Role: "user", Content: content}}})
			if err != nil {
				return nil, err
			}
			var c mcp.Content
			json.Unmarshal(r.Content, &c)
			return &mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent("sampled: " + c.Text)}}, nil
		}
		r, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "Your " + args.Key + "?",
			RequestedSchema: json.RawMessage(`{"type":"object","properties":{"v":{"type":"string"}}}`), Meta: keyMeta(args.Key)})
		text := ""
		if err != nil {
			text = "refused: " + err.Error()
		} else {
			text = "answered: " + r.Action + ":" + strings.Trim(string(mustJSON(r.Content["v"])), `"`)
		}
		return &mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent(text)}}, nil
	})
	return s
}

// gaterEnv is the env with the gater behind it as server "gater" (bare
// names): over streamable HTTP (in process, on loopback) if overHTTP, else
// over a pipe, which, as stdio, does not say which call a server's
// request came with. Its audit log is aw's, at path.
func gaterEnv(t *testing.T, g *gater, overHTTP bool) (e *env, aw *audit.Writer, path string) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "audit.jsonl")
	aw, err := audit.Open(audit.Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { aw.Close() })
	var upSrv *httptest.Server // made below: its cleanup runs before the env's
	e = newEnvOpts(t, func(c *config.Config) {
		c.Servers = append(c.Servers, &config.Server{Name: "gater", Type: config.TypeStdio, Command: []string{"gater"}, Enabled: true, Prefix: ptr("")})
	}, func(o *engine.Options) {
		o.Audit = aw
		prev := o.Transport
		o.Transport = func(ctx context.Context, srv *config.Server) (mcp.Conn, error) {
			switch {
			case srv.Command[0] != "gater":
				return prev(ctx, srv)
			case overHTTP:
				return httptransport.Dial(ctx, httptransport.Config{Server: srv.Name, URL: upSrv.URL + "/mcp",
					Options: httptransport.Options{AllowPrivateNetworks: true}})
			}
			client, server := mcp.Pipe()
			go g.server().Serve(context.Background(), server)
			return client, nil
		}
	})
	if overHTTP {
		up := httpserver.New(func(ctx context.Context, conn mcp.Conn, _ *httpserver.Session) error {
			return g.server().Serve(ctx, conn)
		}, httpserver.Options{})
		upSrv = httptest.NewServer(up)
		t.Cleanup(func() {
			up.Close()
			upSrv.CloseClientConnections()
			upSrv.Close()
		})
	}
	return e, aw, path
}

// outcome is what a call got.
type outcome struct {
	raw json.RawMessage
	err error
}

// A legacy session's call and a modern agent's call of the same agent
// are in flight at once on the agent's shared connection to a legacy
// server. What the server asks during the legacy call never reaches the
// modern agent: over streamable HTTP it is that call's (the client
// declared no elicitation: refused, saying why), over stdio it cannot be
// told from the modern call's and is refused, saying so. The modern
// call's own question is still the modern agent's round. The audit
// records of the questions name their calls' sessions, and the modern
// one its call.
func TestBridgeLegacyCallBeside(t *testing.T) {
	for _, c := range []struct {
		name     string
		overHTTP bool
		refusal  string // in the legacy call's refused question
	}{
		{"http", true, "no call of agent"},
		{"stdio", false, "does not say which call"},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := newGater("modern", "legacy")
			e, aw, path := gaterEnv(t, g, c.overHTTP)
			ctx := ctxT(t)
			m := e.modern(t, "claude")
			m.caps = elicitCaps()
			// The legacy client declares no elicitation: its session
			// shares the agent's connections with the modern agent.
			legacy := e.connect("claude", mcp.ClientOptions{})
			modern := make(chan outcome, 1)
			call := map[string]any{"name": "gate", "arguments": map[string]any{"key": "modern"}}
			go func() {
				raw, err := m.call(ctx, mcp.MethodToolsCall, call)
				modern <- outcome{raw, err}
			}()
			if k := recv(t, g.started); k != "modern" {
				t.Fatalf("%s started first", k)
			}
			legacyDone := make(chan outcome, 1)
			go func() {
				res, err := legacy.CallTool(ctx, "gate", map[string]any{"key": "legacy"}, nil)
				legacyDone <- outcome{mustJSON(res), err}
			}()
			if k := recv(t, g.started); k != "legacy" {
				t.Fatalf("%s started second", k)
			}
			var r mcp.InputRequiredResult
			if c.overHTTP {
				// The modern call asks first: its round, while the
				// legacy call is still in flight.
				close(g.gates["modern"])
				r = roundOf(t, recv(t, modern), "modern")
			}
			close(g.gates["legacy"])
			var got outcome
			select {
			case got = <-legacyDone:
			case o := <-modern:
				t.Fatalf("the modern agent got what the legacy call's server asked: %s %v", o.raw, o.err)
			case <-ctx.Done():
				t.Fatal("the legacy call did not end")
			}
			var res mcp.CallToolResult
			if err := json.Unmarshal(got.raw, &res); got.err != nil || err != nil || len(res.Content) != 1 ||
				!strings.Contains(res.Content[0].Text, "refused: ") || !strings.Contains(res.Content[0].Text, c.refusal) {
				t.Fatalf("the legacy call's question: want it refused (%q), got %s %v", c.refusal, got.raw, got.err)
			}
			if !c.overHTTP {
				// Only the modern call in flight now: its question is its.
				close(g.gates["modern"])
				r = roundOf(t, recv(t, modern), "modern")
			}
			// The retry answers the modern call's own question and the
			// call completes: no round more (the legacy call's question
			// is in none).
			call["inputResponses"], call["requestState"] = map[string]json.RawMessage{"modern": accept("m")}, r.RequestState
			raw, err := m.call(ctx, mcp.MethodToolsCall, call)
			if err != nil {
				t.Fatal(err)
			}
			json.Unmarshal(raw, &res)
			if string(fields(t, raw)["resultType"]) != `"complete"` || len(res.Content) != 1 || res.Content[0].Text != "answered: accept:m" {
				t.Fatalf("the modern call's result: %s", raw)
			}
			checkQuestionRecords(t, ctx, aw, path, c.overHTTP)
		})
	}
}

// checkQuestionRecords reads the audit log: the modern call's question
// is recorded under its call and session; the legacy call's, over HTTP,
// under the legacy session (it has no call id), and over stdio under
// none (it could not be tied to a call).
func checkQuestionRecords(t *testing.T, ctx context.Context, aw *audit.Writer, path string, overHTTP bool) {
	t.Helper()
	// The records are written as the requests end; the last one's may
	// still be on its way.
	var calls, asks []audit.Record
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if err := aw.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(path)
		calls, asks = nil, nil
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var rec audit.Record
			json.Unmarshal([]byte(line), &rec)
			switch rec.Method {
			case mcp.MethodToolsCall:
				calls = append(calls, rec)
			case mcp.MethodElicitationCreate:
				asks = append(asks, rec)
			}
		}
		if len(calls) == 2 && len(asks) == 2 || time.Now().After(deadline) {
			break
		}
	}
	if len(calls) != 2 || len(asks) != 2 {
		t.Fatalf("%d tools/call and %d elicitation records, want 2 and 2", len(calls), len(asks))
	}
	var mod, leg audit.Record // the calls'
	for _, rec := range calls {
		if rec.Call != "" {
			mod = rec
		} else {
			leg = rec
		}
	}
	if mod.Call == "" || mod.Session == "" || leg.Session == "" || mod.Session == leg.Session {
		t.Fatalf("the calls' records: %+v and %+v", mod, leg)
	}
	for _, rec := range asks {
		switch {
		case rec.Call == mod.Call:
			if rec.Session != mod.Session {
				t.Errorf("the modern call's question is recorded under session %q, the call's is %q", rec.Session, mod.Session)
			}
		case rec.Call != "":
			t.Errorf("a question is recorded under call %q, not the modern one's %q", rec.Call, mod.Call)
		case overHTTP && rec.Session != leg.Session:
			t.Errorf("the legacy call's question is recorded under session %q, the call's is %q", rec.Session, leg.Session)
		case !overHTTP && rec.Session != "":
			t.Errorf("a question no call could be tied to is recorded under session %q", rec.Session)
		}
	}
}

// recv is the next value of ch, or a failure once the test's wait is up.
func recv[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(30 * time.Second):
		t.Fatal("nothing came")
	}
	var zero T
	return zero
}

// roundOf is o as an input_required round that asks key alone.
func roundOf(t *testing.T, o outcome, key string) mcp.InputRequiredResult {
	t.Helper()
	var r mcp.InputRequiredResult
	if o.err != nil || json.Unmarshal(o.raw, &r) != nil || r.ResultType != mcp.ResultInputRequired || r.RequestState == "" {
		t.Fatalf("want an input_required round, got %s %v", o.raw, o.err)
	}
	if _, ok := r.InputRequests[key]; !ok || len(r.InputRequests) != 1 {
		t.Fatalf("the round asks %v, want %q alone", r.InputRequests, key)
	}
	return r
}

// Over stdio, a modern call's own question while a legacy session's call
// to the same server is in flight cannot be told from that call's: it
// is refused too, saying why, and the modern agent gets no round of it
// (the server then answers as it will: here, with the refusal). Once
// only the legacy call is in flight, its question is outside any modern
// call.
func TestBridgeAmbiguousStdio(t *testing.T) {
	g := newGater("modern", "legacy")
	e, _, _ := gaterEnv(t, g, false)
	ctx := ctxT(t)
	m := e.modern(t, "claude")
	m.caps = elicitCaps()
	legacy := e.connect("claude", mcp.ClientOptions{})
	modern := make(chan outcome, 1)
	go func() {
		raw, err := m.call(ctx, mcp.MethodToolsCall, map[string]any{"name": "gate", "arguments": map[string]any{"key": "modern"}})
		modern <- outcome{raw, err}
	}()
	recv(t, g.started)
	legacyDone := make(chan outcome, 1)
	go func() {
		res, err := legacy.CallTool(ctx, "gate", map[string]any{"key": "legacy"}, nil)
		legacyDone <- outcome{mustJSON(res), err}
	}()
	recv(t, g.started)
	close(g.gates["modern"])
	o := recv(t, modern)
	var res mcp.CallToolResult
	if err := json.Unmarshal(o.raw, &res); o.err != nil || err != nil || string(fields(t, o.raw)["resultType"]) != `"complete"` || len(res.Content) != 1 ||
		!strings.Contains(res.Content[0].Text, "refused: ") || !strings.Contains(res.Content[0].Text, "does not say which call") {
		t.Fatalf("the modern call's question: want it refused as ambiguous, got %s %v", o.raw, o.err)
	}
	close(g.gates["legacy"])
	o = recv(t, legacyDone)
	if err := json.Unmarshal(o.raw, &res); o.err != nil || err != nil || len(res.Content) != 1 || !strings.Contains(res.Content[0].Text, "no call of agent") {
		t.Fatalf("the legacy call's question: want it refused as outside any call, got %s %v", o.raw, o.err)
	}
}
