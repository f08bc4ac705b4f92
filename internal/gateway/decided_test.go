package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/audit"
	"github.com/nexus-mcp/nexus/internal/config"
	"github.com/nexus-mcp/nexus/internal/engine"
	"github.com/nexus-mcp/nexus/internal/policy"
	"github.com/nexus-mcp/nexus/sdk/event"
)

// decidedEnv is a host in front of the asker serving only MCP 2026-07-28
// (server "mod": it asks through input_required rounds, and runs its
// tool again on each retry), and of another asker serving only
// 2025-11-25 (server "leg", prefixed, agent "bridged"'s alone: it asks
// mid-call), and of the test
// server's conformance fixtures, tasks among them ("modern"), with links that
// count and change what they see, and an audit log.
type decidedEnv struct {
	*env
	a       *asker
	leg     *asker
	path    string
	aw      *audit.Writer
	decided atomic.Int64 // tools/call events the policies saw
	denyAsk atomic.Value // string: the policy refuses an elicitation/create whose params contain it

	mu      sync.Mutex
	answers []string       // elicitation answers the sanitizers saw: params + " => " + result
	seen    map[string]int // events the policies saw, by method
}

// count is how many events of method the policies saw.
func (d *decidedEnv) count(method string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.seen[method]
}

func newDecidedEnv(t *testing.T) *decidedEnv {
	t.Helper()
	d := &decidedEnv{a: newAsker(), leg: newAsker(), path: filepath.Join(t.TempDir(), "audit.jsonl"), seen: map[string]int{}}
	aw, err := audit.Open(audit.Options{Path: d.path})
	if err != nil {
		t.Fatal(err)
	}
	d.aw = aw
	sctx, stop := context.WithCancel(context.Background())
	allow := event.Decision{Action: event.Allow}
	links := []policy.Entry{
		// A policy that counts the decisions on calls, and changes the
		// arguments: the retries must send what it left.
		{Kind: policy.KindPolicy, Link: policy.Func{N: "count", F: func(ctx context.Context, e *event.Event) (event.Decision, error) {
			d.mu.Lock()
			d.seen[e.Method]++
			d.mu.Unlock()
			switch e.Method {
			case mcp.MethodToolsCall:
				d.decided.Add(1)
			case mcp.MethodPromptsGet, mcp.MethodResourcesRead:
			case mcp.MethodElicitationCreate:
				if deny, _ := d.denyAsk.Load().(string); deny != "" && strings.Contains(string(e.Params), deny) {
					return event.Decision{Action: event.Deny, Reason: "not to be asked"}, nil
				}
				return allow, nil
			default:
				return allow, nil
			}
			if strings.Contains(string(e.Params), `"raw"`) {
				return event.Decision{Action: event.Modify, Params: json.RawMessage(strings.ReplaceAll(string(e.Params), `"raw"`, `"policy"`))}, nil
			}
			return allow, nil
		}}},
		// A sanitizer of elicitation answers: it sees each with the
		// question it answers, and refuses mallory.
		{Kind: policy.KindSanitizer, Link: policy.Func{N: "no-mallory", F: func(ctx context.Context, e *event.Event) (event.Decision, error) {
			if e.Method != mcp.MethodElicitationCreate {
				return allow, nil
			}
			d.mu.Lock()
			d.answers = append(d.answers, string(mcp.Member(e.Params, "message"))+" => "+string(e.Result))
			d.mu.Unlock()
			if strings.Contains(string(e.Result), "mallory") {
				return event.Decision{Action: event.Deny, Reason: "mallory may not answer"}, nil
			}
			return allow, nil
		}}},
	}
	d.env = newEnvOpts(t, func(c *config.Config) {
		c.Servers = append(c.Servers, &config.Server{Name: "mod", Type: config.TypeStdio, Command: []string{"mod"}, Enabled: true, Prefix: ptr("")},
			&config.Server{Name: "leg", Type: config.TypeStdio, Command: []string{"leg"}, Enabled: true})
		withModernUpstream(c)
		// leg's resource and prompt have mod's names: only agent
		// "bridged" sees leg, and claude every other server.
		c.Agents[0].Servers = []string{"probe", "testserver", "mod", "modern"}
		c.Agents = append(c.Agents, &config.Agent{Name: "bridged", Permission: "yolo", Servers: []string{"leg"}})
	}, func(o *engine.Options) {
		o.Audit, o.Links = aw, links
		prev := o.Transport
		o.Transport = func(ctx context.Context, srv *config.Server) (mcp.Conn, error) {
			var s *mcp.Server
			switch srv.Command[0] {
			case "mod":
				s = d.a.serverWith(mcp.ServerOptions{ModernOnly: true})
			case "leg":
				s = d.leg.server()
			default:
				return prev(ctx, srv)
			}
			client, server := mcp.Pipe()
			go s.Serve(sctx, server)
			return client, nil
		}
	})
	// Before the env's own cleanup, which counts goroutines.
	t.Cleanup(func() { stop(); aw.Close() })
	return d
}

// records are the audit log's records so far.
func (d *decidedEnv) records(t *testing.T, ctx context.Context) []audit.Record {
	t.Helper()
	if err := d.aw.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(d.path)
	if err != nil {
		t.Fatal(err)
	}
	var out []audit.Record
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var r audit.Record
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("an audit line does not decode: %v: %s", err, line)
		}
		out = append(out, r)
	}
	return out
}

func hasFlag(r audit.Record, f string) bool {
	for _, x := range r.Flags {
		if x == f {
			return true
		}
	}
	return false
}

// A modern agent's call through a modern upstream that asks twice is
// one decision over its three attempts: the policy sees it once, the
// audit log has one tools/call record (allowed, waiting for input), the
// questions and the answers each under its call id, and the retries
// send the arguments as the policy left them on the first attempt.
// Each answer passes the sanitizers with the question it answers.
func TestModernOneDecision(t *testing.T) {
	d := newDecidedEnv(t)
	m := d.modern(t, "claude")
	m.caps = elicitCaps()
	ctx := ctxT(t)
	p := map[string]any{"name": "twice", "arguments": map[string]any{"x": "raw"}}
	r := m.inputRequired(t, ctx, p)
	if len(r.InputRequests) != 1 || r.InputRequests["elicitation.create-0"].Method != mcp.MethodElicitationCreate {
		t.Fatalf("round 1: %+v", r)
	}
	p["inputResponses"], p["requestState"] = map[string]json.RawMessage{"elicitation.create-0": accept("a")}, r.RequestState
	r = m.inputRequired(t, ctx, p)
	if len(r.InputRequests) != 1 || r.InputRequests["elicitation.create-1"].Method != mcp.MethodElicitationCreate {
		t.Fatalf("round 2: %+v", r)
	}
	p["inputResponses"], p["requestState"] = map[string]json.RawMessage{"elicitation.create-1": accept("b")}, r.RequestState
	raw, err := m.call(ctx, mcp.MethodToolsCall, p)
	var res mcp.CallToolResult
	json.Unmarshal(raw, &res)
	if err != nil || res.IsError || len(res.Content) != 1 || res.Content[0].Text != "accept:a accept:b" {
		t.Fatalf("the call's end: %v %s", err, raw)
	}
	if n := d.decided.Load(); n != 1 {
		t.Errorf("the policy decided the call %d times over its three attempts, want once", n)
	}
	if n := d.a.calls.Load(); n != 3 {
		t.Errorf("the upstream ran %d attempts, want 3", n)
	}
	if got := d.a.args.Load(); got != `{"x":"policy"}` {
		t.Errorf("the last attempt reached the upstream with %v, want the arguments the policy left", got)
	}
	d.mu.Lock()
	answers := strings.Join(d.answers, "\n")
	d.mu.Unlock()
	if answers != `"Your first?" => {"action":"accept","content":{"v":"a"}}`+"\n"+`"Your second?" => {"action":"accept","content":{"v":"b"}}` {
		t.Errorf("the sanitizers saw the answers as:\n%s", answers)
	}

	var calls, retries, asks, answered int
	id := ""
	for _, rec := range d.records(t, ctx) {
		switch rec.Method {
		case mcp.MethodToolsCall:
			if hasFlag(rec, "retry") {
				// Each attempt that reaches the upstream is audited,
				// under the call's id, with no link deciding it anew.
				retries++
				if rec.Call != id || rec.Decision != event.Allow || rec.Link != "" {
					t.Errorf("a retry's record: %+v", rec)
				}
				continue
			}
			calls++
			id = rec.Call
			// The policy changed the arguments: modify, as any call it
			// changed; waiting for input, not failed.
			if rec.Decision != event.Modify || rec.Link != "count" || !hasFlag(rec, "input_required") || rec.Tool != "twice" {
				t.Errorf("the call's record: %+v", rec)
			}
		case mcp.MethodElicitationCreate:
			if hasFlag(rec, "answer") {
				answered++
			} else {
				asks++
			}
		}
	}
	if calls != 1 || retries != 2 || asks != 2 || answered != 2 || id == "" {
		t.Errorf("%d tools/call records (call %q), %d of retries, %d questions and %d answers; want 1 with an id, 2, 2 and 2", calls, id, retries, asks, answered)
	}
	for _, rec := range d.records(t, ctx) {
		if rec.Method == mcp.MethodElicitationCreate && rec.Call != id {
			t.Errorf("an elicitation's record names call %q, not the call's %q: %+v", rec.Call, id, rec)
		}
	}
}

// An answer the chain refuses refuses the call, audited: the agent gets
// the refusal as a tool result, and nothing reaches the upstream.
func TestModernAnswerRefused(t *testing.T) {
	d := newDecidedEnv(t)
	m := d.modern(t, "claude")
	m.caps = elicitCaps()
	ctx := ctxT(t)
	p := map[string]any{"name": "twice", "arguments": map[string]any{}}
	r := m.inputRequired(t, ctx, p)
	p["inputResponses"], p["requestState"] = map[string]json.RawMessage{"elicitation.create-0": accept("mallory")}, r.RequestState
	raw, err := m.call(ctx, mcp.MethodToolsCall, p)
	var res mcp.CallToolResult
	json.Unmarshal(raw, &res)
	if err != nil || !res.IsError || len(res.Content) != 1 || !strings.Contains(res.Content[0].Text, "mallory may not answer") || !strings.Contains(res.Content[0].Text, "elicitation.create-0") {
		t.Fatalf("a refused answer: %v %s", err, raw)
	}
	if n := d.a.calls.Load(); n != 1 {
		t.Errorf("the upstream ran %d attempts, want only the first", n)
	}
	denied := 0
	for _, rec := range d.records(t, ctx) {
		if rec.Method == mcp.MethodElicitationCreate && hasFlag(rec, "answer") && rec.Decision == event.Deny && rec.Link == "no-mallory" && rec.Call != "" {
			denied++
		}
	}
	if denied != 1 {
		t.Errorf("%d refused answers audited, want 1", denied)
	}
}

// A requestState that does not open, or was handed to another request,
// is refused before anything is decided or reaches the upstream; an
// answer to a question never asked too. A retry without the state is a
// call of its own: decided again. None skips a decision.
func TestModernRetryNeverSkipsDecision(t *testing.T) {
	d := newDecidedEnv(t)
	m := d.modern(t, "claude")
	m.caps = elicitCaps()
	ctx := ctxT(t)
	args := map[string]any{"x": "y"}
	r := m.inputRequired(t, ctx, map[string]any{"name": "twice", "arguments": args})
	answer := map[string]json.RawMessage{"elicitation.create-0": accept("a")}
	tampered := []byte(r.RequestState)
	tampered[len(tampered)/2] ^= 1
	var rerr *mcp.RPCError
	for what, bad := range map[string]map[string]any{
		"a tampered state":           {"name": "twice", "arguments": args, "requestState": string(tampered), "inputResponses": answer},
		"other arguments":            {"name": "twice", "arguments": map[string]any{"x": "z"}, "requestState": r.RequestState, "inputResponses": answer},
		"another tool":               {"name": "plain", "arguments": args, "requestState": r.RequestState, "inputResponses": answer},
		"an answer never asked for":  {"name": "twice", "arguments": args, "requestState": r.RequestState, "inputResponses": map[string]json.RawMessage{"elicitation.create-7": accept("a")}},
		"an answer of another shape": {"name": "twice", "arguments": args, "requestState": r.RequestState, "inputResponses": map[string]json.RawMessage{"elicitation.create-0": json.RawMessage(`{"role":"user"}`)}},
	} {
		if _, err := m.call(ctx, mcp.MethodToolsCall, bad); !errors.As(err, &rerr) || rerr.Code != mcp.CodeInvalidParams {
			t.Errorf("%s: %v", what, err)
		}
	}
	if n, c := d.decided.Load(), d.a.calls.Load(); n != 1 || c != 1 {
		t.Errorf("after the refused retries: %d decisions and %d upstream attempts, want 1 and 1", n, c)
	}
	d.mu.Lock()
	if len(d.answers) != 0 {
		t.Errorf("a refused retry's answer reached the sanitizers: %q", d.answers)
	}
	d.mu.Unlock()
	// Without its state the answers make another call, decided anew.
	if _, err := m.call(ctx, mcp.MethodToolsCall, map[string]any{"name": "twice", "arguments": args, "inputResponses": answer}); err != nil {
		t.Fatal(err)
	}
	if n := d.decided.Load(); n != 2 {
		t.Errorf("a retry without its state was decided %d times in all, want 2", n)
	}
}

// A prompt and a read that ask are one decision each over their two
// attempts too: the retry gets the prompt's arguments as the policy
// left them, and each is one audit record.
func TestModernOneDecisionReadAndPrompt(t *testing.T) {
	d := newDecidedEnv(t)
	m := d.modern(t, "claude")
	m.caps = elicitCaps()
	ctx := ctxT(t)
	for _, c := range []struct {
		method string
		p      map[string]any
		want   string
	}{
		{mcp.MethodPromptsGet, map[string]any{"name": "greet", "arguments": map[string]string{"who": "raw"}}, "greet policy from accept:a"},
		{mcp.MethodResourcesRead, map[string]any{"uri": "ask://name"}, "read by accept:a"},
	} {
		raw, err := m.call(ctx, c.method, c.p)
		var r mcp.InputRequiredResult
		json.Unmarshal(raw, &r)
		if err != nil || r.ResultType != mcp.ResultInputRequired || r.RequestState == "" || len(r.InputRequests) != 1 {
			t.Fatalf("%s: want input_required, got %v %s", c.method, err, raw)
		}
		for k := range r.InputRequests {
			c.p["inputResponses"] = map[string]json.RawMessage{k: accept("a")}
		}
		c.p["requestState"] = r.RequestState
		raw, err = m.call(ctx, c.method, c.p)
		if err != nil || !strings.Contains(string(raw), c.want) {
			t.Errorf("%s's retry: %v %s", c.method, err, raw)
		}
		if n := d.count(c.method); n != 1 {
			t.Errorf("the policy decided %s %d times over its two attempts, want once", c.method, n)
		}
	}
	// One decision's record each, and one record of the retry (flagged,
	// under the same call id: every attempt that reaches the upstream is
	// audited).
	n, retries, ids := map[string]int{}, map[string]int{}, map[string]string{}
	for _, rec := range d.records(t, ctx) {
		if rec.Method != mcp.MethodPromptsGet && rec.Method != mcp.MethodResourcesRead {
			continue
		}
		if hasFlag(rec, "retry") {
			retries[rec.Method]++
			if rec.Call != ids[rec.Method] || rec.Decision != event.Allow || rec.Link != "" {
				t.Errorf("the retry's record: %+v", rec)
			}
			continue
		}
		n[rec.Method]++
		ids[rec.Method] = rec.Call
		if !hasFlag(rec, "input_required") || rec.Call == "" {
			t.Errorf("the record: %+v", rec)
		}
	}
	if n[mcp.MethodPromptsGet] != 1 || n[mcp.MethodResourcesRead] != 1 || retries[mcp.MethodPromptsGet] != 1 || retries[mcp.MethodResourcesRead] != 1 {
		t.Errorf("records: %v, retries %v, want one of each", n, retries)
	}
}

// A modern upstream's requestState can be replayed until it expires (any
// replica takes it, so none can tell it was used): each replay runs the
// upstream again without a new decision, and each is audited, flagged
// "retry" under the call's id, so none goes unrecorded.
func TestModernReplayAudited(t *testing.T) {
	d := newDecidedEnv(t)
	m := d.modern(t, "claude")
	m.caps = elicitCaps()
	ctx := ctxT(t)
	// report, not ask: ask waits for its cancellation when it cannot
	// finish.
	r := m.inputRequired(t, ctx, map[string]any{"name": "report", "arguments": map[string]any{}})
	retry := map[string]any{"name": "report", "arguments": map[string]any{}, "requestState": r.RequestState,
		"inputResponses": map[string]json.RawMessage{"elicitation.create-0": accept("a")}}
	for i := range 2 {
		if raw, err := m.call(ctx, mcp.MethodToolsCall, retry); err != nil || !strings.Contains(string(raw), "reported accept:a") {
			t.Fatalf("attempt %d: %v %s", i+2, err, raw)
		}
	}
	if n, c := d.decided.Load(), d.a.calls.Load(); n != 1 || c != 3 {
		t.Errorf("%d decisions and %d upstream runs, want 1 and 3", n, c)
	}
	id, retries := "", 0
	for _, rec := range d.records(t, ctx) {
		if rec.Method != mcp.MethodToolsCall {
			continue
		}
		switch {
		case !hasFlag(rec, "retry") && id == "":
			id = rec.Call
		case hasFlag(rec, "retry") && rec.Call == id && id != "":
			retries++
		default:
			t.Errorf("a record of another call: %+v", rec)
		}
	}
	if retries != 2 {
		t.Errorf("%d retry records under call %q, want 2 (the retry and its replay)", retries, id)
	}
}
