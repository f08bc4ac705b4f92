package mcp

import (
	"encoding/json"
	"fmt"
	"time"
)

// The tasks extension (io.modelcontextprotocol/tasks, SEP-2663), the wire
// shapes both roles share. A modern request that declares the extension
// in its _meta client capabilities may be answered, for tools/call, with
// a CreateTaskResult (resultType "task") instead of the tool's result;
// the client then polls tasks/get until the task ends, answers what the
// task asks meanwhile (status input_required, inputRequests) with
// tasks/update, and may cancel it with tasks/cancel. The result (or the
// JSON-RPC error) is inlined in the terminal tasks/get answer. The
// 2025-11-25 tasks (tasks.go: tasks/result, tasks/list, the `task`
// request param) are a different protocol, spoken only on the handshake
// era. Spec: ../shared/spec/extensions/tasks-overview.md and
// modelcontextprotocol/ext-tasks specification/draft/tasks.md.

// Methods and values the extension adds (tasks/get and tasks/cancel keep
// their 2025-11-25 names: MethodTasksGet, MethodTasksCancel).
const (
	MethodTasksUpdate = "tasks/update"
	// ResultTask is the resultType of a CreateTaskResult.
	ResultTask = "task"
	// MaxTaskIDBytes bounds a task id taken from outside (a request's
	// params, a server's answer): ids are opaque handles, not payloads.
	MaxTaskIDBytes = 256
)

// defaultTaskTTL is the ttlMs a server hands out (the polling bounds are
// tasks.go's minTaskPoll and maxTaskPoll, shared with 2025-11-25 tasks).
const defaultTaskTTL = time.Hour

// DetailedTask is a task's state as tasks/get answers it (and, without
// the status's payload, as CreateTaskResult): the status-specific fields
// inputRequests (input_required), result (completed) and error (failed)
// are inlined.
type DetailedTask struct {
	ResultType     string          `json:"resultType,omitempty"`
	TaskID         string          `json:"taskId"`
	Status         string          `json:"status"`
	StatusMessage  string          `json:"statusMessage,omitempty"`
	CreatedAt      string          `json:"createdAt"`
	LastUpdatedAt  string          `json:"lastUpdatedAt"`
	TTLMs          *int64          `json:"ttlMs"` // null: unlimited
	PollIntervalMs int64           `json:"pollIntervalMs,omitempty"`
	InputRequests  InputRequests   `json:"inputRequests,omitempty"`
	Result         json.RawMessage `json:"result,omitempty"`
	Error          *RPCError       `json:"error,omitempty"`
	Meta           Meta            `json:"_meta,omitempty"`
}

// Terminal reports whether the task has ended (completed, failed or
// cancelled): its state does not change any more.
func (t *DetailedTask) Terminal() bool {
	return t.Status == TaskCompleted || t.Status == TaskFailed || t.Status == TaskCancelled
}

// TaskUpdateParams are tasks/update's params.
type TaskUpdateParams struct {
	TaskID         string         `json:"taskId"`
	InputResponses InputResponses `json:"inputResponses"`
	Meta           Meta           `json:"_meta,omitempty"`
}

// DeclaresTasks reports whether a request's client capabilities declare
// the tasks extension: only then may it be answered with a task.
func DeclaresTasks(c ClientCapabilities) bool {
	_, ok := c.Extensions[ExtensionTasks]
	return ok
}

// withTasks is c declaring the tasks extension as well (c is not changed).
func withTasks(c ClientCapabilities) ClientCapabilities {
	ext := make(map[string]json.RawMessage, len(c.Extensions)+1)
	for k, v := range c.Extensions {
		ext[k] = v
	}
	ext[ExtensionTasks] = json.RawMessage(`{}`)
	c.Extensions = ext
	return c
}

// TasksRequired is the -32021 error for a request that needs the tasks
// extension its _meta did not declare (a tool that runs only as a task,
// or a tasks/* method).
func TasksRequired(why string) *RPCError {
	return MissingRequiredCapability(ClientCapabilities{Extensions: map[string]json.RawMessage{ExtensionTasks: json.RawMessage(`{}`)}},
		why+"; declare the extension in _meta[\""+MetaClientCapabilities+"\"].extensions[\""+ExtensionTasks+"\"] (an empty object)")
}

// TaskNotFound is the extension's error for a task id the server does not
// hold (-32602): never created here, or dropped after its ttl.
func TaskNotFound(id string) *RPCError {
	return InvalidParams("Failed to retrieve task: Task not found: no task %q here (it never existed, or it was dropped after its ttlMs passed); start the call again", id)
}

// TaskIDOf reads params.taskId of a tasks/* request, bounded by
// MaxTaskIDBytes.
func TaskIDOf(method string, params json.RawMessage) (string, error) {
	raw := Member(params, "taskId")
	if len(raw) > MaxTaskIDBytes+2 {
		return "", InvalidParams("%s: taskId is over %d bytes; it must be the taskId the server handed out", method, MaxTaskIDBytes)
	}
	var id string
	if raw == nil || json.Unmarshal(raw, &id) != nil || id == "" {
		return "", InvalidParams("%s: params need the taskId (a string) the server handed out", method)
	}
	return id, nil
}

// checkTask checks a task the client got from a server: its id is
// bounded and, when want is set, the one asked about; its status is one
// the extension defines.
func checkTask(method, want string, t *DetailedTask) error {
	switch {
	case t.TaskID == "" || len(t.TaskID) > MaxTaskIDBytes:
		return fmt.Errorf("%s: the server's task has no taskId, or one over %d bytes", method, MaxTaskIDBytes)
	case want != "" && t.TaskID != want:
		return fmt.Errorf("%s %s: the server answered for task %q", method, want, t.TaskID)
	}
	switch t.Status {
	case TaskWorking, TaskCompleted, TaskFailed, TaskCancelled:
	case TaskInputRequired:
		if len(t.InputRequests) > maxInputRequests {
			return fmt.Errorf("%s: task %s asks %d inputs; at most %d are accepted", method, t.TaskID, len(t.InputRequests), maxInputRequests)
		}
	default:
		return fmt.Errorf("%s: task %s has status %q, which the tasks extension does not define", method, t.TaskID, t.Status)
	}
	return nil
}

// pollWait is the wait before the next tasks/get: what the server
// suggests (200 ms when it says nothing), kept within
// minTaskPoll..maxTaskPoll.
func pollWait(ms int64) time.Duration {
	switch {
	case ms <= 0:
		return 4 * minTaskPoll
	case ms > int64(maxTaskPoll/time.Millisecond):
		return maxTaskPoll
	}
	return max(time.Duration(ms)*time.Millisecond, minTaskPoll)
}
