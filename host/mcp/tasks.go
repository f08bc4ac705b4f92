package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Tasks (2025-11-25, experimental), the requestor's side: a tool whose
// execution says taskSupport "required" can only be called as a task.

// Task methods and statuses.
const (
	MethodTasksGet    = "tasks/get"
	MethodTasksResult = "tasks/result"
	MethodTasksCancel = "tasks/cancel"
	MethodTasksList   = "tasks/list"

	TaskWorking       = "working"
	TaskInputRequired = "input_required"
	TaskCompleted     = "completed"
	TaskFailed        = "failed"
	TaskCancelled     = "cancelled"
)

// Bounds on the interval between polls of a task, whatever the server asks.
const (
	minTaskPoll = 50 * time.Millisecond
	maxTaskPoll = 5 * time.Second
)

// Task is the state of a task (tasks/get's result, and the task of a
// CreateTaskResult).
type Task struct {
	TaskID        string `json:"taskId"`
	Status        string `json:"status"`
	StatusMessage string `json:"statusMessage,omitempty"`
	PollInterval  int64  `json:"pollInterval,omitempty"` // milliseconds
}

// terminal says whether a task has ended.
func (t *Task) terminal() bool {
	return t.Status == TaskCompleted || t.Status == TaskFailed || t.Status == TaskCancelled
}

// TaskSupport is how the tool may be called as a task: "required",
// "optional", or "" (not at all; the default).
func (t *Tool) TaskSupport() string {
	if len(t.Execution) == 0 {
		return ""
	}
	var e struct {
		TaskSupport string `json:"taskSupport"`
	}
	if json.Unmarshal(t.Execution, &e) != nil || (e.TaskSupport != "required" && e.TaskSupport != "optional") {
		return ""
	}
	return e.TaskSupport
}

// CallToolAsTask calls a tool as a task and returns its result as
// CallTool would: the server answers at once with a task, which is
// polled with tasks/get (at the interval the server suggests, kept within
// 50 ms..5 s) until it ends or needs input, and whose result tasks/result
// then fetches. What the tool asks meanwhile (elicitation, sampling)
// reaches this client's handlers as during any call. Cancelling ctx
// cancels the task on the server (tasks/cancel). o.Timeout bounds each
// request, not the task; ctx bounds the task. Progress is reported while
// the creating request is open.
//
// A modern server has no such request: the server decides, and CallTool
// follows the task it may answer with (client_tasks.go).
func (c *Client) CallToolAsTask(ctx context.Context, name string, args json.RawMessage, o *CallOptions) (*CallToolResult, error) {
	if c.modern {
		return c.CallTool(ctx, name, args, o)
	}
	params := struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments,omitempty"`
		Meta      Meta            `json:"_meta,omitempty"`
		Task      struct{}        `json:"task"`
	}{Name: name, Arguments: args}
	var opts []CallOption
	params.Meta, opts = c.callOptions(o)
	var created struct {
		Task *Task `json:"task"`
	}
	if err := c.peer.Call(ctx, MethodToolsCall, &params, &created, opts...); err != nil {
		return nil, err
	}
	if created.Task == nil || created.Task.TaskID == "" {
		return nil, fmt.Errorf("tools/call %s as a task: the server answered without a task (want a CreateTaskResult with task.taskId)", name)
	}
	if h := taskHooksOf(ctx); h != nil && h.Started != nil {
		// A caller serving the task onwards (client_tasks.go) hears of it;
		// what it asks comes as requests to this client's handlers.
		h.Started(&DetailedTask{TaskID: created.Task.TaskID, Status: created.Task.Status})
	}
	res, err := c.awaitTask(ctx, created.Task, opts, o)
	if err != nil && ctx.Err() != nil {
		// The caller gave up: so does the server, bounded on its own
		// clock since ctx is spent.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = c.peer.Call(cctx, MethodTasksCancel, map[string]string{"taskId": created.Task.TaskID}, nil)
	}
	return res, err
}

// awaitTask polls t until it ends or needs input, then fetches its result.
func (c *Client) awaitTask(ctx context.Context, t *Task, opts []CallOption, o *CallOptions) (*CallToolResult, error) {
	id := map[string]string{"taskId": t.TaskID}
	timer := time.NewTimer(0)
	defer timer.Stop()
	<-timer.C
	for {
		if t.terminal() || t.Status == TaskInputRequired {
			// tasks/result blocks until the task ends; while it needs
			// input, the server sends its requests meanwhile. A timeout
			// of this request is not the task's end: poll again.
			raw, err := c.peer.CallRaw(ctx, MethodTasksResult, id, opts...)
			var te *TimeoutError
			switch {
			case err == nil:
				return decodeResult(MethodTasksResult, raw, o)
			case errors.As(err, &te) && !t.terminal() && ctx.Err() == nil:
			default:
				return nil, err
			}
		}
		wait := min(max(time.Duration(t.PollInterval)*time.Millisecond, minTaskPoll), maxTaskPoll)
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-timer.C:
		}
		var next Task
		if err := c.peer.Call(ctx, MethodTasksGet, id, &next, opts...); err != nil {
			return nil, err
		}
		if next.TaskID != "" && next.TaskID != t.TaskID {
			return nil, fmt.Errorf("tasks/get %s: the server answered for task %s", t.TaskID, next.TaskID)
		}
		next.TaskID = t.TaskID
		*t = next
	}
}
