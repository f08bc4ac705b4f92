package gateway

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"sort"
	"sync"
	"time"

	"github.com/nexus-mcp/nexus/host/mcp"
)

// Tasks (MCP 2025-11-25, experimental): the gateway is the receiver of
// task-augmented tools/call requests for every tool, whatever its server
// supports; a tool its server runs only as a task is called as one
// upstream by the host (mcp.Client.CallToolAsTask), so it also serves
// clients that call it plainly. The call runs through the chain like any other, detached from
// the request that created it; the client polls tasks/get, waits in
// tasks/result, lists and cancels. Tasks live in their session and end
// with it.

const (
	methodTasksGet    = mcp.MethodTasksGet
	methodTasksResult = mcp.MethodTasksResult
	methodTasksList   = mcp.MethodTasksList
	methodTasksCancel = mcp.MethodTasksCancel
	notifyTaskStatus  = "notifications/tasks/status"
	relatedTaskKey    = "io.modelcontextprotocol/related-task"

	taskWorking   = mcp.TaskWorking
	taskCompleted = mcp.TaskCompleted
	taskFailed    = mcp.TaskFailed
	taskCancelled = mcp.TaskCancelled

	defaultTaskTTL = time.Hour
	maxTaskTTL     = 24 * time.Hour
	// maxTasks bounds the tasks one session holds, finished ones included
	// (until their TTL passes).
	maxTasks = 256
	// pollInterval is what clients are told to poll at.
	pollInterval = 500 * time.Millisecond
)

// taskCapability is the tasks capability the gateway declares.
var taskCapability = json.RawMessage(`{"list":{},"cancel":{},"requests":{"tools":{"call":{}}}}`)

// task is one task-augmented tools/call.
type task struct {
	id      string
	created time.Time
	ttl     time.Duration
	cancel  context.CancelFunc
	done    chan struct{} // closed at a terminal status

	mu      sync.Mutex
	status  string
	message string
	updated time.Time
	result  any   // *mcp.CallToolResult, for completed and failed tasks
	err     error // the call's JSON-RPC error, for failed tasks

	// The tasks extension's (tasks_modern.go): a modern agent's task,
	// serving an upstream's, and the questions it waits on.
	modern   bool
	detached bool // answered as a task; false while its request waits
	returned bool // the call ended before it became one
	input    taskInput
}

// taskState is the Task object of the spec.
type taskState struct {
	TaskID        string `json:"taskId"`
	Status        string `json:"status"`
	StatusMessage string `json:"statusMessage,omitempty"`
	CreatedAt     string `json:"createdAt"`
	LastUpdatedAt string `json:"lastUpdatedAt"`
	TTL           int64  `json:"ttl"`
	PollInterval  int64  `json:"pollInterval"`
}

func (t *task) state() taskState {
	t.mu.Lock()
	defer t.mu.Unlock()
	return taskState{TaskID: t.id, Status: t.status, StatusMessage: t.message,
		CreatedAt: t.created.UTC().Format(time.RFC3339Nano), LastUpdatedAt: t.updated.UTC().Format(time.RFC3339Nano),
		TTL: t.ttl.Milliseconds(), PollInterval: pollInterval.Milliseconds()}
}

// finish moves the task to a terminal status, unless it is in one already
// (a cancelled task stays cancelled whatever its call does).
func (t *task) finish(status, msg string, result any, err error) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.status == taskCompleted || t.status == taskFailed || t.status == taskCancelled {
		return false
	}
	t.status, t.message, t.result, t.err, t.updated = status, msg, result, err, time.Now()
	t.input.drop()
	close(t.done)
	return true
}

// tasks is a session's tasks.
type tasks struct {
	mu   sync.Mutex
	byID map[string]*task
}

// taskParams reads the task field of a request's params; nil when the
// request is not task-augmented.
func taskParams(params json.RawMessage) (*struct {
	TTL *int64 `json:"ttl"`
}, error) {
	var p struct {
		Task *struct {
			TTL *int64 `json:"ttl"`
		} `json:"task"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, err
	}
	return p.Task, nil
}

// startTask runs call as a task and returns its CreateTaskResult.
func (s *session) startTask(ttlMS *int64, call func(ctx context.Context) (any, error)) (any, error) {
	ttl := defaultTaskTTL
	if ttlMS != nil && *ttlMS > 0 {
		ttl = min(time.Duration(*ttlMS)*time.Millisecond, maxTaskTTL)
	}
	id, err := randomID()
	if err != nil {
		return nil, &mcp.RPCError{Code: mcp.CodeInternalError, Message: "no randomness for a task id: " + err.Error()}
	}
	ctx, cancel := context.WithCancel(s.ctx)
	now := time.Now()
	t := &task{id: id, created: now, updated: now, ttl: ttl, cancel: cancel,
		done: make(chan struct{}), status: taskWorking}

	s.tasks.mu.Lock()
	s.expireTasks(now)
	if len(s.tasks.byID) >= maxTasks {
		s.tasks.mu.Unlock()
		cancel()
		return nil, &mcp.RPCError{Code: mcp.CodeBusy, Message: "this session holds too many tasks (256); wait for some to expire, or make the call without a task"}
	}
	if s.tasks.byID == nil {
		s.tasks.byID = map[string]*task{}
	}
	s.tasks.byID[t.id] = t
	s.tasks.mu.Unlock()

	// The answer says "working" even if the call is over before it is sent
	// (tasks begin in working, and the client learns the rest by polling).
	created := t.state()
	go func() {
		defer cancel()
		res, err := call(ctx)
		switch {
		case err != nil:
			t.finish(taskFailed, oneLine(err), nil, err)
		case isToolError(res):
			t.finish(taskFailed, "the tool returned an error", res, nil)
		default:
			t.finish(taskCompleted, "", res, nil)
		}
		s.taskStatus(t)
	}()
	return map[string]any{"task": created}, nil
}

// randomID is an unguessable task id: a task id is all a client needs
// to reach the task.
func randomID() (string, error) {
	var raw [16]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(raw[:]), nil
}

func isToolError(res any) bool {
	r, ok := res.(*mcp.CallToolResult)
	return ok && r.IsError
}

// taskStatus tells the client a task changed (optional in the spec, and
// cheap).
func (s *session) taskStatus(t *task) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = s.peer.Notify(ctx, notifyTaskStatus, t.state())
}

// expireTasks drops tasks past their TTL. Called with tasks.mu held.
func (s *session) expireTasks(now time.Time) {
	for id, t := range s.tasks.byID {
		if now.Sub(t.created) > t.ttl {
			t.cancel()
			delete(s.tasks.byID, id)
		}
	}
}

func (s *session) task(params json.RawMessage) (*task, error) {
	var p struct {
		TaskID string `json:"taskId"`
	}
	if err := json.Unmarshal(params, &p); err != nil || p.TaskID == "" {
		return nil, mcp.InvalidParams("params need the taskId")
	}
	s.tasks.mu.Lock()
	defer s.tasks.mu.Unlock()
	s.expireTasks(time.Now())
	t := s.tasks.byID[p.TaskID]
	if t == nil {
		return nil, mcp.InvalidParams("unknown task %q: it never existed in this session, or its ttl passed", p.TaskID)
	}
	return t, nil
}

// handleTask serves tasks/get, tasks/result, tasks/list and tasks/cancel.
func (s *session) handleTask(ctx context.Context, method string, params json.RawMessage) (any, error) {
	if method == methodTasksList {
		s.tasks.mu.Lock()
		s.expireTasks(time.Now())
		list := make([]*task, 0, len(s.tasks.byID))
		for _, t := range s.tasks.byID {
			if !t.modern {
				list = append(list, t)
			}
		}
		s.tasks.mu.Unlock()
		sort.Slice(list, func(i, j int) bool {
			return list[i].created.Before(list[j].created) || list[i].created.Equal(list[j].created) && list[i].id < list[j].id
		})
		states := make([]taskState, len(list))
		for i, t := range list {
			states[i] = t.state()
		}
		page, next, err := paginate(states, params, s.g.opts.PageSize)
		if err != nil {
			return nil, err
		}
		return listTasksResult{Tasks: page, NextCursor: next}, nil
	}
	t, err := s.task(params)
	if err != nil {
		return nil, err
	}
	switch method {
	case methodTasksGet:
		return t.state(), nil
	case methodTasksCancel:
		t.mu.Lock()
		terminal := t.status != taskWorking
		t.mu.Unlock()
		if terminal {
			return nil, mcp.InvalidParams("task %q is already %s and cannot be cancelled", t.id, t.state().Status)
		}
		if t.finish(taskCancelled, "The task was cancelled by request.", nil, &mcp.RPCError{Code: mcp.CodeInternalError, Message: "the task was cancelled"}) {
			t.cancel()
			s.taskStatus(t)
		}
		return t.state(), nil
	case methodTasksResult:
		select {
		case <-t.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		t.mu.Lock()
		res, err := t.result, t.err
		t.mu.Unlock()
		if err != nil {
			return nil, err
		}
		if r, ok := res.(*mcp.CallToolResult); ok {
			cp := *r
			cp.Meta = mcp.Meta{}
			for k, v := range r.Meta {
				cp.Meta[k] = v
			}
			cp.Meta[relatedTaskKey], _ = json.Marshal(map[string]string{"taskId": t.id})
			return &cp, nil
		}
		return res, nil
	}
	return nil, mcp.MethodNotFound(method)
}

type listTasksResult struct {
	Tasks      []taskState `json:"tasks"`
	NextCursor string      `json:"nextCursor,omitempty"`
}

// endTasks cancels every task in flight: the session is over.
func (s *session) endTasks() {
	s.tasks.mu.Lock()
	defer s.tasks.mu.Unlock()
	for _, t := range s.tasks.byID {
		t.cancel()
	}
	s.tasks.byID = nil
}
