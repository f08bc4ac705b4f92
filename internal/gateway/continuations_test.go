package gateway_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/nexus-mcp/nexus/host/mcp"
)

// A call waiting for its agent's input (MRTR) is listed, with its agent,
// server, round and what it waits on, and can be ended as the console
// does: it leaves the list, its upstream call is cancelled, and a retry
// with its state is told it was ended.
func TestContinuations(t *testing.T) {
	a := newAsker()
	e := bridgeEnv(t, a, nil, nil)
	m := e.modern(t, "claude")
	m.caps = elicitCaps()
	ctx := ctxT(t)
	if n := len(e.g.Continuations()); n != 0 {
		t.Fatalf("%d continuations before any call", n)
	}
	r := m.inputRequired(t, ctx, map[string]any{"name": "ask", "arguments": map[string]any{}})
	list := e.g.Continuations()
	if len(list) != 1 || list[0].Agent != "claude" || list[0].Server != "asker" || list[0].Round != 1 ||
		len(list[0].Asks) != 1 || list[0].Asks[0] != mcp.MethodElicitationCreate || len(list[0].ID) != 32 {
		t.Fatalf("continuations: %+v", list)
	}
	if e.g.EndContinuation(strings.Repeat("0", 32)) {
		t.Error("ended a call that does not wait")
	}
	if !e.g.EndContinuation(list[0].ID) {
		t.Fatal("the waiting call was not ended")
	}
	if e.g.EndContinuation(list[0].ID) {
		t.Error("a call was ended twice")
	}
	select {
	case <-a.cancelled:
	case <-ctx.Done():
		t.Fatal("the ended call was not cancelled upstream")
	}
	if n := len(e.g.Continuations()); n != 0 {
		t.Errorf("%d continuations after the end", n)
	}
	_, err := m.call(ctx, mcp.MethodToolsCall, map[string]any{"name": "ask", "arguments": map[string]any{},
		"inputResponses": map[string]json.RawMessage{"name": accept("late")}, "requestState": r.RequestState})
	var rerr *mcp.RPCError
	if !errors.As(err, &rerr) || rerr.Code != mcp.CodeInvalidParams || !strings.Contains(rerr.Message, "ended in the gateway's console") {
		t.Errorf("a retry of the ended call: %v", err)
	}
	if n := a.answers.Load(); n != 0 {
		t.Errorf("the server got %d answers", n)
	}
}
