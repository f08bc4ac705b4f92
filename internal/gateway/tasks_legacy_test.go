package gateway_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/config"
	"github.com/nexus-mcp/nexus/internal/engine"
)

// legacyTasks is an MCP 2025-11-25 server whose tool "confirm" runs only
// as a task and asks the client (elicitation/create, tagged with the
// related task) while the client's tasks/result waits, as that revision
// has a task ask.
type legacyTasks struct {
	peer *mcp.Peer

	mu     sync.Mutex
	status string
	result *mcp.CallToolResult
}

func (l *legacyTasks) HandleNotification(context.Context, string, json.RawMessage) {}

func (l *legacyTasks) HandleRequest(ctx context.Context, method string, params json.RawMessage) (any, error) {
	switch method {
	case mcp.MethodInitialize:
		return map[string]any{"protocolVersion": mcp.Version20251125, "serverInfo": map[string]string{"name": "legacy-tasks", "version": "1"},
			"capabilities": map[string]any{"tools": map[string]any{}, "tasks": map[string]any{"cancel": map[string]any{}, "requests": map[string]any{"tools": map[string]any{"call": map[string]any{}}}}}}, nil
	case mcp.MethodToolsList:
		return map[string]any{"tools": []mcp.Tool{{Name: "confirm", InputSchema: json.RawMessage(`{"type":"object"}`), Execution: json.RawMessage(`{"taskSupport":"required"}`)}}}, nil
	case mcp.MethodToolsCall:
		if mcp.Member(params, "task") == nil {
			return nil, &mcp.RPCError{Code: mcp.CodeMethodNotFound, Message: "confirm must be called as a task"}
		}
		l.mu.Lock()
		l.status = mcp.TaskInputRequired
		l.mu.Unlock()
		return map[string]any{"task": map[string]any{"taskId": "t1", "status": mcp.TaskWorking, "pollInterval": 1}}, nil
	case mcp.MethodTasksGet:
		l.mu.Lock()
		defer l.mu.Unlock()
		return map[string]any{"taskId": "t1", "status": l.status, "pollInterval": 1}, nil
	case mcp.MethodTasksResult:
		l.mu.Lock()
		st := l.status
		l.mu.Unlock()
		if st == mcp.TaskInputRequired {
			var r mcp.ElicitResult
			err := l.peer.Call(ctx, mcp.MethodElicitationCreate, map[string]any{"message": "Delete x?",
				"requestedSchema": map[string]any{"type": "object", "properties": map[string]any{"v": map[string]string{"type": "string"}}},
				"_meta":           map[string]any{"io.modelcontextprotocol/related-task": map[string]string{"taskId": "t1"}}}, &r)
			if err != nil {
				return nil, err
			}
			v, _ := r.Content["v"].(string)
			l.mu.Lock()
			l.status, l.result = mcp.TaskCompleted, &mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent("confirmed " + r.Action + " " + v)}}
			l.mu.Unlock()
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.result, nil
	case mcp.MethodTasksCancel:
		l.mu.Lock()
		defer l.mu.Unlock()
		l.status = mcp.TaskCancelled
		return map[string]any{"taskId": "t1", "status": l.status}, nil
	}
	return nil, mcp.MethodNotFound(method)
}

// A modern agent's task to a 2025-11-25 server's task: what the server
// asks during its task (a request to the client while tasks/result
// waits) waits in the agent's task as input_required, tasks/update
// answers it, the answer reaches the server, and tasks/get inlines the
// result.
func TestModernAgentLegacyTaskAsks(t *testing.T) {
	l := &legacyTasks{}
	e := newEnvOpts(t, func(c *config.Config) {
		c.Servers = append(c.Servers, &config.Server{Name: "ltasks", Type: config.TypeStdio, Command: []string{"ltasks"}, Enabled: true, Prefix: ptr("")})
	}, func(o *engine.Options) {
		prev := o.Transport
		o.Transport = func(ctx context.Context, srv *config.Server) (mcp.Conn, error) {
			if srv.Command[0] != "ltasks" {
				return prev(ctx, srv)
			}
			client, server := mcp.Pipe()
			l.peer = mcp.NewPeer(server, mcp.PeerOptions{Handler: l})
			l.peer.Start()
			t.Cleanup(func() { l.peer.Close() })
			return client, nil
		}
	})
	m := e.modern(t, "claude")
	m.caps = mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapability{Form: &struct{}{}}, Extensions: tasksExt}
	ctx := ctxT(t)
	id := m.startTask(t, ctx, "confirm", map[string]any{})
	d := m.taskUntil(t, ctx, id, status(mcp.TaskInputRequired))
	if len(d.InputRequests) != 1 {
		t.Fatalf("the task's questions: %+v", d.InputRequests)
	}
	var key string
	for k, q := range d.InputRequests {
		key = k
		if q.Method != mcp.MethodElicitationCreate || !strings.Contains(string(q.Params), "Delete x?") {
			t.Errorf("the question: %s %s", q.Method, q.Params)
		}
	}
	if _, err := m.call(ctx, mcp.MethodTasksUpdate, map[string]any{"taskId": id, "inputResponses": map[string]json.RawMessage{key: accept("yes")}}); err != nil {
		t.Fatal(err)
	}
	d = m.taskUntil(t, ctx, id, status("completed"))
	if !strings.Contains(string(d.Result), "confirmed accept yes") {
		t.Errorf("the task's result: %s", d.Result)
	}
}

// A modern agent that declares the tasks extension, calling a legacy
// server's tool that asks mid-call and is no task: the question is an
// input_required round, as for any modern call (it was refused as
// outside any call), and the retry completes the call, run once.
func TestModernTaskAgentBridgedRound(t *testing.T) {
	a := newAsker()
	e := bridgeEnv(t, a, nil, nil)
	m := e.modern(t, "claude")
	m.caps = mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapability{Form: &struct{}{}}, Extensions: tasksExt}
	ctx := ctxT(t)
	p := map[string]any{"name": "ask", "arguments": map[string]any{}}
	r := m.inputRequired(t, ctx, p)
	if q, ok := r.InputRequests["name"]; !ok || q.Method != mcp.MethodElicitationCreate {
		t.Fatalf("the round: %+v", r)
	}
	p["inputResponses"], p["requestState"] = map[string]json.RawMessage{"name": accept("z")}, r.RequestState
	raw, err := m.call(ctx, mcp.MethodToolsCall, p)
	if err != nil || !strings.Contains(string(raw), "hello accept:z") || !strings.Contains(string(raw), `"complete"`) {
		t.Fatalf("the retry: %v %s", err, raw)
	}
	if n := a.calls.Load(); n != 1 {
		t.Errorf("the tool ran %d times, want once", n)
	}
}
