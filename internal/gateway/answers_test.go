package gateway_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/audit"
	"github.com/nexus-mcp/nexus/sdk/event"
)

// Every input request and every answer passes the chain (issue 38, item
// 4), whichever way the answer comes: these tests send one by each path
// (see the map in doc.go), with links that refuse a question or an
// answer (decidedEnv: the policy "count" refuses a question denyAsk
// names, the sanitizer "no-mallory" an answer from mallory), and check
// that the upstream never got what the chain refused, and that the audit
// log has the decision under the call's id.

// callRecords are the audit records of the calls of tool on server, in
// order: each first attempt's record, and those under its call id.
func (d *decidedEnv) callRecords(t *testing.T, ctx context.Context, server, tool string) []callLog {
	t.Helper()
	var out []callLog
	recs := d.records(t, ctx)
	for _, r := range recs {
		if r.Method != mcp.MethodToolsCall || r.Server != server || r.Tool != tool || hasFlag(r, "retry") {
			continue
		}
		if r.Call == "" {
			t.Fatalf("a call's record names no call: %+v", r)
		}
		c := callLog{call: r}
		for _, x := range recs {
			if x.Call == r.Call && x.Method != mcp.MethodToolsCall {
				c.under = append(c.under, x)
			}
		}
		out = append(out, c)
	}
	return out
}

type callLog struct {
	call  audit.Record
	under []audit.Record // the questions and answers audited under its id
}

// decided is how many records under the call are of elicitation/create
// with the decision and link (and flagged "answer" when answer).
func (c callLog) decided(decision, link string, answer bool) int {
	n := 0
	for _, r := range c.under {
		if r.Method == mcp.MethodElicitationCreate && r.Decision == decision && r.Link == link && hasFlag(r, "answer") == answer {
			n++
		}
	}
	return n
}

func toolResult(t *testing.T, raw json.RawMessage) mcp.CallToolResult {
	t.Helper()
	var res mcp.CallToolResult
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatalf("not a tool result: %v: %s", err, raw)
	}
	return res
}

// A modern upstream, answers without a requestState: they answer no
// question the chain judged, so they never go up as they came (the
// asker would take them: it reads answers with or without a state). The
// first attempt goes without them; once the chain has judged the
// questions the upstream brings back, answers to every one of them make
// a retry at once, as the agent's would be: each passes the sanitizers
// with its question, and keys never asked are ignored. An answer the
// sanitizers refuse, and an answer to a question the policy refuses to
// ask, never reach the upstream. With the tasks extension declared (the
// call goes by modernTaskCall) too.
func TestStatelessAnswersJudgedFirst(t *testing.T) {
	d := newDecidedEnv(t)
	ctx := ctxT(t)
	for i, caps := range []mcp.ClientCapabilities{elicitCaps(), {Elicitation: &mcp.ElicitationCapability{Form: &struct{}{}}, Extensions: tasksExt}} {
		d.denyAsk.Store("")
		m := d.modern(t, "claude")
		m.caps = caps
		call := func(answer json.RawMessage) mcp.CallToolResult {
			t.Helper()
			raw, err := m.call(ctx, mcp.MethodToolsCall, map[string]any{"name": "report", "arguments": map[string]any{},
				"inputResponses": map[string]json.RawMessage{"elicitation.create-0": answer, "never-asked": accept("x")}})
			if err != nil {
				t.Fatalf("%d: %v", i, err)
			}
			return toolResult(t, raw)
		}
		if res := call(accept("a")); res.IsError || len(res.Content) != 1 || res.Content[0].Text != "reported accept:a" {
			t.Errorf("%d: an answer with no state, the question allowed: %+v", i, res)
		}
		if res := call(accept("mallory")); !res.IsError || len(res.Content) != 1 || !strings.Contains(res.Content[0].Text, "mallory may not answer") {
			t.Errorf("%d: an answer with no state the sanitizers refuse: %+v", i, res)
		}
		// The policy refuses the question: the agent's answer to it,
		// sent before it was asked, must not reach the upstream either.
		d.denyAsk.Store("Your name?")
		if res := call(accept("b")); !res.IsError || len(res.Content) != 1 || !strings.Contains(res.Content[0].Text, "not to be asked") {
			t.Errorf("%d: an answer to a question the policy refuses: %+v", i, res)
		}
	}
	if n := d.a.answers.Load(); n != 2 {
		t.Errorf("the upstream took %d answers sent without a requestState, want the 2 the chain let through", n)
	}
	d.mu.Lock()
	answers := strings.Join(d.answers, "\n")
	d.mu.Unlock()
	want := strings.Repeat(`"Your name?" => {"action":"accept","content":{"v":"a"}}`+"\n"+`"Your name?" => {"action":"accept","content":{"v":"mallory"}}`+"\n", 2)
	if answers+"\n" != want {
		t.Errorf("the sanitizers saw the answers as:\n%s\nwant\n%s", answers, want)
	}
	calls := d.callRecords(t, ctx, "mod", "report")
	if len(calls) != 6 {
		t.Fatalf("%d calls of report audited, want 6", len(calls))
	}
	for i, c := range calls {
		if !hasFlag(c.call, "input_required") {
			t.Errorf("call %d: %+v, want it flagged input_required", i, c.call)
		}
		// Under the call's id: its question judged, then its answer (a
		// refused question has none).
		var ok bool
		switch i % 3 {
		case 0:
			ok = c.decided(event.Allow, "", false) == 1 && c.decided(event.Allow, "", true) == 1
		case 1:
			ok = c.decided(event.Allow, "", false) == 1 && c.decided(event.Deny, "no-mallory", true) == 1
		case 2:
			ok = c.decided(event.Deny, "count", false) == 1 && len(c.under) == 1
		}
		if !ok {
			t.Errorf("call %d: want its question and its answer judged under its id: %+v", i, c.under)
		}
	}
}

// A legacy upstream, answers the request brought before the server
// asked (early, no requestState): the bridge gives one to the server's
// question of its key only as that server request's answer, so the
// question passes the policies first and the answer the sanitizers,
// audited under the call, as a retry's answer does.
func TestEarlyAnswersPassTheChain(t *testing.T) {
	d := newDecidedEnv(t)
	m := d.modern(t, "bridged")
	m.caps = elicitCaps()
	ctx := ctxT(t)
	call := func(answers map[string]json.RawMessage) (json.RawMessage, error) {
		return m.call(ctx, mcp.MethodToolsCall, map[string]any{"name": "mcp_leg_twice", "arguments": map[string]any{}, "inputResponses": answers})
	}
	// Both answered early: the call ends in one attempt, each answer
	// seen by the sanitizers with its question.
	raw, err := call(map[string]json.RawMessage{"first": accept("a"), "second": accept("b")})
	if res := toolResult(t, raw); err != nil || res.IsError || len(res.Content) != 1 || res.Content[0].Text != "accept:a accept:b" {
		t.Fatalf("early answers: %v %s", err, raw)
	}
	d.mu.Lock()
	answers := strings.Join(d.answers, "\n")
	d.mu.Unlock()
	if want := `"Your first?" => {"action":"accept","content":{"v":"a"}}` + "\n" + `"Your second?" => {"action":"accept","content":{"v":"b"}}`; answers != want {
		t.Errorf("the sanitizers saw the early answers as:\n%s\nwant\n%s", answers, want)
	}
	// Refused by the sanitizer: the server gets a refusal, not mallory.
	if raw, err := call(map[string]json.RawMessage{"first": accept("mallory")}); err == nil && strings.Contains(string(raw), "mallory") && !toolResult(t, raw).IsError {
		t.Errorf("a refused early answer: %s", raw)
	}
	// An answer to a question the policy refuses: the question never
	// reaches the bridge, so neither does the answer the server.
	d.denyAsk.Store("Your first?")
	if raw, err := call(map[string]json.RawMessage{"first": accept("c")}); err == nil && !toolResult(t, raw).IsError {
		t.Errorf("an early answer to a refused question: %s", raw)
	}
	if n := d.leg.answers.Load(); n != 2 {
		t.Errorf("the upstream took %d answers, want the first call's 2", n)
	}
	calls := d.callRecords(t, ctx, "leg", "twice")
	if len(calls) != 3 {
		t.Fatalf("%d calls of twice audited, want 3", len(calls))
	}
	if n := calls[0].decided(event.Allow, "", false); n != 2 {
		t.Errorf("the answered call: %d questions allowed under its id, want 2: %+v", n, calls[0].under)
	}
	if n := calls[1].decided(event.Deny, "no-mallory", false); n != 1 {
		t.Errorf("the call answered by mallory: %d questions refused by no-mallory under its id, want 1: %+v", n, calls[1].under)
	}
	if n := calls[2].decided(event.Deny, "count", false); n != 1 {
		t.Errorf("the call whose question is refused: %d refused by count under its id, want 1: %+v", n, calls[2].under)
	}
}

// A legacy upstream, answers in a retry: the sanitizer's refusal keeps
// the answer from the waiting server request, audited under the call.
func TestBridgeRetryAnswerRefused(t *testing.T) {
	d := newDecidedEnv(t)
	m := d.modern(t, "bridged")
	m.caps = elicitCaps()
	ctx := ctxT(t)
	p := map[string]any{"name": "mcp_leg_twice", "arguments": map[string]any{}}
	r := m.inputRequired(t, ctx, p)
	if _, ok := r.InputRequests["first"]; !ok {
		t.Fatalf("round 1: %+v", r)
	}
	p["inputResponses"], p["requestState"] = map[string]json.RawMessage{"first": accept("mallory")}, r.RequestState
	if raw, err := m.call(ctx, mcp.MethodToolsCall, p); err == nil && !toolResult(t, raw).IsError {
		t.Errorf("a refused answer in a retry: %s", raw)
	}
	if n := d.leg.answers.Load(); n != 0 {
		t.Errorf("the upstream took %d answers, want none", n)
	}
	calls := d.callRecords(t, ctx, "leg", "twice")
	if len(calls) != 1 || calls[0].decided(event.Deny, "no-mallory", false) != 1 {
		t.Errorf("want one call with its answer refused by no-mallory under its id: %+v", calls)
	}
}

// A modern upstream's task, answered by tasks/update: each answer passes
// the sanitizers with its question before it goes upstream; a refused
// one fails the call, and the upstream's tool never gets it.
func TestTaskUpdateAnswerRefused(t *testing.T) {
	d := newDecidedEnv(t)
	m := d.modern(t, "claude")
	m.caps = mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapability{Form: &struct{}{}}, Extensions: tasksExt}
	ctx := ctxT(t)
	id := m.startTask(t, ctx, "mcp_modern_confirm_delete", map[string]any{"filename": "a.txt"})
	parked := m.taskUntil(t, ctx, id, status(mcp.TaskInputRequired))
	answers := map[string]any{}
	for k := range parked.InputRequests {
		answers[k] = map[string]any{"action": "accept", "content": map[string]any{"confirm": true, "by": "mallory"}}
	}
	if len(answers) != 1 {
		t.Fatalf("input_required: %+v", parked)
	}
	if _, err := m.call(ctx, mcp.MethodTasksUpdate, map[string]any{"taskId": id, "inputResponses": answers}); err != nil {
		t.Fatal(err)
	}
	done := m.taskUntil(t, ctx, id, func(d mcp.DetailedTask) bool { return d.Status != mcp.TaskInputRequired && d.Status != mcp.TaskWorking })
	if strings.Contains(string(done.Result), "Deleted") {
		t.Errorf("the upstream took a refused answer: %+v", done)
	}
	calls := d.callRecords(t, ctx, "modern", "confirm_delete")
	if len(calls) != 1 || calls[0].decided(event.Allow, "", false) != 1 || calls[0].decided(event.Deny, "no-mallory", true) != 1 {
		t.Errorf("want one call with its question allowed and its answer refused by no-mallory under its id: %+v", calls)
	}
}

// A legacy server's question after a retry, refused by the policy: the
// server gets the refusal, and the audit record names the call, though
// the question never reached the bridge that knows it (engine's CallOf).
func TestBridgeQuestionRefusedAudited(t *testing.T) {
	d := newDecidedEnv(t)
	m := d.modern(t, "bridged")
	m.caps = elicitCaps()
	ctx := ctxT(t)
	d.denyAsk.Store("Your second?")
	p := map[string]any{"name": "mcp_leg_twice", "arguments": map[string]any{}}
	r := m.inputRequired(t, ctx, p)
	p["inputResponses"], p["requestState"] = map[string]json.RawMessage{"first": accept("a")}, r.RequestState
	if raw, err := m.call(ctx, mcp.MethodToolsCall, p); err == nil && !toolResult(t, raw).IsError {
		t.Errorf("a call whose second question is refused: %s", raw)
	}
	calls := d.callRecords(t, ctx, "leg", "twice")
	if len(calls) != 1 || calls[0].decided(event.Allow, "", false) != 1 || calls[0].decided(event.Deny, "count", false) != 1 {
		t.Errorf("want one call with its first question allowed and its second refused by count under its id: %+v", calls)
	}
}

// A legacy agent in front of a modern upstream: the host fulfils the
// upstream's input_required by asking the agent over its session, and
// the agent's answer passes the sanitizers before the retry goes
// upstream; a refused one never does. (A legacy call has no call id:
// the refusal is the call's own record's, and the answer's.)
func TestLegacyAgentAnswerRefused(t *testing.T) {
	d := newDecidedEnv(t)
	c := d.connect("claude", mcp.ClientOptions{Elicitation: func(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"v": "mallory"}}, nil
	}})
	ctx := ctxT(t)
	if res, err := c.CallTool(ctx, "report", json.RawMessage(`{}`), nil); err == nil && !res.IsError {
		t.Errorf("a call answered by mallory: %+v", res)
	}
	if n := d.a.answers.Load(); n != 0 {
		t.Errorf("the upstream took %d answers, want none", n)
	}
	denied := 0
	for _, r := range d.records(t, ctx) {
		if r.Method == mcp.MethodElicitationCreate && r.Decision == event.Deny && r.Link == "no-mallory" {
			denied++
		}
	}
	if denied != 1 {
		t.Errorf("%d refused answers audited, want 1", denied)
	}
}
