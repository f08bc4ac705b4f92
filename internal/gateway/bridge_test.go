package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/audit"
	"github.com/nexus-mcp/nexus/internal/config"
	"github.com/nexus-mcp/nexus/internal/engine"
	"github.com/nexus-mcp/nexus/internal/gateway"
	"github.com/nexus-mcp/nexus/internal/testenv"
	"github.com/nexus-mcp/nexus/internal/transport/stdio"
)

// asker is a legacy-only upstream (MCP 2025-11-25) whose tools ask the
// client mid-call, counting what reaches it.
type asker struct {
	dials     atomic.Int64 // connections made to it
	calls     atomic.Int64 // tool calls started
	answers   atomic.Int64 // answers the client gave it
	cancelled chan struct{}
	outside   chan error // what a request outside any call got
	roots     chan []mcp.Root
	release   chan struct{} // lets later's questions go, once its call has ended
	errs      chan error    // what ask's question got instead of an answer
	args      atomic.Value  // the arguments of the last call of twice (string)
}

func newAsker() *asker {
	return &asker{cancelled: make(chan struct{}, 8), outside: make(chan error, 8), roots: make(chan []mcp.Root, 8), release: make(chan struct{}, 8), errs: make(chan error, 8)}
}

func keyMeta(key string) mcp.Meta {
	raw, _ := json.Marshal(key)
	return mcp.Meta{mcp.MetaInputKey: raw}
}

func (a *asker) elicit(ctx context.Context, ss *mcp.ServerSession, key string) (string, error) {
	r, err := ss.Elicit(ctx, &mcp.ElicitParams{Message: "Your " + key + "?", RequestedSchema: json.RawMessage(`{"type":"object","properties":{"v":{"type":"string"}}}`), Meta: keyMeta(key)})
	if err != nil {
		return "", err
	}
	a.answers.Add(1)
	return r.Action + ":" + strings.Trim(string(mustJSON(r.Content["v"])), `"`), nil
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

func (a *asker) server() *mcp.Server { return a.serverWith(mcp.ServerOptions{LegacyOnly: true}) }

// serverWith is the asker serving as o says: mcp.ServerOptions{ModernOnly:
// true} asks through input_required rounds, running the tool again on
// each retry.
func (a *asker) serverWith(o mcp.ServerOptions) *mcp.Server {
	s := mcp.NewServer(mcp.Implementation{Name: "asker", Version: "1"}, o)
	text := func(s string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent(s)}}
	}
	s.AddTool(mcp.Tool{Name: "ask"}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		a.calls.Add(1)
		v, err := a.elicit(ctx, req.Session, "name")
		if err != nil {
			select {
			case a.errs <- err:
			default:
			}
			// The gateway ended the call: the cancellation follows.
			select {
			case <-ctx.Done():
				a.cancelled <- struct{}{}
			case <-time.After(10 * time.Second):
			}
			return nil, err
		}
		return text("hello " + v), nil
	})
	// A prompt and a resource that ask first (on a modern request: an
	// input_required round each).
	s.AddPrompt(mcp.Prompt{Name: "greet", Arguments: []mcp.PromptArgument{{Name: "who"}}}, func(ctx context.Context, ss *mcp.ServerSession, args map[string]string) (*mcp.GetPromptResult, error) {
		v, err := a.elicit(ctx, ss, "name")
		if err != nil {
			return nil, err
		}
		return &mcp.GetPromptResult{Messages: []mcp.PromptMessage{{Role: "user", Content: mcp.TextContent("greet " + args["who"] + " from " + v)}}}, nil
	})
	s.AddResource(mcp.Resource{URI: "ask://name", Name: "name"}, func(ctx context.Context, ss *mcp.ServerSession, uri string) (*mcp.ReadResourceResult, error) {
		v, err := a.elicit(ctx, ss, "name")
		if err != nil {
			return nil, err
		}
		return &mcp.ReadResourceResult{Contents: []mcp.ResourceContents{{URI: uri, Text: "read by " + v}}}, nil
	})
	// report asks, then tells its progress and logs: on the retry's
	// stream, with the retry's token.
	s.AddTool(mcp.Tool{Name: "report"}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		a.calls.Add(1)
		v, err := a.elicit(ctx, req.Session, "name")
		if err != nil {
			return nil, err
		}
		if err := req.Progress(ctx, 1, 2, "told "+v); err != nil {
			return nil, err
		}
		if err := req.Session.Log(ctx, "info", "report", "told "+v); err != nil {
			return nil, err
		}
		return text("reported " + v), nil
	})
	s.AddTool(mcp.Tool{Name: "plain"}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return text("plain"), nil
	})
	s.AddTool(mcp.Tool{Name: "twice"}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		a.calls.Add(1)
		a.args.Store(string(req.Arguments))
		first, err := a.elicit(ctx, req.Session, "first")
		if err != nil {
			return nil, err
		}
		second, err := a.elicit(ctx, req.Session, "second")
		if err != nil {
			return nil, err
		}
		return text(first + " " + second), nil
	})
	s.AddTool(mcp.Tool{Name: "roots"}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		a.calls.Add(1)
		roots, err := req.Session.ListRoots(ctx)
		if err != nil {
			return nil, err
		}
		uris := []string{}
		for _, r := range roots {
			uris = append(uris, r.URI)
		}
		return text(strings.Join(uris, ",")), nil
	})
	// both asks two questions at once, from two goroutines; straggle
	// asks its second only once the test releases it.
	pair := func(ctx context.Context, req *mcp.CallToolRequest, first, second string, hold bool) (*mcp.CallToolResult, error) {
		a.calls.Add(1)
		var x, y string
		var ex, ey error
		done := make(chan struct{})
		go func() {
			defer close(done)
			if hold {
				select {
				case <-a.release:
				case <-ctx.Done():
					ey = ctx.Err()
					return
				}
			}
			y, ey = a.elicit(ctx, req.Session, second)
		}()
		x, ex = a.elicit(ctx, req.Session, first)
		<-done
		if err := errors.Join(ex, ey); err != nil {
			return nil, err
		}
		return text(x + " " + y), nil
	}
	s.AddTool(mcp.Tool{Name: "both"}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if strings.Contains(string(req.Arguments), `"one"`) {
			a.calls.Add(1)
			v, err := a.elicit(ctx, req.Session, "a")
			if err != nil {
				return nil, err
			}
			return text(v), nil
		}
		return pair(ctx, req, "a", "b", false)
	})
	s.AddTool(mcp.Tool{Name: "straggle"}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return pair(ctx, req, "first", "second", true)
	})
	// later asks after its call has ended: nobody is there to answer.
	s.AddTool(mcp.Tool{Name: "later"}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			select {
			case <-a.release:
			case <-ctx.Done():
				return
			}
			roots, err := req.Session.ListRoots(ctx)
			if err == nil {
				a.roots <- roots
			}
			_, err = req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 5, Messages: []mcp.SamplingMessage{{Role: "user", Content: json.RawMessage(`{"type":"text","text":"hi"}`)}}})
			a.outside <- err
		}()
		return text("later"), nil
	})
	return s
}

// bridgeEnv is the env with the asker behind it (server "asker", bare
// names) and a second agent, "other".
func bridgeEnv(t testing.TB, a *asker, edit func(*config.Config), opts func(*engine.Options)) *env {
	t.Helper()
	return newEnvOpts(t, func(c *config.Config) {
		c.Servers = append(c.Servers, &config.Server{Name: "asker", Type: config.TypeStdio, Command: []string{"asker"}, Enabled: true, Prefix: ptr("")})
		c.Agents = append(c.Agents, &config.Agent{Name: "other", Permission: "yolo"})
		if edit != nil {
			edit(c)
		}
	}, func(o *engine.Options) {
		prev := o.Transport
		o.Transport = func(ctx context.Context, srv *config.Server) (mcp.Conn, error) {
			if srv.Command[0] != "asker" {
				return prev(ctx, srv)
			}
			a.dials.Add(1)
			client, server := mcp.Pipe()
			go a.server().Serve(context.Background(), server)
			return client, nil
		}
		if opts != nil {
			opts(o)
		}
	})
}

// inputRequired calls tools/call and decodes the input_required result
// it must get.
func (m *modernAgent) inputRequired(t *testing.T, ctx context.Context, p map[string]any) mcp.InputRequiredResult {
	t.Helper()
	raw, err := m.call(ctx, mcp.MethodToolsCall, p)
	if err != nil {
		t.Fatalf("want input_required, got %v", err)
	}
	var r mcp.InputRequiredResult
	if json.Unmarshal(raw, &r); r.ResultType != mcp.ResultInputRequired || r.RequestState == "" {
		t.Fatalf("want input_required with a requestState, got %s", raw)
	}
	return r
}

func accept(v string) json.RawMessage {
	return json.RawMessage(`{"action":"accept","content":{"v":"` + v + `"}}`)
}

func elicitCaps() mcp.ClientCapabilities {
	return mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapability{Form: &struct{}{}}}
}

// A legacy server's elicitation during a modern call is a round of
// input_required; the retry's answer reaches the waiting server request,
// and the call finishes: the tool ran once. A second question is a
// second round with a new state.
func TestBridgeRounds(t *testing.T) {
	a := newAsker()
	e := bridgeEnv(t, a, nil, nil)
	m := e.modern(t, "claude")
	m.caps = elicitCaps()
	ctx := ctxT(t)
	r := m.inputRequired(t, ctx, map[string]any{"name": "twice", "arguments": map[string]any{}})
	if q, ok := r.InputRequests["first"]; !ok || q.Method != mcp.MethodElicitationCreate || len(r.InputRequests) != 1 {
		t.Fatalf("round 1: %+v", r)
	}
	r2 := m.inputRequired(t, ctx, map[string]any{"name": "twice", "arguments": map[string]any{},
		"inputResponses": map[string]json.RawMessage{"first": accept("a")}, "requestState": r.RequestState})
	if _, ok := r2.InputRequests["second"]; !ok || r2.RequestState == r.RequestState {
		t.Fatalf("round 2: %+v", r2)
	}
	raw, err := m.call(ctx, mcp.MethodToolsCall, map[string]any{"name": "twice", "arguments": map[string]any{},
		"inputResponses": map[string]json.RawMessage{"second": accept("b")}, "requestState": r2.RequestState})
	if err != nil {
		t.Fatal(err)
	}
	var res mcp.CallToolResult
	json.Unmarshal(raw, &res)
	if string(fields(t, raw)["resultType"]) != `"complete"` || len(res.Content) != 1 || res.Content[0].Text != "accept:a accept:b" {
		t.Errorf("the result: %s", raw)
	}
	if n := a.calls.Load(); n != 1 {
		t.Errorf("the tool ran %d times, want once", n)
	}
}

// Every bad requestState and every answer to a question never asked is
// refused with invalid params, and reaches no upstream: the server got
// no answer and no second call; the good retry afterwards still works.
func TestBridgeBadState(t *testing.T) {
	a := newAsker()
	e := bridgeEnv(t, a, nil, nil)
	m := e.modern(t, "claude")
	m.caps = elicitCaps()
	other := e.modern(t, "other")
	other.caps = elicitCaps()
	ctx := ctxT(t)
	args := map[string]any{"who": "me"}
	r := m.inputRequired(t, ctx, map[string]any{"name": "ask", "arguments": args})
	good := map[string]json.RawMessage{"name": accept("ann")}
	tampered := []byte(r.RequestState)
	tampered[len(tampered)-3] ^= 1
	cases := []struct {
		name  string
		agent *modernAgent
		p     map[string]any
		want  string
	}{
		{"tampered", m, map[string]any{"name": "ask", "arguments": args, "inputResponses": good, "requestState": string(tampered)}, "integrity"},
		{"truncated", m, map[string]any{"name": "ask", "arguments": args, "inputResponses": good, "requestState": r.RequestState[:20]}, "integrity"},
		{"another agent's", other, map[string]any{"name": "ask", "arguments": args, "inputResponses": good, "requestState": r.RequestState}, "another agent"},
		{"another tool", m, map[string]any{"name": "twice", "arguments": args, "inputResponses": good, "requestState": r.RequestState}, "another request"},
		{"other arguments", m, map[string]any{"name": "ask", "arguments": map[string]any{"who": "you"}, "inputResponses": good, "requestState": r.RequestState}, "other arguments"},
		{"never asked", m, map[string]any{"name": "ask", "arguments": args, "inputResponses": map[string]json.RawMessage{"name": accept("ann"), "bogus": accept("x")}, "requestState": r.RequestState}, "never asked"},
		{"not a result", m, map[string]any{"name": "ask", "arguments": args, "inputResponses": map[string]json.RawMessage{"name": json.RawMessage(`12`)}, "requestState": r.RequestState}, "not a elicitation/create result"},
	}
	for _, c := range cases {
		_, err := c.agent.call(ctx, mcp.MethodToolsCall, c.p)
		var rerr *mcp.RPCError
		if !errors.As(err, &rerr) || rerr.Code != mcp.CodeInvalidParams || !strings.Contains(rerr.Message, c.want) {
			t.Errorf("%s: %v (want -32602 saying %q)", c.name, err, c.want)
		}
	}
	if n, ans := a.calls.Load(), a.answers.Load(); n != 1 || ans != 0 {
		t.Fatalf("after the bad retries the server saw %d calls and %d answers, want 1 and 0", n, ans)
	}
	raw, err := m.call(ctx, mcp.MethodToolsCall, map[string]any{"name": "ask", "arguments": map[string]any{"who": "me"}, "inputResponses": good, "requestState": r.RequestState})
	if err != nil || !strings.Contains(string(raw), "hello accept:ann") {
		t.Fatalf("the good retry: %v %s", err, raw)
	}
	// Replayed: used once.
	_, err = m.call(ctx, mcp.MethodToolsCall, map[string]any{"name": "ask", "arguments": args, "inputResponses": good, "requestState": r.RequestState})
	var rerr *mcp.RPCError
	if !errors.As(err, &rerr) || rerr.Code != mcp.CodeInvalidParams || !strings.Contains(rerr.Message, "used already") {
		t.Errorf("a replay: %v", err)
	}
	if n, ans := a.calls.Load(), a.answers.Load(); n != 1 || ans != 1 {
		t.Errorf("the server saw %d calls and %d answers, want 1 and 1", n, ans)
	}
}

// A call whose retry does not come in time is cancelled upstream; its
// state is then refused as expired.
func TestBridgeExpiry(t *testing.T) {
	a := newAsker()
	e := bridgeEnv(t, a, nil, nil)
	g := gateway.New(e.h, gateway.Options{InputTTL: 50 * time.Millisecond})
	t.Cleanup(func() { g.Close() })
	m := e.modernOn(t, g, "claude")
	m.caps = elicitCaps()
	ctx := ctxT(t)
	r := m.inputRequired(t, ctx, map[string]any{"name": "ask", "arguments": map[string]any{}})
	select {
	case <-a.cancelled:
	case <-ctx.Done():
		t.Fatal("the expired call was not cancelled upstream")
	}
	_, err := m.call(ctx, mcp.MethodToolsCall, map[string]any{"name": "ask", "arguments": map[string]any{},
		"inputResponses": map[string]json.RawMessage{"name": accept("late")}, "requestState": r.RequestState})
	var rerr *mcp.RPCError
	if !errors.As(err, &rerr) || rerr.Code != mcp.CodeInvalidParams || !strings.Contains(rerr.Message, "expired") {
		t.Errorf("an expired state: %v", err)
	}
	if n := a.answers.Load(); n != 0 {
		t.Errorf("the server got %d answers", n)
	}
}

// A state another replica sealed (same key, other replica id) gets the
// retryable error: the call waits there, not here.
func TestBridgeOtherReplica(t *testing.T) {
	a := newAsker()
	e := bridgeEnv(t, a, nil, nil)
	_, m1, _, m2 := replicaPair(t, e, nil)
	ctx := ctxT(t)
	r := m1.inputRequired(t, ctx, map[string]any{"name": "ask", "arguments": map[string]any{}})
	retry := map[string]any{"name": "ask", "arguments": map[string]any{}, "inputResponses": map[string]json.RawMessage{"name": accept("x")}, "requestState": r.RequestState}
	_, err := m2.call(ctx, mcp.MethodToolsCall, retry)
	var rerr *mcp.RPCError
	if !errors.As(err, &rerr) || rerr.Code != mcp.CodeInternalError || !strings.Contains(string(rerr.Data), `"retryable":true`) || !strings.Contains(rerr.Message, "another gateway replica") {
		t.Errorf("a retry on another replica: %v", err)
	}
	if raw, err := m1.call(ctx, mcp.MethodToolsCall, retry); err != nil || !strings.Contains(string(raw), "hello accept:x") {
		t.Errorf("the retry on the replica holding the call: %v %s", err, raw)
	}
}

// roots/list during a call whose request did not declare roots, and
// outside any call, is answered with the agent's configured roots;
// sampling outside any call is refused, saying why.
func TestBridgeRoots(t *testing.T) {
	a := newAsker()
	e := bridgeEnv(t, a, func(c *config.Config) {
		c.Roots = []string{"/srv/all"}
		for _, ag := range c.Agents {
			if ag.Name == "claude" {
				ag.Roots = []string{"/srv/claude", "https://example.test/repo"}
			}
		}
	}, nil)
	m := e.modern(t, "claude")
	ctx := ctxT(t)
	raw, err := m.call(ctx, mcp.MethodToolsCall, map[string]any{"name": "roots", "arguments": map[string]any{}})
	if err != nil || !strings.Contains(string(raw), "file:///srv/claude,https://example.test/repo") {
		t.Errorf("roots in a call that declared none: %v %s", err, raw)
	}
	o := e.modern(t, "other")
	raw, err = o.call(ctx, mcp.MethodToolsCall, map[string]any{"name": "roots", "arguments": map[string]any{}})
	if err != nil || !strings.Contains(string(raw), "file:///srv/all") {
		t.Errorf("an agent without roots of its own gets the config's: %v %s", err, raw)
	}
	// Declared: asked of the agent.
	m.caps = mcp.ClientCapabilities{Roots: &mcp.RootsCapability{}}
	r := m.inputRequired(t, ctx, map[string]any{"name": "roots", "arguments": map[string]any{}})
	answers := map[string]json.RawMessage{}
	for k, q := range r.InputRequests {
		if q.Method != mcp.MethodRootsList {
			t.Errorf("input %q: %+v", k, q)
		}
		answers[k] = json.RawMessage(`{"roots":[{"uri":"file:///client"}]}`)
	}
	raw, err = m.call(ctx, mcp.MethodToolsCall, map[string]any{"name": "roots", "arguments": map[string]any{}, "inputResponses": answers, "requestState": r.RequestState})
	if err != nil || !strings.Contains(string(raw), "file:///client") {
		t.Errorf("roots the agent answered: %v %s", err, raw)
	}
	if _, err := m.call(ctx, mcp.MethodToolsCall, map[string]any{"name": "later", "arguments": map[string]any{}}); err != nil {
		t.Fatal(err)
	}
	a.release <- struct{}{}
	select {
	case roots := <-a.roots:
		if len(roots) != 2 || roots[0].URI != "file:///srv/claude" {
			t.Errorf("roots outside a call: %+v", roots)
		}
	case <-ctx.Done():
		t.Fatal("no roots outside a call")
	}
	select {
	case err := <-a.outside:
		if err == nil || !strings.Contains(err.Error(), "no call of agent") {
			t.Errorf("sampling outside a call: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("sampling outside a call got no answer")
	}
}

// A call of several rounds is one decision and one audit record of the
// call (the attempts carry one call id); each question and answer passes
// the chain as elicitation/create.
func TestBridgeOneDecision(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	aw, err := audit.Open(audit.Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer aw.Close()
	a := newAsker()
	e := bridgeEnv(t, a, nil, func(o *engine.Options) { o.Audit = aw })
	m := e.modern(t, "claude")
	m.caps = elicitCaps()
	ctx := ctxT(t)
	p := map[string]any{"name": "twice", "arguments": map[string]any{}}
	r := m.inputRequired(t, ctx, p)
	p["inputResponses"], p["requestState"] = map[string]json.RawMessage{"first": accept("a")}, r.RequestState
	r = m.inputRequired(t, ctx, p)
	p["inputResponses"], p["requestState"] = map[string]json.RawMessage{"second": accept("b")}, r.RequestState
	if _, err := m.call(ctx, mcp.MethodToolsCall, p); err != nil {
		t.Fatal(err)
	}
	if err := aw.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	calls, elicits := 0, 0
	var id string
	var ids []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var rec audit.Record
		json.Unmarshal([]byte(line), &rec)
		switch rec.Method {
		case mcp.MethodToolsCall:
			calls++
			id = rec.Call
			if rec.Decision != "allow" {
				t.Errorf("the call's decision: %+v", rec)
			}
		case mcp.MethodElicitationCreate:
			elicits++
			ids = append(ids, rec.Call)
		}
	}
	for _, x := range ids {
		if x != id {
			t.Errorf("an elicitation's record names call %q, the call's %q", x, id)
		}
	}
	if calls != 1 || elicits != 2 || id == "" {
		t.Errorf("%d tools/call records (call id %q) and %d elicitation records; want 1 with an id and 2:\n%s", calls, id, elicits, b)
	}
}

// An agent's connection that its modern calls use ends once idle (the
// next call connects again); connections past the per-agent bound are
// refused with a retryable error that names the limit.
func TestBridgeUpstreamIdleAndCap(t *testing.T) {
	a := newAsker()
	e := bridgeEnv(t, a, nil, nil)
	g := gateway.New(e.h, gateway.Options{UpstreamIdle: 20 * time.Millisecond, MaxUpstreamsPerAgent: 1})
	t.Cleanup(func() { g.Close() })
	m := e.modernOn(t, g, "claude")
	ctx := ctxT(t)
	call := func(name string) (json.RawMessage, error) {
		return m.call(ctx, mcp.MethodToolsCall, map[string]any{"name": name, "arguments": map[string]any{"message": "hi"}})
	}
	if _, err := call("plain"); err != nil {
		t.Fatal(err)
	}
	first := a.dials.Load()
	// Past the bound: another server while the asker's is kept.
	_, err := call("mcp_testserver_echo")
	var rerr *mcp.RPCError
	if !errors.As(err, &rerr) || !strings.Contains(rerr.Message, "limits") || !strings.Contains(string(rerr.Data), "retryable") {
		t.Errorf("past the bound: %v", err)
	}
	// Idle: ended, and the next call connects again.
	for a.dials.Load() == first {
		if ctx.Err() != nil {
			t.Fatal("the idle connection was not ended and made again")
		}
		time.Sleep(20 * time.Millisecond)
		if _, err := call("plain"); err != nil {
			t.Fatal(err)
		}
	}
	// Its place is free: the other server's call goes through now.
	for {
		_, err := call("mcp_testserver_echo")
		errors.As(err, &rerr)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the other server's call stayed refused: %v", rerr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Two questions a server asks at once, from two goroutines, come to the
// agent in one round: a request that asks several is gathered for
// gatherQuiet (it never becomes solo). What comes within that is a
// matter of time (on a machine loaded to 20-30, with -race, the server's
// second goroutine may run later than that), so each call is held to
// losing nothing (a question that missed the round comes in the next,
// the tool runs once) and most calls to one round.
func TestBridgeGathersConcurrent(t *testing.T) {
	a := newAsker()
	e := bridgeEnv(t, a, nil, nil)
	m := e.modern(t, "claude")
	m.caps = elicitCaps()
	ctx := ctxT(t)
	const calls = 20
	one := 0
	for i := range calls {
		r := m.inputRequired(t, ctx, map[string]any{"name": "both", "arguments": map[string]any{}})
		if len(r.InputRequests) == 2 {
			one++
		}
		for rounds := 1; ; rounds++ {
			answers := map[string]json.RawMessage{}
			for k := range r.InputRequests {
				answers[k] = accept(k)
			}
			raw, err := m.call(ctx, mcp.MethodToolsCall, map[string]any{"name": "both", "arguments": map[string]any{},
				"inputResponses": answers, "requestState": r.RequestState})
			if err != nil {
				t.Fatalf("call %d, round %d: %v", i, rounds, err)
			}
			if string(fields(t, raw)["resultType"]) != `"input_required"` {
				if !strings.Contains(string(raw), "accept:a accept:b") {
					t.Fatalf("call %d after %d rounds: %s", i, rounds, raw)
				}
				break
			}
			if rounds == 2 {
				t.Fatalf("call %d: two questions took more than two rounds", i)
			}
			r = mcp.InputRequiredResult{}
			json.Unmarshal(raw, &r)
		}
	}
	if one < calls/2 {
		t.Errorf("%d of %d calls had both questions in one round, want most", one, calls)
	}
	if n := a.calls.Load(); n != calls {
		t.Errorf("the tool ran %d times, want %d (once a call)", n, calls)
	}
}

// A request whose calls asked one question each is handed out without
// the gather window (solo); when its server then asks two at once,
// nothing is lost (a question that missed the round comes in the next),
// and it is no longer solo: its next calls gather.
func TestBridgeSoloThenConcurrent(t *testing.T) {
	a := newAsker()
	e := bridgeEnv(t, a, nil, nil)
	m := e.modern(t, "claude")
	m.caps = elicitCaps()
	ctx := ctxT(t)
	one := map[string]any{"one": true}
	if gateway.Solo(e.g, "asker", "both") {
		t.Fatal("a request never seen is solo")
	}
	for i := range 12 {
		r := m.inputRequired(t, ctx, map[string]any{"name": "both", "arguments": one})
		raw, err := m.call(ctx, mcp.MethodToolsCall, map[string]any{"name": "both", "arguments": one,
			"inputResponses": map[string]json.RawMessage{"a": accept("x")}, "requestState": r.RequestState})
		if err != nil || !strings.Contains(string(raw), "accept:x") {
			t.Fatalf("solo call %d: %v %s", i, err, raw)
		}
	}
	both := func() int {
		p := map[string]any{"name": "both", "arguments": map[string]any{}}
		r := m.inputRequired(t, ctx, p)
		rounds := 1
		for {
			answers := map[string]json.RawMessage{}
			for k := range r.InputRequests {
				answers[k] = accept(k)
			}
			raw, err := m.call(ctx, mcp.MethodToolsCall, map[string]any{"name": "both", "arguments": map[string]any{},
				"inputResponses": answers, "requestState": r.RequestState})
			if err != nil {
				t.Fatal(err)
			}
			if string(fields(t, raw)["resultType"]) != `"input_required"` {
				if !strings.Contains(string(raw), "accept:a accept:b") {
					t.Fatalf("after %d rounds: %s", rounds, raw)
				}
				return rounds
			}
			if rounds++; rounds > 2 {
				t.Fatalf("two questions took %d rounds", rounds)
			}
			r = mcp.InputRequiredResult{}
			json.Unmarshal(raw, &r)
		}
	}
	if !gateway.Solo(e.g, "asker", "both") {
		t.Fatal("12 calls of one question each: not solo")
	}
	both()
	if gateway.Solo(e.g, "asker", "both") {
		t.Error("still solo after a call that asked two questions")
	}
	both()
	if n := a.calls.Load(); n != 14 {
		t.Errorf("the tool ran %d times, want 14 (once a call)", n)
	}
}

// A question the server asks after its round went to the agent (the call
// is parked, waiting for the retry) is not refused: it waits, and the
// retry gets it as the next round.
func TestBridgeLateQuestion(t *testing.T) {
	a := newAsker()
	e := bridgeEnv(t, a, nil, nil)
	m := e.modern(t, "claude")
	m.caps = elicitCaps()
	ctx := ctxT(t)
	r := m.inputRequired(t, ctx, map[string]any{"name": "straggle", "arguments": map[string]any{}})
	if _, ok := r.InputRequests["first"]; !ok || len(r.InputRequests) != 1 {
		t.Fatalf("round 1: %+v", r.InputRequests)
	}
	a.release <- struct{}{}
	for gateway.Held(e.g, "claude", "asker") == 0 {
		if ctx.Err() != nil {
			t.Fatal("the late question did not reach the parked call")
		}
		time.Sleep(5 * time.Millisecond)
	}
	r2 := m.inputRequired(t, ctx, map[string]any{"name": "straggle", "arguments": map[string]any{},
		"inputResponses": map[string]json.RawMessage{"first": accept("x")}, "requestState": r.RequestState})
	if _, ok := r2.InputRequests["second"]; !ok || len(r2.InputRequests) != 1 {
		t.Fatalf("round 2: %+v", r2.InputRequests)
	}
	raw, err := m.call(ctx, mcp.MethodToolsCall, map[string]any{"name": "straggle", "arguments": map[string]any{},
		"inputResponses": map[string]json.RawMessage{"second": accept("y")}, "requestState": r2.RequestState})
	if err != nil || !strings.Contains(string(raw), "accept:x accept:y") {
		t.Fatalf("the last attempt: %v %s", err, raw)
	}
	if n := a.calls.Load(); n != 1 {
		t.Errorf("the tool ran %d times, want once", n)
	}
}

// BenchmarkBridgeRound is one MRTR round through the bridge (the legacy
// upstream asks for an elicitation: input_required, then the retry with
// the answer completes the call) against the agent's own two round trips
// (two plain calls through the gateway), interleaved in chunks; both in
// process CPU (client, gateway and upstream in process: an upper bound;
// BenchmarkBridgeRoundGateway counts the gateway alone). After its first
// soloAfter rounds the request is solo: no gather window. added-us is
// what the round adds; budget-ratio holds it to the 100 µs;
// x-two-calls is the round's CPU over the two round trips', measured in
// the same run.
func BenchmarkBridgeRound(b *testing.B) {
	a := newAsker()
	e := bridgeEnv(b, a, nil, nil)
	m := e.modern(b, "claude")
	m.caps = elicitCaps()
	ctx := context.Background()
	plain := map[string]any{"name": "plain", "arguments": map[string]any{}}
	round := func() {
		raw, err := m.call(ctx, mcp.MethodToolsCall, map[string]any{"name": "ask", "arguments": map[string]any{}})
		var r mcp.InputRequiredResult
		if err != nil || json.Unmarshal(raw, &r) != nil || r.RequestState == "" {
			b.Fatalf("round 1: %v %s", err, raw)
		}
		if _, err := m.call(ctx, mcp.MethodToolsCall, map[string]any{"name": "ask", "arguments": map[string]any{},
			"inputResponses": map[string]json.RawMessage{"name": accept("b")}, "requestState": r.RequestState}); err != nil {
			b.Fatal(err)
		}
	}
	two := func() {
		for range 2 {
			if _, err := m.call(ctx, mcp.MethodToolsCall, plain); err != nil {
				b.Fatal(err)
			}
		}
	}
	measureRound(b, round, two)
}

// measureRound reports the process CPU of an MRTR round against the
// agent's own two plain calls, interleaved in chunks in one run:
// added-us over the 100 µs (budget-ratio), and the round against
// the two calls (x-two-calls).
func measureRound(b *testing.B, round, two func()) {
	for range 10 { // past soloAfter: the request's rounds are solo
		round()
	}
	two()
	const chunk = 20
	var base, bridged time.Duration
	b.ResetTimer()
	for done := 0; done < b.N; done += chunk {
		n := min(chunk, b.N-done)
		t0 := gateway.ProcessCPU()
		for range n {
			two()
		}
		t1 := gateway.ProcessCPU()
		for range n {
			round()
		}
		bridged += gateway.ProcessCPU() - t1
		base += t1 - t0
	}
	added := float64((bridged - base).Microseconds()) / float64(b.N)
	b.ReportMetric(float64(base.Microseconds())/float64(b.N), "cpu-us/two-calls")
	b.ReportMetric(float64(bridged.Microseconds())/float64(b.N), "cpu-us/round")
	b.ReportMetric(added, "added-us")
	b.ReportMetric(added/100, "budget-ratio")
	b.ReportMetric(float64(bridged)/float64(max(base, 1)), "x-two-calls")
}

// BenchmarkBridgeIdleSessions holds 10,000 idle per-agent upstream
// sessions (each agent's shared connection to an in-process legacy
// server, as its modern calls use it) and reports the memory each costs
// (heap and stacks in use, after GC), against the 64 KB
// (budget-ratio ≤ 1): an upper bound, since it counts the in-process
// upstream's side too. The baseline is the same number of bare
// client-server pairs over pipes (x-bare-pair). Run with -benchtime 1x.
func BenchmarkBridgeIdleSessions(b *testing.B) {
	const n = 10000
	a := newAsker()
	agents := make([]string, n)
	e := bridgeEnv(b, a, func(c *config.Config) {
		c.Servers = c.Servers[2:] // the asker alone
		for i := range agents {
			agents[i] = fmt.Sprintf("agent-%05d", i)
			c.Agents = append(c.Agents, &config.Agent{Name: agents[i], Permission: "yolo"})
		}
	}, nil)
	ctx := context.Background()
	inUse := func() uint64 {
		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapInuse + ms.StackInuse
	}
	for range b.N {
		before := inUse()
		pairs := make([]*mcp.Client, n)
		for i := range pairs {
			client, server := mcp.Pipe()
			go a.server().Serve(ctx, server)
			c, err := mcp.Connect(ctx, client, mcp.ClientOptions{})
			if err != nil {
				b.Fatal(err)
			}
			pairs[i] = c
		}
		bare := inUse() - before
		for _, c := range pairs {
			c.Close()
		}
		pairs = nil
		before = inUse()
		for _, agent := range agents {
			if _, err := e.g.AgentUpstream(agent).Client(ctx, agent, "asker"); err != nil {
				b.Fatal(err)
			}
		}
		held := inUse() - before
		per := float64(held) / n
		b.ReportMetric(per, "bytes/session")
		b.ReportMetric(per/(64<<10), "budget-ratio")
		b.ReportMetric(float64(held)/float64(max(bare, 1)), "x-bare-pair")
	}
}

// reportRetry is the report tool's retry with its answer, asking for
// progress (token tok) and logs (level "info") as its first attempt
// did not.
func reportRetry(state, answer, tok string) map[string]any {
	return map[string]any{"name": "report", "arguments": map[string]any{}, "requestState": state,
		"inputResponses": map[string]json.RawMessage{"name": accept(answer)},
		"_meta":          mcp.Meta{"progressToken": json.RawMessage(`"` + tok + `"`)}}
}

// progressAndLog waits for the progress and the log message the report
// tool sends after its answer, and checks them.
func progressAndLog(t *testing.T, m *modernAgent, tok, answer string) {
	t.Helper()
	pr := m.next(t, mcp.NotificationProgress)
	if string(mcp.Member(pr.params, "progressToken")) != `"`+tok+`"` || !strings.Contains(string(pr.params), "told accept:"+answer) {
		t.Errorf("the later round's progress: %s", pr.params)
	}
	lg := m.next(t, mcp.NotificationMessage)
	if !strings.Contains(string(lg.params), "told accept:"+answer) || !strings.Contains(string(lg.params), `"asker/report"`) {
		t.Errorf("the later round's log: %s", lg.params)
	}
}

// What the server sends in a later round of a bridged call (progress, a
// log message) reaches the agent on the attempt that is current: with
// the retry's progress token, and logged because the retry asked (its
// first attempt did not).
func TestBridgeLaterRoundNotes(t *testing.T) {
	a := newAsker()
	e := bridgeEnv(t, a, nil, nil)
	m := e.modern(t, "claude")
	m.caps = elicitCaps()
	ctx := ctxT(t)
	r := m.inputRequired(t, ctx, map[string]any{"name": "report", "arguments": map[string]any{}, "_meta": mcp.Meta{"progressToken": json.RawMessage(`"first"`)}})
	raw, err := m.callAt(ctx, mcp.Version20260728, "info", mcp.MethodToolsCall, reportRetry(r.RequestState, "x", "second"))
	if err != nil || !strings.Contains(string(raw), "reported accept:x") {
		t.Fatalf("the retry: %v %s", err, raw)
	}
	progressAndLog(t, m, "second", "x")
}

// Closing the gateway while a call waits for its input refuses the
// server's waiting request, and the server hears the refusal before its
// connection closes (not a cancellation, not a closed pipe).
func TestBridgeCloseRefusesPending(t *testing.T) {
	a := newAsker()
	e := bridgeEnv(t, a, nil, nil)
	g := gateway.New(e.h, gateway.Options{})
	m := e.modernOn(t, g, "claude")
	m.caps = elicitCaps()
	ctx := ctxT(t)
	m.inputRequired(t, ctx, map[string]any{"name": "ask", "arguments": map[string]any{}})
	g.Close()
	select {
	case err := <-a.errs:
		var rerr *mcp.RPCError
		if !errors.As(err, &rerr) || !strings.Contains(rerr.Message, "refused") {
			t.Errorf("the server's waiting request got %v, want the refusal", err)
		}
	case <-ctx.Done():
		t.Fatal("the server's waiting request got no answer")
	}
}

// BenchmarkBridgeRoundProcess is BenchmarkBridgeRound with the legacy
// upstream in a process of its own (`nexus testserver --legacy-only`, its
// elicit and echo tools), so that this process's CPU is the gateway's and
// the agent's alone: added-us is what the bridge adds to a round over the
// agent's own two plain calls, the upstream's extra request and answer
// not counted (the agent's share is about the same in both).
func BenchmarkBridgeRoundProcess(b *testing.B) {
	bin := testenv.Nexus(b)
	e := newEnvOpts(b, func(c *config.Config) {
		c.Servers = append(c.Servers, &config.Server{Name: "legacy", Type: config.TypeStdio, Command: []string{bin, "testserver", "--legacy-only"}, Enabled: true, Prefix: ptr("")})
	}, func(o *engine.Options) {
		prev := o.Transport
		o.Transport = func(ctx context.Context, srv *config.Server) (mcp.Conn, error) {
			if srv.Name != "legacy" {
				return prev(ctx, srv)
			}
			return stdio.Start(ctx, stdio.Config{Server: srv.Name, Command: srv.Command})
		}
	})
	m := e.modern(b, "claude")
	m.caps = elicitCaps()
	ctx := context.Background()
	plain := map[string]any{"name": "echo", "arguments": map[string]any{"message": "hi"}}
	ask := map[string]any{"name": "elicit", "arguments": map[string]any{}}
	round := func() {
		raw, err := m.call(ctx, mcp.MethodToolsCall, ask)
		var r mcp.InputRequiredResult
		if err != nil || json.Unmarshal(raw, &r) != nil || r.RequestState == "" || len(r.InputRequests) != 1 {
			b.Fatalf("round 1: %v %s", err, raw)
		}
		answers := map[string]json.RawMessage{}
		for k := range r.InputRequests {
			answers[k] = json.RawMessage(`{"action":"accept","content":{"name":"Ada"}}`)
		}
		raw, err = m.call(ctx, mcp.MethodToolsCall, map[string]any{"name": "elicit", "arguments": map[string]any{},
			"inputResponses": answers, "requestState": r.RequestState})
		if err != nil || !strings.Contains(string(raw), "Ada") {
			b.Fatalf("round 2: %v %s", err, raw)
		}
	}
	two := func() {
		for range 2 {
			if _, err := m.call(ctx, mcp.MethodToolsCall, plain); err != nil {
				b.Fatal(err)
			}
		}
	}
	measureRound(b, round, two)
}
