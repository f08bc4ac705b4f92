package taskfake

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/nexus-mcp/nexus/host/mcp"
)

// Server is an mcp.Handler whose tools can only be called as tasks, as
// MCP 2025-11-25 lets a server declare: "job" completes with its
// arguments after a few polls, "forever" runs until cancelled. A plain
// tools/call of either is refused with -32601, as the spec requires.
type Server struct {
	// OnCancel, if set, is told of each tasks/cancel.
	OnCancel func(taskID string)

	mu    sync.Mutex
	tasks map[string]*task
	n     int
}

type task struct {
	status string
	polls  int
	result *mcp.CallToolResult
	done   chan struct{}
}

func (f *Server) HandleNotification(context.Context, string, json.RawMessage) {}

func (f *Server) HandleRequest(ctx context.Context, method string, params json.RawMessage) (any, error) {
	var p struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
		Task      json.RawMessage `json:"task"`
		TaskID    string          `json:"taskId"`
	}
	json.Unmarshal(params, &p)
	required := json.RawMessage(`{"taskSupport":"required"}`)
	switch method {
	case mcp.MethodInitialize:
		return map[string]any{"protocolVersion": mcp.Version20251125, "serverInfo": map[string]string{"name": "fake-tasks", "version": "1"},
			"capabilities": map[string]any{"tools": map[string]any{}, "tasks": map[string]any{"cancel": map[string]any{}, "requests": map[string]any{"tools": map[string]any{"call": map[string]any{}}}}}}, nil
	case mcp.MethodToolsList:
		return map[string]any{"tools": []mcp.Tool{
			{Name: "job", InputSchema: json.RawMessage(`{"type":"object"}`), Execution: required},
			{Name: "forever", InputSchema: json.RawMessage(`{"type":"object"}`), Execution: required},
		}}, nil
	case mcp.MethodToolsCall:
		if len(p.Task) == 0 {
			return nil, &mcp.RPCError{Code: mcp.CodeMethodNotFound, Message: "tool " + p.Name + " must be called as a task"}
		}
		f.mu.Lock()
		if f.tasks == nil {
			f.tasks = map[string]*task{}
		}
		f.n++
		id := fmt.Sprintf("task-%d", f.n)
		t := &task{status: mcp.TaskWorking, done: make(chan struct{})}
		if p.Name == "job" {
			t.result = &mcp.CallToolResult{Content: []mcp.Content{{Type: mcp.ContentText, Text: "job done " + string(p.Arguments)}}}
		}
		f.tasks[id] = t
		f.mu.Unlock()
		return map[string]any{"task": map[string]any{"taskId": id, "status": mcp.TaskWorking, "pollInterval": 1}}, nil
	case mcp.MethodTasksGet:
		f.mu.Lock()
		defer f.mu.Unlock()
		t := f.tasks[p.TaskID]
		if t == nil {
			return nil, mcp.InvalidParams("unknown task %q", p.TaskID)
		}
		t.polls++
		if t.result != nil && t.polls >= 3 && t.status == mcp.TaskWorking {
			t.status = mcp.TaskCompleted
			close(t.done)
		}
		return map[string]any{"taskId": p.TaskID, "status": t.status, "pollInterval": 1}, nil
	case mcp.MethodTasksResult:
		f.mu.Lock()
		t := f.tasks[p.TaskID]
		f.mu.Unlock()
		if t == nil {
			return nil, mcp.InvalidParams("unknown task %q", p.TaskID)
		}
		select {
		case <-t.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if t.result == nil {
			return nil, &mcp.RPCError{Code: mcp.CodeInternalError, Message: "the task was cancelled"}
		}
		return t.result, nil
	case mcp.MethodTasksCancel:
		f.mu.Lock()
		defer f.mu.Unlock()
		t := f.tasks[p.TaskID]
		if t == nil {
			return nil, mcp.InvalidParams("unknown task %q", p.TaskID)
		}
		if t.status == mcp.TaskWorking {
			t.status = mcp.TaskCancelled
			close(t.done)
		}
		if f.OnCancel != nil {
			f.OnCancel(p.TaskID)
		}
		return map[string]any{"taskId": p.TaskID, "status": t.status}, nil
	}
	return nil, mcp.MethodNotFound(method)
}
