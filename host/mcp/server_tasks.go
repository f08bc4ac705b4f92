package mcp

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// The server role of the tasks extension (tasks_ext.go). A tool whose
// Execution says taskSupport "required" or "optional" is a task tool. A
// modern tools/call of one whose _meta declares the extension runs its
// handler detached from the request, which is answered at once with a
// CreateTaskResult (the task is in the store before that answer, so an
// immediate tasks/get finds it); a "required" one from a request that did
// not declare the extension gets -32021, an "optional" one runs as a
// plain call. A handler registered with AddTaskTool(..., manual) decides
// itself when it becomes a task (CallToolRequest.StartTask): before that
// it is an ordinary call, whose questions are MRTR rounds (server_ask.go).
// What a task's handler asks with ServerSession.Elicit, CreateMessage or
// ListRoots parks it in input_required until tasks/update brings the
// answer (several questions may be outstanding at once). The store is
// the Server's, capped at maxServerTasks; a task is dropped, and its
// handler cancelled, once its ttl (ServerOptions.TaskTTL) has passed. 2025-11-25 sessions are
// not offered these tools as tasks (their tools/list has no execution for
// them): they call them plainly.

// maxServerTasks bounds the tasks a Server holds, finished ones included
// until their ttl passes.
const maxServerTasks = 1024

// serverPollInterval is what clients are told to poll at.
const serverPollInterval = 500 * time.Millisecond

// taskStore is a Server's tasks.
type taskStore struct {
	mu   sync.Mutex
	byID map[string]*srvTask
}

// srvTask is one task a Server runs.
type srvTask struct {
	id      string
	created time.Time
	ttl     time.Duration
	cancel  context.CancelFunc

	mu       sync.Mutex
	detached bool // answered as a task: asks park, the result is kept
	returned bool // the handler returned before it detached: a plain call
	status   string
	message  string
	updated  time.Time
	result   json.RawMessage
	err      *RPCError
	pending  InputRequests                   // outstanding questions
	waiting  map[string]chan json.RawMessage // their answers' way back
	n        int                             // questions asked: keys are never reused
	started  chan struct{}                   // closed when it detaches
	seed     *DetailedTask                   // the state it detached in: the CreateTaskResult
}

type taskKey struct{}

// taskOf is the task ctx's handler runs in, nil outside one.
func taskOf(ctx context.Context) *srvTask {
	t, _ := ctx.Value(taskKey{}).(*srvTask)
	return t
}

// taskCtx is a task handler's context: the request's values, its own
// cancellation (tasks/cancel, the ttl, the request's end before it
// detached), and, once detached, no related request (what it sends has
// no request stream to go on).
type taskCtx struct {
	context.Context
	t *srvTask
}

func (c *taskCtx) Value(key any) any {
	switch key.(type) {
	case taskKey:
		return c.t
	case relatedKey:
		if c.t.isDetached() {
			return nil
		}
	}
	return c.Context.Value(key)
}

func (t *srvTask) isDetached() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.detached
}

// state is the task as tasks/get answers it (detail adds the status's
// payload).
func (t *srvTask) state(detail bool) *DetailedTask {
	t.mu.Lock()
	defer t.mu.Unlock()
	ttl := t.ttl.Milliseconds()
	d := &DetailedTask{TaskID: t.id, Status: t.status, StatusMessage: t.message,
		CreatedAt: t.created.UTC().Format(time.RFC3339Nano), LastUpdatedAt: t.updated.UTC().Format(time.RFC3339Nano),
		TTLMs: &ttl, PollIntervalMs: serverPollInterval.Milliseconds()}
	if !detail {
		return d
	}
	switch t.status {
	case TaskInputRequired:
		d.InputRequests = make(InputRequests, len(t.pending))
		for k, q := range t.pending {
			d.InputRequests[k] = q
		}
	case TaskCompleted:
		d.Result = t.result
	case TaskFailed:
		d.Error = t.err
	}
	return d
}

// setStatus moves a task that has not ended; t.mu is held.
func (t *srvTask) setStatus(status, msg string) {
	t.status, t.message, t.updated = status, msg, time.Now()
}

func (t *srvTask) terminal() bool {
	return t.status == TaskCompleted || t.status == TaskFailed || t.status == TaskCancelled
}

// finish records the handler's outcome, unless the task ended already (a
// cancelled task stays cancelled). A tool that ran and reported an error
// completed; a JSON-RPC error failed it.
func (t *srvTask) finish(res *CallToolResult, err error) {
	var raw json.RawMessage
	var rerr *RPCError
	if err == nil {
		if res.Content == nil {
			res.Content = []Content{}
		}
		if raw, err = json.Marshal(res); err != nil {
			err = fmt.Errorf("encoding the tool's result: %w", err)
		}
	}
	if err != nil {
		var ie *InputRequiredError
		switch {
		case errors.As(err, &rerr):
		case errors.As(err, &ie):
			rerr = &RPCError{Code: CodeInternalError, Message: "the tool answered input_required after it became a task; a task asks with tasks/get's inputRequests (ServerSession.Elicit and friends)"}
		default:
			rerr = &RPCError{Code: CodeInternalError, Message: err.Error()}
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.terminal() {
		return
	}
	if rerr != nil {
		t.err = rerr
		t.setStatus(TaskFailed, "The tool failed: "+rerr.Message)
	} else {
		t.result = raw
		t.setStatus(TaskCompleted, "")
	}
	t.pending, t.waiting = nil, nil
}

// ask parks the task in input_required with one more question and waits
// for its answer (tasks/update), the task's cancellation or ctx's end.
func (t *srvTask) ask(ctx context.Context, method string, params any, out any) error {
	var p json.RawMessage
	if params != nil {
		var err error
		if p, err = json.Marshal(params); err != nil {
			return err
		}
	}
	ch := make(chan json.RawMessage, 1)
	t.mu.Lock()
	if t.terminal() {
		t.mu.Unlock()
		return context.Canceled
	}
	key := fmt.Sprintf("%s-%d", strings.ReplaceAll(method, "/", "."), t.n)
	t.n++
	if t.pending == nil {
		t.pending, t.waiting = InputRequests{}, map[string]chan json.RawMessage{}
	}
	t.pending[key] = InputRequest{Method: method, Params: p}
	t.waiting[key] = ch
	t.setStatus(TaskInputRequired, "The tool waits for the client's answer to "+method)
	t.mu.Unlock()
	select {
	case raw := <-ch:
		if err := json.Unmarshal(raw, out); err != nil {
			return InvalidParams("inputResponses[%q] is not a %s result: %v", key, method, err)
		}
		return nil
	case <-ctx.Done():
		t.mu.Lock()
		delete(t.pending, key)
		delete(t.waiting, key)
		t.mu.Unlock()
		return ctx.Err()
	}
}

// update delivers a tasks/update's answers to the questions outstanding;
// the rest are ignored, as the extension says.
func (t *srvTask) update(in InputResponses) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for k, raw := range in {
		ch, ok := t.waiting[k]
		if !ok {
			continue
		}
		ch <- raw
		delete(t.waiting, k)
		delete(t.pending, k)
	}
	if t.status == TaskInputRequired && len(t.pending) == 0 {
		t.setStatus(TaskWorking, "")
	}
}

// StartTask turns the call into a task now, for a handler registered with
// AddTaskTool(..., manual true): the request is answered with a
// CreateTaskResult while the handler goes on, and what it asks from here
// on waits in the task's input_required. false: the call cannot become a
// task (a legacy request, a client that did not declare the extension),
// and goes on as a plain call. Calling it again does nothing.
func (r *CallToolRequest) StartTask(ctx context.Context) bool {
	t := taskOf(ctx)
	if t == nil {
		return false
	}
	return r.Session.srv.detach(t) == nil
}

// detach stores t and answers its request with a task; an error when the
// store is full.
func (s *Server) detach(t *srvTask) error {
	t.mu.Lock()
	if t.detached {
		t.mu.Unlock()
		return nil
	}
	if t.returned {
		t.mu.Unlock()
		return errors.New("the call already returned")
	}
	t.mu.Unlock()
	st := &s.tasks
	st.mu.Lock()
	s.expireTasks(time.Now())
	if len(st.byID) >= maxServerTasks {
		st.mu.Unlock()
		return &RPCError{Code: CodeBusy, Message: fmt.Sprintf("the server holds %d tasks, its limit; retry once some have finished and their ttl passed, or call without the tasks extension", maxServerTasks)}
	}
	if st.byID == nil {
		st.byID = map[string]*srvTask{}
	}
	st.byID[t.id] = t
	st.mu.Unlock()
	// Dropped when its ttl passes even if nobody asks about tasks again.
	time.AfterFunc(t.ttl-time.Since(t.created), func() {
		st.mu.Lock()
		if st.byID[t.id] == t {
			delete(st.byID, t.id)
		}
		st.mu.Unlock()
		t.cancel()
	})
	seed := t.state(false)
	seed.ResultType = ResultTask
	t.mu.Lock()
	t.detached, t.seed = true, seed
	close(t.started)
	t.mu.Unlock()
	return nil
}

// expireTasks drops tasks past their ttl, cancelling the handlers still
// running; s.tasks.mu is held.
func (s *Server) expireTasks(now time.Time) {
	for id, t := range s.tasks.byID {
		if now.Sub(t.created) > t.ttl {
			t.cancel()
			delete(s.tasks.byID, id)
		}
	}
}

// EndTasks cancels every task the server runs and forgets them all (a
// task outlives the session whose request made it: call this when the
// server itself is done).
func (s *Server) EndTasks() {
	s.tasks.mu.Lock()
	defer s.tasks.mu.Unlock()
	for _, t := range s.tasks.byID {
		t.cancel()
	}
	s.tasks.byID = nil
}

// taskSupport is how a tool registered here runs as a task ("required",
// "optional", "" not at all), and whether its handler starts the task
// itself.
func (s *Server) taskSupport(name string) (support string, manual bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if i := slices.IndexFunc(s.tools, func(x serverTool) bool { return x.tool.Name == name }); i >= 0 {
		return s.tools[i].tool.TaskSupport(), s.tools[i].manual
	}
	return "", false
}

// AddTaskTool registers a tool that runs as a task for a modern client
// that declares the tasks extension: support is "required" (a client
// that did not declare it gets -32021) or "optional" (such a client gets
// a plain call). With manual, the handler starts the task itself
// (CallToolRequest.StartTask), after what it must settle first (MRTR
// rounds, say); otherwise the task starts before the handler runs.
func (s *Server) AddTaskTool(t Tool, support string, manual bool, h ToolHandler) {
	t.Execution, _ = json.Marshal(map[string]string{"taskSupport": support})
	s.addTool(t, h, manual)
}

// callTask serves a modern tools/call of a task tool for a client that
// declared the extension: the handler runs on a context of its own, and
// the request is answered with a CreateTaskResult once the task starts,
// or as a plain call when the handler returns first (a manual one that
// never started it).
func (s *Server) callTask(ctx context.Context, h ToolHandler, req *CallToolRequest, manual bool) (any, error) {
	var raw [16]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return nil, &RPCError{Code: CodeInternalError, Message: "no randomness for a task id: " + err.Error()}
	}
	now := time.Now()
	base, cancel := context.WithCancel(context.WithoutCancel(ctx))
	t := &srvTask{id: hex.EncodeToString(raw[:]), created: now, updated: now, ttl: s.opts.TaskTTL, cancel: cancel,
		status: TaskWorking, started: make(chan struct{})}
	tctx := &taskCtx{base, t}
	// Until it is a task, the call ends with its request.
	stop := context.AfterFunc(ctx, func() {
		if !t.isDetached() {
			cancel()
		}
	})
	defer stop()
	if !manual {
		if err := s.detach(t); err != nil {
			cancel()
			return nil, err
		}
	}
	type outcome struct {
		res *CallToolResult
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		var o outcome
		func() {
			defer func() {
				if p := recover(); p != nil {
					o.err = &RPCError{Code: CodeInternalError, Message: fmt.Sprintf("the tool's handler panicked: %v", p)}
				}
			}()
			o.res, o.err = h(tctx, req)
		}()
		t.mu.Lock()
		detached := t.detached
		t.returned = !detached
		t.mu.Unlock()
		if detached {
			t.finish(o.res, o.err)
			// The task keeps its ttl; its context is done with.
			cancel()
			return
		}
		done <- o
	}()
	select {
	case <-t.started:
		// The state it started in, whatever it came to since: the
		// client learns the rest from tasks/get.
		t.mu.Lock()
		defer t.mu.Unlock()
		return t.seed, nil
	case o := <-done:
		cancel()
		if o.err != nil {
			return nil, o.err
		}
		if o.res.Content == nil {
			o.res.Content = []Content{}
		}
		return o.res, nil
	}
}

// serveTask serves tasks/get, tasks/update and tasks/cancel of a modern
// request that declared the extension.
func (s *Server) serveTask(method string, params json.RawMessage) (any, error) {
	id, err := TaskIDOf(method, params)
	if err != nil {
		return nil, err
	}
	s.tasks.mu.Lock()
	s.expireTasks(time.Now())
	t := s.tasks.byID[id]
	s.tasks.mu.Unlock()
	if t == nil {
		return nil, TaskNotFound(id)
	}
	ack := map[string]string{"resultType": ResultComplete}
	switch method {
	case MethodTasksGet:
		d := t.state(true)
		d.ResultType = ResultComplete
		return d, nil
	case MethodTasksUpdate:
		var p TaskUpdateParams
		if err := json.Unmarshal(params, &p); err != nil || p.InputResponses == nil {
			return nil, InvalidParams("tasks/update: params need inputResponses, an object of results by the keys of the task's inputRequests")
		}
		t.update(p.InputResponses)
		return ack, nil
	case MethodTasksCancel:
		t.mu.Lock()
		if !t.terminal() {
			t.setStatus(TaskCancelled, "The task was cancelled by request.")
			t.pending, t.waiting = nil, nil
		}
		t.mu.Unlock()
		t.cancel()
		return ack, nil
	}
	return nil, MethodNotFound(method)
}
