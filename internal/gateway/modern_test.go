package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/audit"
	"github.com/nexus-mcp/nexus/internal/config"
	"github.com/nexus-mcp/nexus/internal/diag"
	"github.com/nexus-mcp/nexus/internal/engine"
	"github.com/nexus-mcp/nexus/internal/gateway"
	"github.com/nexus-mcp/nexus/internal/testserver"
)

// note is a notification a modern agent received.
type note struct {
	method string
	params json.RawMessage
}

// modernAgent is a client of MCP 2026-07-28 over a pipe to the gateway
// (the stdio shape): no initialize, each request with its own _meta.
type modernAgent struct {
	t     testing.TB
	peer  *mcp.Peer
	notes chan note
	caps  mcp.ClientCapabilities
	mu    sync.Mutex
	asked []string // requests the gateway sent it: there must be none
}

func (m *modernAgent) HandleRequest(_ context.Context, method string, _ json.RawMessage) (any, error) {
	m.mu.Lock()
	m.asked = append(m.asked, method)
	m.mu.Unlock()
	return nil, errors.New("a modern client takes no requests")
}

func (m *modernAgent) HandleNotification(_ context.Context, method string, params json.RawMessage) {
	select {
	case m.notes <- note{method, slices.Clone(params)}:
	default:
		m.t.Errorf("too many notifications: %s dropped", method)
	}
}

func (e *env) modern(t testing.TB, agent string) *modernAgent {
	t.Helper()
	return e.modernOn(t, e.g, agent)
}

// modernOn is modern on another gateway in front of the env's host.
func (e *env) modernOn(t testing.TB, g *gateway.Gateway, agent string) *modernAgent {
	t.Helper()
	return e.modernWith(t, agent, func(conn mcp.Conn) { g.Serve(e.ctx, conn, agent) })
}

// modernWith is a modern agent whose other end serve serves.
func (e *env) modernWith(t testing.TB, agent string, serve func(mcp.Conn)) *modernAgent {
	t.Helper()
	down, up := mcp.Pipe()
	done := make(chan struct{})
	go func() { defer close(done); serve(up) }()
	m := &modernAgent{t: t, notes: make(chan note, 256)}
	m.peer = mcp.NewPeer(down, mcp.PeerOptions{Handler: m})
	m.peer.Start()
	t.Cleanup(func() {
		m.peer.Close()
		<-done
		m.mu.Lock()
		defer m.mu.Unlock()
		if len(m.asked) > 0 {
			t.Errorf("the gateway sent a modern client requests: %v", m.asked)
		}
	})
	return m
}

// params are a request's params with the revision's _meta; level asks
// for the request's logs.
func (m *modernAgent) params(version string, level mcp.LoggingLevel, fields map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range fields {
		out[k] = v
	}
	extra, _ := fields["_meta"].(mcp.Meta) // a request's own: a progress token, say
	out["_meta"] = mcp.RequestMeta{ProtocolVersion: version, ClientInfo: &mcp.Implementation{Name: "modern-test", Version: "1"},
		Capabilities: m.caps, LogLevel: level}.Put(maps.Clone(extra))
	return out
}

// call sends a modern request and returns its raw result.
func (m *modernAgent) call(ctx context.Context, method string, fields map[string]any) (json.RawMessage, error) {
	return m.callAt(ctx, mcp.Version20260728, "", method, fields)
}

func (m *modernAgent) callAt(ctx context.Context, version string, level mcp.LoggingLevel, method string, fields map[string]any) (json.RawMessage, error) {
	var raw json.RawMessage
	err := m.peer.Call(ctx, method, m.params(version, level, fields), &raw)
	return raw, err
}

// next is the next notification of one of the methods, or a failure.
func (m *modernAgent) next(t *testing.T, methods ...string) note {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case n := <-m.notes:
			if slices.Contains(methods, n.method) {
				return n
			}
		case <-timeout:
			t.Fatalf("no %v came", methods)
		}
	}
}

// fields decodes a result's members.
func fields(t *testing.T, raw json.RawMessage) map[string]json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("result %s: %v", raw, err)
	}
	return m
}

// A modern agent lists with no initialize: every list is resultType
// complete, cacheScope private (per agent) with the configured TTL;
// server/discover says what Nexus speaks; a version it does not speak
// gets -32022 with the list; removed methods are refused. A legacy client
// of the same gateway sees what it always did.
func TestModernLists(t *testing.T) {
	e := newEnv(t, nil)
	m := e.modern(t, "claude")
	ctx := ctxT(t)
	for _, method := range []string{mcp.MethodToolsList, mcp.MethodResourcesList, mcp.MethodResourcesTemplatesList, mcp.MethodPromptsList} {
		raw, err := m.call(ctx, method, nil)
		if err != nil {
			t.Fatalf("%s: %v", method, err)
		}
		f := fields(t, raw)
		if string(f["resultType"]) != `"complete"` || string(f["cacheScope"]) != `"private"` || string(f["ttlMs"]) != "60000" {
			t.Errorf("%s: %s", method, raw)
		}
	}
	raw, _ := m.call(ctx, mcp.MethodToolsList, nil)
	var tools mcp.ListToolsResult
	json.Unmarshal(raw, &tools)
	if len(tools.Tools) != 3 || tools.NextCursor == "" || !strings.HasPrefix(tools.Tools[0].Name, "mcp_") {
		t.Errorf("the first page of tools: %s", raw)
	}
	// Pages are private too.
	raw, err := m.call(ctx, mcp.MethodToolsList, map[string]any{"cursor": tools.NextCursor})
	if err != nil || string(fields(t, raw)["cacheScope"]) != `"private"` {
		t.Errorf("the second page: %v %s", err, raw)
	}

	raw, err = m.call(ctx, mcp.MethodResourcesRead, map[string]any{"uri": "file:///readme.txt"})
	if err != nil {
		t.Fatalf("resources/read: %v", err)
	}
	if f := fields(t, raw); err != nil || string(f["resultType"]) != `"complete"` || string(f["cacheScope"]) != `"private"` || string(f["ttlMs"]) != "0" || len(f["contents"]) == 0 {
		t.Errorf("resources/read: %v %s", err, raw)
	}

	// Not found is invalid params now (-32002 until 2025-11-25).
	var rerr *mcp.RPCError
	if _, err := m.call(ctx, mcp.MethodResourcesRead, map[string]any{"uri": "file:///nowhere.txt"}); !errors.As(err, &rerr) || rerr.Code != mcp.CodeInvalidParams || !strings.Contains(string(rerr.Data), `"uri":"file:///nowhere.txt"`) {
		t.Errorf("a resource not found: %v (want -32602 whose data names the uri)", err)
	}

	raw, err = m.call(ctx, mcp.MethodServerDiscover, nil)
	if err != nil {
		t.Fatal(err)
	}
	var d mcp.DiscoverResult
	json.Unmarshal(raw, &d)
	var info mcp.Implementation
	json.Unmarshal(d.Meta[mcp.MetaServerInfo], &info)
	if d.ResultType != "complete" || !slices.Equal(d.SupportedVersions, mcp.AllVersions) || d.Capabilities.Tools == nil || d.TTLMs <= 0 || d.CacheScope == "" || info.Name != "nexus" {
		t.Errorf("server/discover: %s", raw)
	}

	_, err = m.callAt(ctx, "1900-01-01", "", mcp.MethodToolsList, nil)
	if !errors.As(err, &rerr) || rerr.Code != mcp.CodeUnsupportedProtocolVersion || !strings.Contains(string(rerr.Data), mcp.Version20260728) || !strings.Contains(string(rerr.Data), "1900-01-01") {
		t.Errorf("an unknown version: %v", err)
	}
	for _, method := range []string{mcp.MethodLoggingSetLevel, mcp.MethodResourcesSubscribe, "tasks/list"} {
		if _, err := m.call(ctx, method, map[string]any{"level": "debug", "uri": "file:///readme.txt"}); !errors.As(err, &rerr) || rerr.Code != mcp.CodeMethodNotFound || !strings.Contains(rerr.Message, "2026-07-28") {
			t.Errorf("%s: %v", method, err)
		}
	}
	// Neither initialize nor _meta: the error says both ways.
	if err := m.peer.Call(ctx, mcp.MethodToolsList, nil, nil); !errors.As(err, &rerr) || !strings.Contains(rerr.Message, "initialize") || !strings.Contains(rerr.Message, mcp.MetaProtocolVersion) {
		t.Errorf("a request with neither: %v", err)
	}

	// The legacy client beside it: no resultType, no cache hints.
	c := e.connect("claude", mcp.ClientOptions{})
	if err := c.Peer().Call(ctx, mcp.MethodToolsList, nil, &raw); err != nil || strings.Contains(string(raw), "resultType") || strings.Contains(string(raw), "ttlMs") {
		t.Errorf("legacy tools/list: %v %s", err, raw)
	}
	if c.ProtocolVersion() != mcp.Version20251125 {
		t.Errorf("legacy negotiated %q", c.ProtocolVersion())
	}
}

// A modern tools/call is the same call as a legacy one: the same
// decisions (allowed, denied by the agent's rules), the same audit
// records apart from the session; the result says resultType.
func TestModernCallSameAsLegacy(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	aw, err := audit.Open(audit.Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer aw.Close()
	e := newEnvOpts(t, nil, func(o *engine.Options) { o.Audit = aw })
	ctx := ctxT(t)
	c := e.connect("claude", mcp.ClientOptions{})
	m := e.modern(t, "claude")

	echo := map[string]any{"name": "mcp_testserver_echo", "arguments": map[string]string{"message": "same"}}
	legacyRes, err := c.CallTool(ctx, "mcp_testserver_echo", json.RawMessage(`{"message":"same"}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := m.call(ctx, mcp.MethodToolsCall, echo)
	if err != nil {
		t.Fatal(err)
	}
	var modernRes mcp.CallToolResult
	json.Unmarshal(raw, &modernRes)
	if string(fields(t, raw)["resultType"]) != `"complete"` || len(modernRes.Content) != 1 || modernRes.Content[0].Text != legacyRes.Content[0].Text {
		t.Errorf("modern echo %s, legacy %+v", raw, legacyRes)
	}
	_, lerr := c.CallTool(ctx, "mcp_testserver_fail", nil, nil)
	_, merr := m.call(ctx, mcp.MethodToolsCall, map[string]any{"name": "mcp_testserver_fail", "arguments": map[string]any{}})
	var l, md *mcp.RPCError
	if !errors.As(lerr, &l) || !errors.As(merr, &md) || l.Code != md.Code || l.Message != md.Message {
		t.Errorf("denied: legacy %v, modern %v", lerr, merr)
	}
	if err := aw.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	var recs []audit.Record
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var r audit.Record
		json.Unmarshal([]byte(line), &r)
		if r.Method == mcp.MethodToolsCall {
			// What differs by nature: when, which session, the chain links.
			r.Time, r.Session, r.Seq, r.Genesis, r.Prev, r.MAC, r.Call = time.Time{}, "", 0, "", "", "", ""
			for i := range r.Steps {
				r.Steps[i].Micros = 0
			}
			recs = append(recs, r)
		}
	}
	if len(recs) != 4 {
		t.Fatalf("tools/call records: %+v", recs)
	}
	for i, what := range []string{"echo", "fail"} {
		lj, _ := json.Marshal(recs[2*i])
		mj, _ := json.Marshal(recs[2*i+1])
		if string(lj) != string(mj) {
			t.Errorf("%s: the legacy call's record\n%s\nthe modern call's\n%s", what, lj, mj)
		}
	}
	if recs[0].Decision != "allow" || recs[2].Decision != "deny" {
		t.Errorf("decisions: %+v", recs)
	}
}

// A modern request gets a server's log only if it asked with logLevel,
// on its own request, at that level.
func TestModernLogsOnlyWhenAsked(t *testing.T) {
	e := newEnv(t, nil)
	m := e.modern(t, "claude")
	ctx := ctxT(t)
	echo := func(level mcp.LoggingLevel, msg string) {
		t.Helper()
		if _, err := m.callAt(ctx, mcp.Version20260728, level, mcp.MethodToolsCall,
			map[string]any{"name": "mcp_testserver_echo", "arguments": map[string]string{"message": msg}}); err != nil {
			t.Fatal(err)
		}
	}
	echo("", "UNASKED")
	echo("error", "TOO-LOW") // the echo logs at info
	echo("debug", "ASKED")
	n := m.next(t, mcp.NotificationMessage)
	if !strings.Contains(string(n.params), "ASKED") || strings.Contains(string(n.params), "UNASKED") {
		t.Errorf("the log: %s", n.params)
	}
	// A last call: what would have followed has arrived by its answer.
	echo("", "LAST")
	for {
		select {
		case n := <-m.notes:
			if n.method == mcp.NotificationMessage {
				t.Errorf("a log nobody asked for: %s", n.params)
			}
			continue
		default:
		}
		break
	}
}

// subscriptions/listen: acknowledged first, then the list_changed its
// agent's own upstream sends, tagged with the subscription's id; never
// another agent's. Legacy sessions of the agent still hear of it as
// before.
func TestModernListen(t *testing.T) {
	e := newEnv(t, func(c *config.Config) {
		c.Servers = append(c.Servers, &config.Server{Name: "rugged", Type: config.TypeStdio, Command: []string{"testserver", testserver.VariantRugPull}, Enabled: true})
		c.Agents = append(c.Agents,
			&config.Agent{Name: "alice", Permission: "yolo", Servers: []string{"rugged"}},
			&config.Agent{Name: "bob", Permission: "yolo", Servers: []string{"rugged"}})
	})
	ctx := ctxT(t)
	alice, bob := e.modern(t, "alice"), e.modern(t, "bob")
	legacyChanged := make(chan string, 8)
	legacy := e.connect("alice", mcp.ClientOptions{OnListChanged: func(kind string) { legacyChanged <- kind }})
	if _, err := legacy.ListTools(ctx); err != nil {
		t.Fatal(err)
	}
	listen := func(m *modernAgent) (acked note, stop func()) {
		lctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() {
			_, err := m.call(lctx, mcp.MethodSubscriptionsListen, map[string]any{"notifications": map[string]any{"toolsListChanged": true}})
			done <- err
		}()
		acked = m.next(t, mcp.NotificationSubscriptionsAcked, "notifications/tools/list_changed")
		return acked, func() { cancel(); <-done }
	}
	aAck, aStop := listen(alice)
	defer aStop()
	bAck, bStop := listen(bob)
	defer bStop()
	subID := func(n note) string {
		var p struct {
			Meta map[string]json.RawMessage `json:"_meta"`
		}
		json.Unmarshal(n.params, &p)
		return string(p.Meta[mcp.MetaSubscriptionID])
	}
	if aAck.method != mcp.NotificationSubscriptionsAcked || subID(aAck) == "" || !strings.Contains(string(aAck.params), `"toolsListChanged":true`) || bAck.method != mcp.NotificationSubscriptionsAcked {
		t.Fatalf("acknowledgments: %s %s", aAck.params, bAck.params)
	}
	if _, err := alice.call(ctx, mcp.MethodToolsCall, map[string]any{"name": "mcp_rugged_rug_pull", "arguments": map[string]any{}}); err != nil {
		t.Fatal(err)
	}
	n := alice.next(t, "notifications/tools/list_changed")
	if subID(n) != subID(aAck) {
		t.Errorf("alice's list_changed %s, her subscription %s", n.params, subID(aAck))
	}
	select {
	case <-legacyChanged:
	case <-ctx.Done():
		t.Fatal("alice's legacy session did not hear of the change")
	}
	// Bob's own upstream changes now: he hears of that one only.
	if _, err := bob.call(ctx, mcp.MethodToolsCall, map[string]any{"name": "mcp_rugged_rug_pull", "arguments": map[string]any{}}); err != nil {
		t.Fatal(err)
	}
	bob.next(t, "notifications/tools/list_changed")
	if _, err := bob.call(ctx, mcp.MethodToolsList, nil); err != nil {
		t.Fatal(err)
	}
	for len(bob.notes) > 0 {
		if n := <-bob.notes; strings.Contains(n.method, "list_changed") {
			t.Errorf("bob heard of another change: %s %s", n.method, n.params)
		}
	}
}

// modernAsker is a modern upstream (MCP 2026-07-28 only) in place of the probe,
// as the gateway meets one through its host: its ask tool answers a first
// attempt with an InputRequiredResult asking ask, and a retry with
// "thanks", recording what the agent sent back.
type modernAsker struct {
	mu      sync.Mutex
	ask     mcp.InputRequests
	retries chan *mcp.InputParams
}

func (a *modernAsker) setAsk(ask mcp.InputRequests) {
	a.mu.Lock()
	a.ask = ask
	a.mu.Unlock()
}

func (a *modernAsker) server() *mcp.Server {
	s := mcp.NewServer(mcp.Implementation{Name: "probe", Version: "1"}, mcp.ServerOptions{ModernOnly: true})
	s.AddTool(mcp.Tool{Name: "echo"}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent("probe:" + string(req.Arguments))}}, nil
	})
	s.AddTool(mcp.Tool{Name: "ask"}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if in := mcp.InputOf(ctx); in != nil {
			a.retries <- in
			return &mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent("thanks")}}, nil
		}
		a.mu.Lock()
		ask := a.ask
		a.mu.Unlock()
		return nil, &mcp.InputRequiredError{Result: &mcp.InputRequiredResult{InputRequests: ask, RequestState: "opaque-1"}}
	})
	return s
}

// serveAsProbe makes o's host reach up when it dials the probe, each
// connection served until stop (before the env's leak check).
func serveAsProbe(up *modernAsker, o *engine.Options) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	next := o.Transport
	o.Transport = func(dctx context.Context, srv *config.Server) (mcp.Conn, error) {
		if srv.Name != "probe" {
			return next(dctx, srv)
		}
		client, server := mcp.Pipe()
		s := up.server()
		wg.Add(1)
		go func() { defer wg.Done(); s.Serve(ctx, server) }()
		return client, nil
	}
	return func() { cancel(); wg.Wait() }
}

// A modern upstream's InputRequiredResult reaches a modern agent once the
// chain has judged each input request (a rule that refuses one refuses
// the call, and the agent is not asked); an input the agent did not
// declare it can give is -32021; the agent's retry goes upstream with its
// inputResponses and the exact requestState.
func TestModernInputRequired(t *testing.T) {
	rule, err := config.ParseHCL([]byte(`rule "no-passwords" {
  when   = "method == 'elicitation/create' && params.message.contains('password')"
  action = "deny"
  reason = "no passwords"
}
`), diag.Source{File: "rules.hcl"})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	aw, err := audit.Open(audit.Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer aw.Close()
	up := &modernAsker{retries: make(chan *mcp.InputParams, 1)}
	var stop func()
	e := newEnvOpts(t, func(c *config.Config) { c.Filters = append(c.Filters, rule.Filters...) }, func(o *engine.Options) {
		o.Audit = aw
		stop = serveAsProbe(up, o)
	})
	t.Cleanup(stop)
	ask := mcp.InputRequests{
		"who":   {Method: mcp.MethodElicitationCreate, Params: json.RawMessage(`{"mode":"form","message":"who are you?","requestedSchema":{"type":"object","properties":{"name":{"type":"string"}}}}`)},
		"model": {Method: mcp.MethodSamplingCreateMessage, Params: json.RawMessage(`{"messages":[{"role":"user","content":{"type":"text","text":"hi"}}],"maxTokens":10}`)},
	}
	up.setAsk(ask)
	g := gateway.New(e.h, gateway.Options{})
	t.Cleanup(func() { g.Close() })
	ctx := ctxT(t)
	call := map[string]any{"name": "mcp_probe_ask", "arguments": map[string]any{}}

	m := e.modernOn(t, g, "claude")
	m.caps = mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapability{Form: &struct{}{}}}
	var rerr *mcp.RPCError
	if _, err := m.call(ctx, mcp.MethodToolsCall, call); !errors.As(err, &rerr) || rerr.Code != mcp.CodeMissingRequiredCapability || !strings.Contains(rerr.Message, "sampling") {
		t.Errorf("an input the agent cannot give: %v", err)
	}
	m.caps.Sampling = &mcp.SamplingCapability{}
	raw, err := m.call(ctx, mcp.MethodToolsCall, call)
	if err != nil {
		t.Fatal(err)
	}
	var r mcp.InputRequiredResult
	json.Unmarshal(raw, &r)
	// The upstream's requestState reaches the agent sealed to it and to
	// this request.
	if r.ResultType != mcp.ResultInputRequired || !strings.HasPrefix(r.RequestState, "nxs1.") || strings.Contains(r.RequestState, "opaque") ||
		len(r.InputRequests) != 2 || r.InputRequests["who"].Method != mcp.MethodElicitationCreate ||
		strings.Contains(string(raw), "ttlMs") {
		t.Errorf("input_required: %s", raw)
	}
	answers := map[string]any{"who": map[string]any{"action": "accept", "content": map[string]string{"name": "ada"}}}
	// Echoed to another request (other arguments, another tool), by
	// another agent, or not the gateway's at all: refused, and nothing
	// reaches the upstream.
	for what, bad := range map[string]map[string]any{
		"other arguments": {"name": "mcp_probe_ask", "arguments": map[string]any{"x": 1}, "requestState": r.RequestState, "inputResponses": answers},
		"another tool":    {"name": "mcp_probe_echo", "arguments": map[string]any{}, "requestState": r.RequestState, "inputResponses": answers},
		"the raw state":   {"name": "mcp_probe_ask", "arguments": map[string]any{}, "requestState": "opaque-1", "inputResponses": answers},
	} {
		if _, err := m.call(ctx, mcp.MethodToolsCall, bad); !errors.As(err, &rerr) || rerr.Code != mcp.CodeInvalidParams || !strings.Contains(rerr.Message, "requestState") {
			t.Errorf("requestState with %s: %v", what, err)
		}
	}
	mallory := e.modernOn(t, g, "mallory")
	mallory.caps = m.caps
	if _, err := mallory.call(ctx, mcp.MethodToolsCall, map[string]any{"name": "mcp_probe_ask", "arguments": map[string]any{}, "requestState": r.RequestState, "inputResponses": answers}); !errors.As(err, &rerr) || rerr.Code != mcp.CodeInvalidParams || !strings.Contains(rerr.Message, "another agent") {
		t.Errorf("another agent's requestState: %v", err)
	}
	select {
	case in := <-up.retries:
		t.Fatalf("a refused requestState reached the upstream: %+v", in)
	default:
	}
	retry := map[string]any{"name": "mcp_probe_ask", "arguments": map[string]any{}, "requestState": r.RequestState, "inputResponses": answers}
	raw, err = m.call(ctx, mcp.MethodToolsCall, retry)
	if err != nil || string(fields(t, raw)["resultType"]) != `"complete"` || !strings.Contains(string(raw), "thanks") {
		t.Fatalf("the retry: %v %s", err, raw)
	}
	in := <-up.retries
	if in.RequestState != "opaque-1" || !strings.Contains(string(in.InputResponses["who"]), "ada") {
		t.Errorf("upstream got %+v", in)
	}

	// The policy refuses one of the inputs: the call is refused.
	up.setAsk(mcp.InputRequests{"pw": {Method: mcp.MethodElicitationCreate, Params: json.RawMessage(`{"mode":"form","message":"your password?","requestedSchema":{"type":"object","properties":{}}}`)}})
	g2 := gateway.New(e.h, gateway.Options{})
	t.Cleanup(func() { g2.Close() })
	m2 := e.modernOn(t, g2, "claude")
	m2.caps = m.caps
	raw, err = m2.call(ctx, mcp.MethodToolsCall, call)
	var res mcp.CallToolResult
	json.Unmarshal(raw, &res)
	if err != nil || !res.IsError || len(res.Content) == 0 || !strings.Contains(res.Content[0].Text, "no-passwords") || !strings.Contains(res.Content[0].Text, `"pw"`) || strings.Contains(string(raw), "input_required") {
		t.Errorf("a refused input: %v %s", err, raw)
	}
	// The audit log has each input request the chain judged, as it has a
	// server's own request.
	if err := aw.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	var judged []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var r audit.Record
		json.Unmarshal([]byte(line), &r)
		if r.Method == mcp.MethodElicitationCreate || r.Method == mcp.MethodSamplingCreateMessage {
			judged = append(judged, strings.Join(append([]string{r.Agent, r.Server, r.Method, r.Decision}, r.Flags...), " "))
		}
	}
	// By key: model, who; the retry's answer to who; then pw.
	want := []string{"claude probe sampling/createMessage allow", "claude probe elicitation/create allow", "claude probe elicitation/create allow answer", "claude probe elicitation/create deny"}
	if !slices.Equal(judged, want) {
		t.Errorf("audited input requests %q, want %q", judged, want)
	}
}

// watchServer has a resource and a tool that says it changed, to its
// own subscribers: each connection (each agent's) is an instance of its
// own.
func watchServer() *mcp.Server {
	s := mcp.NewServer(mcp.Implementation{Name: "watch", Version: "1"}, mcp.ServerOptions{})
	s.AddResource(mcp.Resource{URI: "watch://x", Name: "x"}, func(ctx context.Context, ss *mcp.ServerSession, uri string) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []mcp.ResourceContents{{URI: uri, Text: "x"}}}, nil
	})
	s.AddTool(mcp.Tool{Name: "touch"}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		s.ResourceUpdated(ctx, "watch://x")
		return &mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent("touched")}}, nil
	})
	return s
}

// subscriptions/listen's resourceSubscriptions: the agent's stream gets
// resources/updated for the URI from its own connection, tagged with
// its subscriptionId, and another agent's stream does not.
func TestModernListenResources(t *testing.T) {
	var wg sync.WaitGroup
	sctx, stop := context.WithCancel(context.Background())
	e := newEnvOpts(t, func(c *config.Config) {
		c.Servers = append(c.Servers, &config.Server{Name: "watch", Type: config.TypeStdio, Command: []string{"watch"}, Enabled: true})
		c.Agents = append(c.Agents,
			&config.Agent{Name: "alice", Permission: "yolo", Servers: []string{"watch"}},
			&config.Agent{Name: "bob", Permission: "yolo", Servers: []string{"watch"}})
	}, func(o *engine.Options) {
		prev := o.Transport
		o.Transport = func(ctx context.Context, srv *config.Server) (mcp.Conn, error) {
			if srv.Command[0] != "watch" {
				return prev(ctx, srv)
			}
			client, server := mcp.Pipe()
			wg.Add(1)
			go func() { defer wg.Done(); watchServer().Serve(sctx, server) }()
			return client, nil
		}
	})
	t.Cleanup(func() { stop(); wg.Wait() })
	ctx := ctxT(t)
	alice, bob := e.modern(t, "alice"), e.modern(t, "bob")
	listen := func(m *modernAgent) note {
		lctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			m.call(lctx, mcp.MethodSubscriptionsListen, map[string]any{"notifications": map[string]any{"resourceSubscriptions": []string{"watch://x"}}})
		}()
		t.Cleanup(func() { cancel(); <-done })
		return m.next(t, mcp.NotificationSubscriptionsAcked)
	}
	aAck := listen(alice)
	listen(bob)
	if !strings.Contains(string(aAck.params), `"resourceSubscriptions":["watch://x"]`) {
		t.Errorf("alice's acknowledgment: %s", aAck.params)
	}
	touch := func(m *modernAgent) {
		t.Helper()
		if _, err := m.call(ctx, mcp.MethodToolsCall, map[string]any{"name": "mcp_watch_touch", "arguments": map[string]any{}}); err != nil {
			t.Fatal(err)
		}
	}
	touch(alice)
	n := alice.next(t, mcp.NotificationResourceUpdated)
	if !strings.Contains(string(n.params), `"uri":"watch://x"`) || !strings.Contains(string(n.params), mcp.MetaSubscriptionID) {
		t.Errorf("alice's update: %s", n.params)
	}
	touch(bob)
	bob.next(t, mcp.NotificationResourceUpdated)
	// A request after: what might have followed has come by its answer.
	if _, err := bob.call(ctx, mcp.MethodToolsList, nil); err != nil {
		t.Fatal(err)
	}
	for len(bob.notes) > 0 {
		if n := <-bob.notes; n.method == mcp.NotificationResourceUpdated {
			t.Errorf("bob got a second update (alice's?): %s", n.params)
		}
	}
}

// A log an HTTP server sends on a request's response stream belongs to
// that request: a modern one that asked gets it; one that did not, not.
func TestModernLogOfHTTPUpstream(t *testing.T) {
	e := newHTTPUpstreamEnv(t)
	m := e.env.modern(t, "alice")
	ctx := ctxT(t)
	for _, c := range []struct {
		level mcp.LoggingLevel
		msg   string
	}{{"", "UNASKED"}, {"info", "ASKED"}} {
		if _, err := m.callAt(ctx, mcp.Version20260728, c.level, mcp.MethodToolsCall,
			map[string]any{"name": "mcp_web_echo", "arguments": map[string]string{"message": c.msg}}); err != nil {
			t.Fatal(err)
		}
	}
	n := m.next(t, mcp.NotificationMessage)
	if !strings.Contains(string(n.params), "ASKED") || strings.Contains(string(n.params), "UNASKED") {
		t.Errorf("the log: %s", n.params)
	}
}

// BenchmarkModernCall is a modern tools/call through the gateway beside
// a legacy one, on the same in-memory pipes: reading the request's _meta
// and splicing resultType into the upstream's bytes should cost next to
// nothing (issue 41: at most 1.0x a legacy call).
func BenchmarkModernCall(b *testing.B) {
	e := newEnv(b, nil)
	ctx := context.Background()
	line := "2026-11-25T08:00:00Z INFO request served in 12ms\n"
	for _, size := range []struct {
		name string
		msg  string
	}{{"", "hello"}, {"-64KB-text", strings.Repeat(line, (64<<10)/len(line))}} {
		args, _ := json.Marshal(map[string]string{"message": size.msg})
		// Both send the same bytes but for _meta, and decode the same way.
		b.Run("legacy"+size.name, func(b *testing.B) {
			c := e.connect("claude", mcp.ClientOptions{})
			params, _ := json.Marshal(map[string]any{"name": "mcp_testserver_echo", "arguments": json.RawMessage(args)})
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				var res mcp.CallToolResult
				if err := c.Peer().Call(ctx, mcp.MethodToolsCall, json.RawMessage(params), &res); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("modern"+size.name, func(b *testing.B) {
			m := e.modern(b, "claude")
			params, _ := json.Marshal(m.params(mcp.Version20260728, "", map[string]any{"name": "mcp_testserver_echo", "arguments": json.RawMessage(args)}))
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				var res mcp.CallToolResult
				if err := m.peer.Call(ctx, mcp.MethodToolsCall, json.RawMessage(params), &res); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// The session httpserver keeps for an agent's modern requests
// (httpserver.Session.Modern) serves them as a stdio session does, and
// only them: a request without _meta, or an initialize, is refused.
func TestModernOnlySession(t *testing.T) {
	e := newEnv(t, nil)
	m := e.modernWith(t, "claude", func(conn mcp.Conn) { e.g.ServeModern(e.ctx, conn, "claude") })
	ctx := ctxT(t)
	raw, err := m.call(ctx, mcp.MethodToolsCall, map[string]any{"name": "mcp_testserver_echo", "arguments": map[string]string{"message": "hi"}})
	if err != nil || string(fields(t, raw)["resultType"]) != `"complete"` {
		t.Fatalf("a modern call: %v %s", err, raw)
	}
	var rerr *mcp.RPCError
	if err := m.peer.Call(ctx, mcp.MethodToolsList, nil, nil); !errors.As(err, &rerr) || rerr.Code != mcp.CodeInvalidRequest || !strings.Contains(rerr.Message, mcp.MetaProtocolVersion) {
		t.Errorf("a request without _meta: %v", err)
	}
	init := map[string]any{"protocolVersion": mcp.Version20251125, "capabilities": map[string]any{}, "clientInfo": map[string]string{"name": "x", "version": "1"}}
	if err := m.peer.Call(ctx, mcp.MethodInitialize, init, nil); !errors.As(err, &rerr) || rerr.Code != mcp.CodeInvalidRequest {
		t.Errorf("initialize: %v", err)
	}
}

// A modern call over HTTP is held to the Mcp-Param-* headers its tool's
// schema asks for (x-mcp-header) before it reaches the chain: a header
// that agrees passes, one that disagrees or is missing gets -32020 with
// 400, and the upstream never sees those.
func TestModernParamHeadersThroughGateway(t *testing.T) {
	upCtx, stopUp := context.WithCancel(context.Background())
	var upWG sync.WaitGroup
	e := newEnvOpts(t, func(c *config.Config) {
		c.Servers = append(c.Servers, &config.Server{Name: "hdr", Type: config.TypeStdio, Command: []string{"hdr"}, Enabled: true})
	}, func(o *engine.Options) {
		prev := o.Transport
		o.Transport = func(ctx context.Context, srv *config.Server) (mcp.Conn, error) {
			if srv.Command[0] != "hdr" {
				return prev(ctx, srv)
			}
			s := testserver.New(testserver.Options{Conformance: true})
			client, server := mcp.Pipe()
			upWG.Add(1)
			go func() { defer upWG.Done(); s.Serve(upCtx, server) }()
			return client, nil
		}
	})
	t.Cleanup(func() { stopUp(); upWG.Wait() }) // before the env's own: its leak check
	hh, err := e.g.HTTP(gateway.HTTPOptions{Agent: "claude"})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(hh)
	t.Cleanup(func() {
		hh.Close()
		srv.CloseClientConnections()
		srv.Close()
	})
	const tool = "mcp_hdr_test_header_param"
	post := func(region string, hdr string) (int, string) {
		t.Helper()
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + tool + `","arguments":{"region":"` + region + `"},` +
			`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`
		req, _ := http.NewRequestWithContext(ctxT(t), http.MethodPost, srv.URL+gateway.EndpointPath, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", mcp.Version20260728)
		req.Header.Set("Mcp-Method", mcp.MethodToolsCall)
		req.Header.Set("Mcp-Name", tool)
		if hdr != "" {
			req.Header.Set("Mcp-Param-Region", hdr)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for range 2 { // the second time from what was kept of the first
		if code, body := post("eu", "eu"); code != http.StatusOK || !strings.Contains(body, "Region: eu") {
			t.Fatalf("agreeing header: %d %s", code, body)
		}
		for _, hdr := range []string{"us", ""} {
			if code, body := post("eu", hdr); code != http.StatusBadRequest || !strings.Contains(body, `"code":-32020`) {
				t.Errorf("Mcp-Param-Region %q for region eu: %d %s", hdr, code, body)
			}
		}
	}
}
