package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/config"
)

var tasksExt = map[string]json.RawMessage{mcp.ExtensionTasks: json.RawMessage(`{}`)}

// withModernUpstream adds "modern": the test server's conformance
// fixtures (task tools among them), serving MCP 2026-07-28 alone.
func withModernUpstream(c *config.Config) {
	c.Servers = append(c.Servers, &config.Server{Name: "modern", Type: config.TypeStdio, Command: []string{"modern"}, Enabled: true})
}

// taskUntil polls tasks/get until ok says the task will do (15 s at most).
func (m *modernAgent) taskUntil(t *testing.T, ctx context.Context, id string, ok func(mcp.DetailedTask) bool) mcp.DetailedTask {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		raw, err := m.call(ctx, "tasks/get", map[string]any{"taskId": id})
		if err != nil {
			t.Fatalf("tasks/get %s: %v", id, err)
		}
		var d mcp.DetailedTask
		if err := json.Unmarshal(raw, &d); err != nil {
			t.Fatal(err)
		}
		if d.ResultType != mcp.ResultComplete || d.TaskID != id {
			t.Fatalf("tasks/get: %s", raw)
		}
		if ok(d) {
			return d
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s never came to the state wanted; last: %s", id, raw)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func status(s string) func(mcp.DetailedTask) bool {
	return func(d mcp.DetailedTask) bool { return d.Status == s }
}

func (m *modernAgent) startTask(t *testing.T, ctx context.Context, tool string, args map[string]any) string {
	t.Helper()
	raw, err := m.call(ctx, mcp.MethodToolsCall, map[string]any{"name": tool, "arguments": args})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	var d mcp.DetailedTask
	json.Unmarshal(raw, &d)
	if d.ResultType != mcp.ResultTask || len(d.TaskID) < 32 || d.Status != mcp.TaskWorking || d.TTLMs == nil || d.Result != nil {
		t.Fatalf("%s: not a CreateTaskResult: %s", tool, raw)
	}
	return d.TaskID
}

// A modern agent through the gateway to a modern upstream's task tools:
// the gateway answers with a task of its own, its question waits for
// tasks/update, its result is inlined, cancel cancels it upstream.
func TestModernAgentTasks(t *testing.T) {
	e := newEnv(t, withModernUpstream)
	m := e.modern(t, "claude")
	m.caps = mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapability{}, Extensions: tasksExt}
	ctx := ctxT(t)

	raw, err := m.call(ctx, mcp.MethodServerDiscover, nil)
	if err != nil || !strings.Contains(string(raw), `"extensions":{"io.modelcontextprotocol/tasks":{}}`) {
		t.Fatalf("discover: %s %v", raw, err)
	}

	id := m.startTask(t, ctx, "mcp_modern_confirm_delete", map[string]any{"filename": "a.txt"})
	parked := m.taskUntil(t, ctx, id, status(mcp.TaskInputRequired))
	if len(parked.InputRequests) != 1 {
		t.Fatalf("input_required without one question: %+v", parked)
	}
	answers := map[string]any{"never-asked": map[string]any{"action": "accept"}}
	for k, q := range parked.InputRequests {
		if q.Method != mcp.MethodElicitationCreate || !strings.Contains(string(q.Params), "a.txt") {
			t.Fatalf("question %s: %+v", k, q)
		}
		answers[k] = map[string]any{"action": "accept", "content": map[string]any{"confirm": true}}
	}
	ack, err := m.call(ctx, mcp.MethodTasksUpdate, map[string]any{"taskId": id, "inputResponses": answers})
	if err != nil || string(ack) != `{"resultType":"complete"}` {
		t.Fatalf("tasks/update: %s %v", ack, err)
	}
	done := m.taskUntil(t, ctx, id, status(mcp.TaskCompleted))
	var res mcp.CallToolResult
	if err := json.Unmarshal(done.Result, &res); err != nil || len(res.Content) == 0 || res.Content[0].Text != "Deleted a.txt" {
		t.Fatalf("completed: %+v %v", done, err)
	}

	// A tool error completes the task; it does not fail it.
	id = m.startTask(t, ctx, "mcp_modern_failing_job", nil)
	done = m.taskUntil(t, ctx, id, status(mcp.TaskCompleted))
	if !strings.Contains(string(done.Result), `"isError":true`) {
		t.Fatalf("failing_job: %+v", done)
	}
	// A JSON-RPC error fails it, inlined.
	id = m.startTask(t, ctx, "mcp_modern_protocol_error_job", nil)
	if d := m.taskUntil(t, ctx, id, status(mcp.TaskFailed)); d.Error == nil || d.Error.Code != mcp.CodeInternalError || d.Result != nil {
		t.Fatalf("protocol_error_job: %+v", d)
	}

	id = m.startTask(t, ctx, "mcp_modern_slow_compute", map[string]any{"seconds": 600})
	if ack, err := m.call(ctx, "tasks/cancel", map[string]any{"taskId": id}); err != nil || string(ack) != `{"resultType":"complete"}` {
		t.Fatalf("tasks/cancel: %s %v", ack, err)
	}
	m.taskUntil(t, ctx, id, status(mcp.TaskCancelled))

	var rerr *mcp.RPCError
	for _, tc := range []struct {
		method string
		params map[string]any
		code   int
	}{
		{"tasks/get", map[string]any{"taskId": "nope"}, mcp.CodeInvalidParams},
		{"tasks/update", map[string]any{"taskId": "nope", "inputResponses": map[string]any{}}, mcp.CodeInvalidParams},
		{"tasks/get", map[string]any{"taskId": strings.Repeat("x", mcp.MaxTaskIDBytes+1)}, mcp.CodeInvalidParams},
		{"tasks/get", map[string]any{}, mcp.CodeInvalidParams},
		{"tasks/result", map[string]any{"taskId": id}, mcp.CodeMethodNotFound},
		{"tasks/list", nil, mcp.CodeMethodNotFound},
	} {
		if _, err := m.call(ctx, tc.method, tc.params); !errors.As(err, &rerr) || rerr.Code != tc.code {
			t.Errorf("%s %v: %v, want code %d", tc.method, tc.params, err, tc.code)
		}
	}

	// Without the extension: no tasks/*, a required task tool refused
	// with -32021, an optional one called plainly.
	plain := e.modern(t, "claude")
	plain.caps = mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapability{}}
	if _, err := plain.call(ctx, "tasks/get", map[string]any{"taskId": id}); !errors.As(err, &rerr) || rerr.Code != mcp.CodeMissingRequiredCapability {
		t.Errorf("tasks/get without the extension: %v", err)
	}
	if _, err := plain.call(ctx, mcp.MethodToolsCall, map[string]any{"name": "mcp_modern_failing_job"}); !errors.As(err, &rerr) || rerr.Code != mcp.CodeMissingRequiredCapability ||
		!strings.Contains(string(rerr.Data), mcp.ExtensionTasks) {
		t.Errorf("a required task tool without the extension: %v", err)
	}
	if raw, err := plain.call(ctx, mcp.MethodToolsCall, map[string]any{"name": "mcp_modern_slow_compute", "arguments": map[string]any{"seconds": 0}}); err != nil ||
		!strings.Contains(string(raw), `"resultType":"complete"`) || strings.Contains(string(raw), "taskId") {
		t.Errorf("an optional task tool without the extension: %s %v", raw, err)
	}
}

// A modern agent's call of a 2025-11-25 upstream's tool that runs only as
// a (legacy) task: the host runs the upstream's task, the agent gets one
// of the extension's.
func TestModernAgentLegacyTaskUpstream(t *testing.T) {
	e := newEnv(t, func(c *config.Config) {
		c.Servers = append(c.Servers, &config.Server{Name: "jobs", Type: config.TypeStdio, Command: []string{"tasks"}, Enabled: true})
	})
	m := e.modern(t, "claude")
	m.caps = mcp.ClientCapabilities{Extensions: tasksExt}
	ctx := ctxT(t)
	id := m.startTask(t, ctx, "mcp_jobs_job", map[string]any{"n": 3})
	done := m.taskUntil(t, ctx, id, status(mcp.TaskCompleted))
	if !strings.Contains(string(done.Result), `job done {\"n\":3}`) {
		t.Fatalf("completed: %s", done.Result)
	}
}

// A legacy (2025-11-25) agent through the gateway to a modern upstream's
// task tools: its task-augmented call (tasks/get, tasks/result) and its
// plain call are served by the host following the upstream's task
// (tasks/get polling, tasks/update with the answer the agent gave to the
// elicitation the gateway sent it).
func TestLegacyAgentModernTasks(t *testing.T) {
	e := newEnv(t, withModernUpstream)
	var asked atomic.Int32
	c := e.connect("claude", mcp.ClientOptions{Elicitation: func(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
		asked.Add(1)
		if !strings.Contains(p.Message, "b.txt") {
			return nil, errors.New("unexpected question " + p.Message)
		}
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"confirm": true}}, nil
	}})
	ctx := ctxT(t)
	res, err := c.CallToolAsTask(ctx, "mcp_modern_confirm_delete", json.RawMessage(`{"filename":"b.txt"}`), nil)
	if err != nil || len(res.Content) == 0 || res.Content[0].Text != "Deleted b.txt" || asked.Load() != 1 {
		t.Fatalf("as a legacy task: %+v %v (asked %d)", res, err, asked.Load())
	}
	res, err = c.CallTool(ctx, "mcp_modern_failing_job", nil, nil)
	if err != nil || !res.IsError {
		t.Fatalf("a required task tool called plainly: %+v %v", res, err)
	}
}
