package gateway_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/gateway"
	"github.com/nexus-mcp/nexus/internal/gateway/store"
)

// A retry whose state names another replica is forwarded to it over the
// store's bus, round after round: the call completes there, ran once,
// and a replay of a spent state is refused by the replica holding the
// call. Once that replica is gone, a retry gets the retryable error and
// the call does not run again.
func TestBridgeRelay(t *testing.T) {
	a := newAsker()
	e := bridgeEnv(t, a, nil, nil)
	st := store.NewMemory()
	t.Cleanup(func() { st.Close() })
	g1, m1, _, m2 := replicaPair(t, e, st)
	ctx := ctxT(t)

	p := map[string]any{"name": "twice", "arguments": map[string]any{}}
	r := m1.inputRequired(t, ctx, p)
	first := r.RequestState
	p["inputResponses"], p["requestState"] = map[string]json.RawMessage{"first": accept("a")}, r.RequestState
	r = m2.inputRequired(t, ctx, p) // the second round, asked on replica 1 through replica 2
	if _, ok := r.InputRequests["second"]; !ok {
		t.Fatalf("round 2 through the other replica: %+v", r)
	}
	p["inputResponses"], p["requestState"] = map[string]json.RawMessage{"second": accept("b")}, r.RequestState
	raw, err := m2.call(ctx, mcp.MethodToolsCall, p)
	if err != nil || !strings.Contains(string(raw), "accept:a accept:b") || !strings.Contains(string(raw), `"complete"`) {
		t.Fatalf("the last round through the other replica: %v %s", err, raw)
	}
	// Replayed through the other replica: the owner says it was used.
	p["inputResponses"], p["requestState"] = map[string]json.RawMessage{"first": accept("a")}, first
	_, err = m2.call(ctx, mcp.MethodToolsCall, p)
	var rerr *mcp.RPCError
	if !errors.As(err, &rerr) || rerr.Code != mcp.CodeInvalidParams || !strings.Contains(rerr.Message, "used already") {
		t.Errorf("a replay through the other replica: %v", err)
	}
	if n, ans := a.calls.Load(), a.answers.Load(); n != 1 || ans != 2 {
		t.Fatalf("the server saw %d calls and %d answers, want 1 and 2", n, ans)
	}

	// Nothing listens for the replica holding the call any more (it died,
	// as far as the bus can tell) between the attempts: the retry
	// elsewhere is told to retry, and the call is neither run again nor
	// spent (its own replica still completes it).
	ask := map[string]any{"name": "ask", "arguments": map[string]any{}}
	r = m1.inputRequired(t, ctx, ask)
	g1.Deafen()
	ask["inputResponses"], ask["requestState"] = map[string]json.RawMessage{"name": accept("x")}, r.RequestState
	_, err = m2.call(ctx, mcp.MethodToolsCall, ask)
	if !errors.As(err, &rerr) || rerr.Code != mcp.CodeInternalError || !strings.Contains(string(rerr.Data), `"retryable":true`) || !strings.Contains(rerr.Message, "gone") {
		t.Errorf("a retry whose replica is gone: %v", err)
	}
	if n, ans := a.calls.Load(), a.answers.Load(); n != 2 || ans != 2 {
		t.Errorf("the server saw %d calls and %d answers, want 2 and 2 (the last call once, unanswered)", n, ans)
	}
	if raw, err := m1.call(ctx, mcp.MethodToolsCall, ask); err != nil || !strings.Contains(string(raw), "hello accept:x") {
		t.Errorf("the retry on the replica holding the call: %v %s", err, raw)
	}
	if n := a.calls.Load(); n != 2 {
		t.Errorf("the server saw %d calls, want 2", n)
	}
}

// What reaches a replica's channel is untrusted: something that is not a
// bridge message is dropped, and a forged retry's state is opened and
// checked by the replica (it answers invalid params, nothing reaches the
// server).
func TestBridgeRelayUntrusted(t *testing.T) {
	a := newAsker()
	e := bridgeEnv(t, a, nil, nil)
	st := store.NewMemory()
	g := gateway.New(e.h, gateway.Options{StateKey: make([]byte, 32), ReplicaID: [8]byte{1}})
	g.Relay(st)
	t.Cleanup(func() { g.Close(); st.Close() })
	m := e.modernOn(t, g, "claude")
	m.caps = elicitCaps()
	ctx := ctxT(t)
	r := m.inputRequired(t, ctx, map[string]any{"name": "ask", "arguments": map[string]any{}})

	replies, stop, err := st.Subscribe(ctx, "bridge:ffffffffffffffff")
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	const owner = "bridge:0100000000000000"
	for _, junk := range []string{"not json", `{"k":"retry"}`, `{"k":"retry","id":"1","reply":"elsewhere"}`} {
		if n, err := st.Publish(ctx, owner, []byte(junk)); err != nil || n != 1 {
			t.Fatalf("publish: %d %v", n, err)
		}
	}
	tampered := []byte(r.RequestState)
	tampered[len(tampered)-3] ^= 1
	forged, _ := json.Marshal(map[string]any{"k": "retry", "id": "forged", "reply": "bridge:ffffffffffffffff", "until": time.Now().Add(time.Minute).UnixMilli(),
		"agent": "claude", "method": "tools/call", "target": "ask", "args": make([]byte, 16), "meta": json.RawMessage(`{}`),
		"input": json.RawMessage(`{"name":{"action":"accept","content":{"v":"forged"}}}`), "state": string(tampered)})
	if _, err := st.Publish(ctx, owner, forged); err != nil {
		t.Fatal(err)
	}
	var done struct {
		Kind  string        `json:"k"`
		ID    string        `json:"id"`
		Error *mcp.RPCError `json:"error"`
	}
	for done.Kind != "done" {
		select {
		case msg := <-replies:
			if err := json.Unmarshal(msg, &done); err != nil || done.ID != "forged" {
				t.Fatalf("an answer to no forwarded retry: %s", msg)
			}
		case <-ctx.Done():
			t.Fatal("no answer to the forged retry")
		}
	}
	if done.Error == nil || done.Error.Code != mcp.CodeInvalidParams || !strings.Contains(done.Error.Message, "integrity") {
		t.Errorf("the forged retry's answer: %+v", done.Error)
	}
	if n := a.answers.Load(); n != 0 {
		t.Errorf("the server got %d answers", n)
	}
	// The call still waits for its real retry.
	raw, err := m.call(ctx, mcp.MethodToolsCall, map[string]any{"name": "ask", "arguments": map[string]any{},
		"inputResponses": map[string]json.RawMessage{"name": accept("real")}, "requestState": r.RequestState})
	if err != nil || !strings.Contains(string(raw), "hello accept:real") {
		t.Errorf("the real retry: %v %s", err, raw)
	}
}

// A later round's progress and log message, of a retry forwarded to the
// replica holding the call, come back over the bus to the replica the
// retry reached, and go to the agent on that request, with its token;
// the first attempt's replica sends none.
func TestBridgeRelayNotes(t *testing.T) {
	a := newAsker()
	e := bridgeEnv(t, a, nil, nil)
	st := store.NewMemory()
	t.Cleanup(func() { st.Close() })
	_, m1, _, m2 := replicaPair(t, e, st)
	ctx := ctxT(t)
	r := m1.inputRequired(t, ctx, map[string]any{"name": "report", "arguments": map[string]any{}, "_meta": mcp.Meta{"progressToken": json.RawMessage(`"first"`)}})
	raw, err := m2.callAt(ctx, mcp.Version20260728, "info", mcp.MethodToolsCall, reportRetry(r.RequestState, "y", "forwarded"))
	if err != nil || !strings.Contains(string(raw), "reported accept:y") {
		t.Fatalf("the forwarded retry: %v %s", err, raw)
	}
	progressAndLog(t, m2, "forwarded", "y")
	// The first replica's agent connection heard nothing of it: a call
	// on it is answered after anything sent before.
	if _, err := m1.call(ctx, mcp.MethodToolsCall, map[string]any{"name": "plain", "arguments": map[string]any{}}); err != nil {
		t.Fatal(err)
	}
	for len(m1.notes) > 0 {
		if n := <-m1.notes; n.method == mcp.NotificationProgress || n.method == mcp.NotificationMessage {
			t.Errorf("the first attempt's replica sent %s %s", n.method, n.params)
		}
	}
}

// replicaPair is two gateway replicas over e's host sharing a state key,
// each with a modern agent "claude" that declares elicitation; with st,
// they relay retries to each other over its bus (nil: they do not).
func replicaPair(t *testing.T, e *env, st store.Store) (g1 *gateway.Gateway, m1 *modernAgent, g2 *gateway.Gateway, m2 *modernAgent) {
	t.Helper()
	key := make([]byte, 32)
	g1 = gateway.New(e.h, gateway.Options{StateKey: key, ReplicaID: [8]byte{1}})
	g2 = gateway.New(e.h, gateway.Options{StateKey: key, ReplicaID: [8]byte{2}})
	if st != nil {
		g1.Relay(st)
		g2.Relay(st)
	}
	t.Cleanup(func() { g1.Close(); g2.Close() })
	m1, m2 = e.modernOn(t, g1, "claude"), e.modernOn(t, g2, "claude")
	m1.caps, m2.caps = elicitCaps(), elicitCaps()
	return g1, m1, g2, m2
}
