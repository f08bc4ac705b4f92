package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"
)

// The client role of the tasks extension (tasks_ext.go). A modern client
// declares the extension on every request, so a server may answer a
// tools/call with a task; CallTool then follows it to its end, as the
// extension's backwards-compatibility note suggests, and returns the
// final result to callers who never hear of tasks: tasks/get at the
// interval the server suggests (kept within minTaskPoll..maxTaskPoll),
// each input request the task asks answered once through the same
// handlers MRTR rounds go to (fulfil) and sent with tasks/update, until
// the task completes (its inlined result), fails (its JSON-RPC error) or
// is cancelled. The wait is bounded by the call's ctx and, as a backstop,
// by the task's ttlMs; when ctx ends first the task is cancelled on the
// server (tasks/cancel). A caller that serves the task onwards (the
// gateway) hooks in with WithTaskHooks.

// maxTaskAnswers bounds the input keys one followed task may ask.
const maxTaskAnswers = 1024

// TaskHooks let a caller that serves a followed task to a client of its
// own take part: Started hears of the task once the server created it
// (CreateTaskResult), Answer answers what the task asks instead of the
// client's handlers. Either may be nil.
type TaskHooks struct {
	Started func(t *DetailedTask)
	Answer  func(ctx context.Context, reqs InputRequests) (InputResponses, error)
}

type taskHooksKey struct{}

// WithTaskHooks returns ctx whose tools/call hooks h into the task a
// modern server may answer it with.
func WithTaskHooks(ctx context.Context, h *TaskHooks) context.Context {
	return context.WithValue(ctx, taskHooksKey{}, h)
}

func taskHooksOf(ctx context.Context) *TaskHooks {
	h, _ := ctx.Value(taskHooksKey{}).(*TaskHooks)
	return h
}

// TaskError is a followed task that did not complete: it was cancelled,
// or it outlived its ttlMs.
type TaskError struct {
	TaskID, Status, Message string
}

func (e *TaskError) Error() string {
	msg := e.Message
	if msg == "" {
		msg = "the server gave no reason"
	}
	return fmt.Sprintf("task %s ended %s: %s", e.TaskID, e.Status, msg)
}

// isTaskResult reports whether raw is a CreateTaskResult.
func isTaskResult(raw json.RawMessage) bool {
	if !bytes.Contains(raw, []byte(`"`+ResultTask+`"`)) {
		return false
	}
	return string(bytes.TrimSpace(Member(raw, "resultType"))) == `"`+ResultTask+`"`
}

// followTask follows the task a CreateTaskResult (raw) names to its end
// and returns its result.
func (c *Client) followTask(ctx context.Context, method string, raw json.RawMessage, opts []CallOption) (json.RawMessage, error) {
	var t DetailedTask
	if err := json.Unmarshal(raw, &t); err != nil {
		return nil, fmt.Errorf("%s: malformed CreateTaskResult: %w", method, err)
	}
	if err := checkTask(method, "", &t); err != nil {
		return nil, err
	}
	id := t.TaskID
	hooks := taskHooksOf(ctx)
	if hooks != nil && hooks.Started != nil {
		hooks.Started(&t)
	}
	if t.Terminal() && t.Result == nil && t.Error == nil {
		// A CreateTaskResult carries no payload: tasks/get has it.
		t.Status, t.PollIntervalMs = TaskWorking, 1
	}
	created := time.Now()
	answered := map[string]bool{}
	timer := time.NewTimer(0)
	defer timer.Stop()
	<-timer.C
	for {
		switch t.Status {
		case TaskCompleted:
			if r := bytes.TrimSpace(t.Result); len(r) == 0 || r[0] != '{' {
				return nil, fmt.Errorf("%s: task %s completed without a result object", method, id)
			}
			return t.Result, nil
		case TaskFailed:
			if t.Error != nil {
				return nil, t.Error
			}
			return nil, &RPCError{Code: CodeInternalError, Message: fmt.Sprintf("task %s failed without an error: %s", id, t.StatusMessage)}
		case TaskCancelled:
			return nil, &TaskError{TaskID: id, Status: t.Status, Message: t.StatusMessage}
		case TaskInputRequired:
			if err := c.answerTask(ctx, method, id, t.InputRequests, answered, hooks, opts); err != nil {
				c.cancelTask(ctx, id)
				return nil, err
			}
		}
		if t.TTLMs != nil && *t.TTLMs > 0 && time.Since(created) > time.Duration(*t.TTLMs)*time.Millisecond {
			c.cancelTask(ctx, id)
			return nil, &TaskError{TaskID: id, Status: t.Status, Message: fmt.Sprintf("its ttlMs (%d) passed before it ended", *t.TTLMs)}
		}
		timer.Reset(pollWait(t.PollIntervalMs))
		select {
		case <-ctx.Done():
			c.cancelTask(ctx, id)
			return nil, ctx.Err()
		case <-timer.C:
		}
		next, err := c.taskRequest(ctx, MethodTasksGet, map[string]any{"taskId": id}, opts)
		if err != nil {
			if ctx.Err() != nil {
				c.cancelTask(ctx, id)
			}
			return nil, err
		}
		t = DetailedTask{}
		if err := json.Unmarshal(next, &t); err != nil {
			return nil, fmt.Errorf("%s %s: malformed result: %w", MethodTasksGet, id, err)
		}
		if err := checkTask(MethodTasksGet, id, &t); err != nil {
			return nil, err
		}
	}
}

// answerTask answers the input requests of a task not answered before
// (keys are unique over a task's life) and sends them with tasks/update.
func (c *Client) answerTask(ctx context.Context, method, id string, reqs InputRequests, answered map[string]bool, hooks *TaskHooks, opts []CallOption) error {
	fresh := InputRequests{}
	for k, q := range reqs {
		if !answered[k] {
			fresh[k] = q
		}
	}
	if len(fresh) == 0 {
		return nil
	}
	if len(answered)+len(fresh) > maxTaskAnswers {
		return fmt.Errorf("%s: task %s asked more than %d inputs; giving up", method, id, maxTaskAnswers)
	}
	var resp InputResponses
	if hooks != nil && hooks.Answer != nil {
		var err error
		if resp, err = hooks.Answer(ctx, fresh); err != nil {
			return err
		}
	} else {
		in, err := c.fulfil(ctx, method, &InputRequiredResult{InputRequests: fresh})
		if err != nil {
			return err
		}
		resp = in.InputResponses
	}
	keys := make([]string, 0, len(fresh))
	for k := range fresh {
		keys = append(keys, k)
		answered[k] = true
	}
	sort.Strings(keys)
	_, err := c.taskRequest(ctx, MethodTasksUpdate, &TaskUpdateParams{TaskID: id, InputResponses: resp}, opts)
	if err != nil {
		return fmt.Errorf("%s: answering task %s's %v: %w", MethodTasksUpdate, id, keys, err)
	}
	return nil
}

// taskRequest sends a tasks/* request with the modern _meta (on ctx: the
// capabilities of whom the task's requests go for, see metaFor).
func (c *Client) taskRequest(ctx context.Context, method string, params any, opts []CallOption) (json.RawMessage, error) {
	var p map[string]any
	switch v := params.(type) {
	case map[string]any:
		p = v
	case *TaskUpdateParams:
		p = map[string]any{"taskId": v.TaskID, "inputResponses": v.InputResponses}
	}
	p["_meta"] = c.metaFor(ctx, nil)
	// Polling repeats safely: a tasks/get whose response broke off is
	// sent again.
	return c.modernCall(ctx, method, p, method == MethodTasksGet, opts...)
}

// cancelTask asks the server to cancel a task the client gives up on,
// bounded on its own clock since ctx may be spent.
func (c *Client) cancelTask(ctx context.Context, id string) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if _, err := c.taskRequest(cctx, MethodTasksCancel, map[string]any{"taskId": id}, nil); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		c.log.Debug("tasks/cancel failed", "task", id, "error", err)
	}
}
