package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/engine"
)

// The tasks extension (io.modelcontextprotocol/tasks) for modern agents.
// The upstream decides what runs as a task, as the extension has it: a
// modern agent's tools/call that declares the extension goes upstream
// with that declaration, through the chain like any call; when the
// upstream answers with a task (a modern server's CreateTaskResult, or a
// 2025-11-25 server's task for a tool it runs only as one), the host
// follows it (mcp.Client, client_tasks.go) and tells the gateway
// (mcp.TaskHooks.Started), which answers the agent with a task of its
// own, in the agent's session, while the call goes on detached from the
// request. What the upstream task asks meanwhile passes the chain as the
// server-initiated request it stands for would (passInput: sampling,
// elicitation, roots links, audited), waits in the gateway task's
// input_required until the agent's tasks/update answers it, and goes
// upstream with tasks/update. The result, once the chain has seen it, is
// inlined in tasks/get; tasks/cancel cancels the call, which cancels the
// upstream task. Before the upstream answers with a task the call is an
// ordinary one: its input_required rounds are the agent's (MRTR). A task
// lives in the session that made it (a principal's on HTTP, so another
// agent never finds it), under the session's cap and ttl (tasks.go), on
// the replica that holds it.

// taskInput is what a modern task waits on: its questions, by key, and
// the ways back to the call that asked them.
type taskInput struct {
	pending mcp.InputRequests
	waiting map[string]chan json.RawMessage
}

// drop forgets the questions (the task ended); t.mu is held.
func (in *taskInput) drop() { in.pending, in.waiting = nil, nil }

// modernTaskCall is a modern tools/call whose agent declared the tasks
// extension: answered as a task once the upstream makes one, or as an
// ordinary call when it answers first. It runs as a bridged call
// (bridge.go), so what a legacy server asks before it is a task (or
// when it never becomes one) is an input_required round, as for any
// modern call; once a task, the call leaves the bridge's rounds and its
// questions go to the task.
//
// server is the tool's (toolServer); at is the call's attempt (retry
// opened it): an answer input_required is sealed with it, so the retry
// is the same call. early is the answers the request brought without a
// requestState (bridge.start).
func (s *session) modernTaskCall(ctx context.Context, server string, p mcp.CallToolParams, meta *mcp.RequestMeta, at *attempt, params json.RawMessage, early mcp.InputResponses) (any, error) {
	t, err := s.newTask(true)
	if err != nil {
		return nil, err
	}
	// tasks/cancel cancels the call, once there is one.
	var callCancel atomic.Pointer[context.CancelFunc]
	t.cancel = func() {
		if c := callCancel.Load(); c != nil {
			(*c)()
		}
	}
	started := make(chan struct{})
	var seed *mcp.DetailedTask // the CreateTaskResult: the state it started in
	var f *followed            // set once t follows the server's task; read by the call's goroutine after started
	var bc *bcall              // the bridged call run runs as (set by run, read by Started on its goroutine)
	hooks := &mcp.TaskHooks{
		Started: func(up *mcp.DetailedTask) {
			t.mu.Lock()
			again := t.detached
			t.mu.Unlock()
			if again {
				return
			}
			seed = t.modernState(false)
			seed.ResultType = mcp.ResultTask
			if s.storeTask(t) == nil {
				// A 2025-11-25 server asks during its task by requests
				// to the client: the bridge brings them to t.
				f = &followed{t: t, upstream: up.TaskID, c: bc, meta: meta, n: map[string]int{}}
				s.g.br.follow(s.agent, server, f)
				close(started)
			}
		},
		Answer: func(actx context.Context, reqs mcp.InputRequests) (mcp.InputResponses, error) {
			return s.taskAsk(actx, t, server, meta, reqs)
		},
	}
	run := func(cctx, nctx context.Context) (any, error) {
		bc = bcallOf(cctx)
		// The bridge's call context keeps the request's values, not its
		// end; once a task, the call ends with the task (tasks/cancel,
		// the ttl, the session).
		base, cancel := context.WithCancel(cctx)
		defer cancel()
		callCancel.Store(&cancel)
		defer context.AfterFunc(s.ctx, cancel)()
		res, err := s.call(mcp.WithTaskHooks(base, hooks), nctx, p, true)
		if f != nil { // Started ran on this goroutine, within the call
			s.g.br.unfollow(s.agent, server, f)
		}
		t.mu.Lock()
		detached := t.detached
		t.returned = !detached
		t.mu.Unlock()
		if !detached {
			return res, err
		}
		refusal, refused := s.g.refusal(s.agent, err)
		switch {
		case refused:
			t.finish(taskCompleted, "", &mcp.CallToolResult{Content: []mcp.Content{{Type: mcp.ContentText, Text: "Nexus refused this call: " + refusal}}, IsError: true}, nil)
		case err != nil:
			t.finish(taskFailed, oneLine(err), nil, s.g.rpcErrorOf(s.agent, err))
		default:
			t.finish(taskCompleted, "", res, nil)
		}
		return res, err
	}
	res, err, ask := s.g.br.startAs(ctx, s, server, bindingOf(mcp.MethodToolsCall, p.Name, p.Arguments), meta, early, at, params, started, run)
	if ask != nil {
		return ask, nil
	}
	select {
	case <-started: // a task, even if it ended as the wait did
		return seed, nil
	default:
	}
	return s.modernAnswer(ctx, p, params, meta, at, early, res, err)
}

// newTask makes a task, not yet in the session's store.
func (s *session) newTask(modern bool) (*task, error) {
	id, err := randomID()
	if err != nil {
		return nil, &mcp.RPCError{Code: mcp.CodeInternalError, Message: "no randomness for a task id: " + err.Error()}
	}
	now := time.Now()
	return &task{id: id, created: now, updated: now, ttl: defaultTaskTTL, cancel: func() {}, done: make(chan struct{}),
		status: taskWorking, modern: modern}, nil
}

// storeTask puts t in the session's store and marks it detached, unless
// the store is full (the call then goes on as an ordinary one) or the
// call already returned.
func (s *session) storeTask(t *task) error {
	s.tasks.mu.Lock()
	s.expireTasks(time.Now())
	if len(s.tasks.byID) >= maxTasks {
		s.tasks.mu.Unlock()
		s.g.log.Warn("the session holds too many tasks; an upstream task is followed within its call instead", "agent", s.agent, "limit", maxTasks)
		return errors.New("too many tasks")
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.returned {
		s.tasks.mu.Unlock()
		return errors.New("the call returned")
	}
	if s.tasks.byID == nil {
		s.tasks.byID = map[string]*task{}
	}
	s.tasks.byID[t.id] = t
	s.tasks.mu.Unlock()
	t.detached = true
	return nil
}

// taskAsk is what an upstream task asks: judged by the chain, then
// parked in t's input_required until tasks/update brings every answer.
func (s *session) taskAsk(ctx context.Context, t *task, server string, meta *mcp.RequestMeta, reqs mcp.InputRequests) (mcp.InputResponses, error) {
	t.mu.Lock()
	detached := t.detached
	t.mu.Unlock()
	if !detached {
		return nil, &mcp.RPCError{Code: mcp.CodeInternalError, Message: "server " + server + "'s task asks for input, and this gateway could not hold the task for the agent (too many tasks in its session)"}
	}
	out, err := s.passInput(ctx, server, binding{}, &mcp.InputRequiredResult{InputRequests: reqs}, meta, nil) // no state: nothing to bind
	if err != nil {
		return nil, err
	}
	guarded := out.(*mcp.InputRequiredResult).InputRequests
	resp, err := t.await(ctx, guarded)
	if err != nil {
		return nil, err
	}
	// Each answer passes the chain's response half with its question,
	// as a server request's answer does; a refused one refuses the call.
	g := s.host()
	for k, raw := range resp {
		out, err := guardAnswer(ctx, g, server, k, guarded[k], raw)
		if err != nil {
			return nil, err
		}
		resp[k] = out
	}
	return resp, nil
}

// await puts qs in t's input_required and waits until tasks/update has
// answered each.
func (t *task) await(ctx context.Context, qs mcp.InputRequests) (mcp.InputResponses, error) {
	chans := make(map[string]chan json.RawMessage, len(qs))
	t.mu.Lock()
	if t.status == taskCompleted || t.status == taskFailed || t.status == taskCancelled {
		t.mu.Unlock()
		return nil, context.Canceled
	}
	if t.input.pending == nil {
		t.input.pending, t.input.waiting = mcp.InputRequests{}, map[string]chan json.RawMessage{}
	}
	for k, q := range qs {
		ch := make(chan json.RawMessage, 1)
		chans[k] = ch
		t.input.pending[k] = q
		t.input.waiting[k] = ch
	}
	t.status, t.message, t.updated = mcp.TaskInputRequired, "The tool waits for the agent's answer", time.Now()
	t.mu.Unlock()
	resp := make(mcp.InputResponses, len(chans))
	for k, ch := range chans {
		select {
		case raw := <-ch:
			resp[k] = raw
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return resp, nil
}

// followed is a modern agent's task that follows a 2025-11-25 server's
// task: what that server asks during its task (its requests to the
// client while tasks/result waits) comes to the agent's shared
// connection, and the bridge (bridge.ask) hands it here.
type followed struct {
	t        *task
	upstream string // the server's task id
	c        *bcall // the bridged call that became the task: its context names it (and its session) in the audit log
	meta     *mcp.RequestMeta

	mu sync.Mutex
	n  map[string]int // keys handed out per method
}

// ask puts a server's request of the task in the agent's task: its
// input_required, until tasks/update answers it. The request passed the
// chain as a server's request does (the host guards the connection's
// handlers), and its answer will on its way back: nothing more here.
func (f *followed) ask(ctx context.Context, method string, params json.RawMessage, meta mcp.Meta) (json.RawMessage, error) {
	engine.SetCall(ctx, f.c.ctx)
	q := mcp.InputRequest{Method: method, Params: params}
	if err := declared(f.meta.Capabilities, q); err != nil {
		return nil, &mcp.RPCError{Code: mcp.CodeInvalidRequest, Message: "the client's request did not declare " + method}
	}
	key := ""
	if raw, ok := meta[mcp.MetaInputKey]; ok {
		var k string
		if json.Unmarshal(raw, &k) == nil && k != "" && len(k) <= 128 {
			key = k
		}
	}
	f.mu.Lock()
	if key == "" || f.n[key] > 0 {
		base := key
		if base == "" {
			base = strings.ReplaceAll(method, "/", ".")
		}
		key = fmt.Sprintf("%s-%d", base, f.n[base])
		f.n[base]++
	}
	f.n[key]++
	f.mu.Unlock()
	resp, err := f.t.await(ctx, mcp.InputRequests{key: q})
	if err != nil {
		return nil, err
	}
	raw := resp[key]
	if err := checkAnswer(method, raw); err != nil {
		return nil, &mcp.RPCError{Code: mcp.CodeInvalidParams, Message: fmt.Sprintf("the client's answer to %s (input %q) is not a %s result: %v", method, key, method, err)}
	}
	return raw, nil
}

// modernState is t as the extension's Task; detail inlines its status's
// payload (tasks/get).
func (t *task) modernState(detail bool) *mcp.DetailedTask {
	t.mu.Lock()
	defer t.mu.Unlock()
	ttl := t.ttl.Milliseconds()
	d := &mcp.DetailedTask{TaskID: t.id, Status: t.status, StatusMessage: t.message,
		CreatedAt: t.created.UTC().Format(time.RFC3339Nano), LastUpdatedAt: t.updated.UTC().Format(time.RFC3339Nano),
		TTLMs: &ttl, PollIntervalMs: pollInterval.Milliseconds()}
	if !detail {
		return d
	}
	switch t.status {
	case mcp.TaskInputRequired:
		d.InputRequests = make(mcp.InputRequests, len(t.input.pending))
		for k, q := range t.input.pending {
			d.InputRequests[k] = q
		}
	case taskCompleted:
		raw, err := resultBytes(t.result)
		if err != nil {
			d.Status, d.Error = taskFailed, &mcp.RPCError{Code: mcp.CodeInternalError, Message: "the task's result does not encode: " + err.Error()}
			break
		}
		d.Result = raw
	case taskFailed:
		var rerr *mcp.RPCError
		if !errors.As(t.err, &rerr) {
			rerr = &mcp.RPCError{Code: mcp.CodeInternalError, Message: oneLine(t.err)}
		}
		d.Error = rerr
	}
	return d
}

// resultBytes is a call's result as JSON: the upstream's bytes when the
// chain passed them on unchanged, else the result encoded.
func resultBytes(res any) (json.RawMessage, error) {
	switch r := res.(type) {
	case *json.RawMessage:
		return *r, nil
	case json.RawMessage:
		return r, nil
	}
	return json.Marshal(res)
}

// modernTask serves tasks/get, tasks/update and tasks/cancel of a modern
// agent: for its own tasks only, and only when it declared the
// extension.
func (s *session) modernTask(method string, params json.RawMessage, meta *mcp.RequestMeta) (any, error) {
	if !mcp.DeclaresTasks(meta.Capabilities) {
		return nil, mcp.TasksRequired(method + " is the tasks extension's")
	}
	id, err := mcp.TaskIDOf(method, params)
	if err != nil {
		return nil, err
	}
	s.tasks.mu.Lock()
	s.expireTasks(time.Now())
	t := s.tasks.byID[id]
	s.tasks.mu.Unlock()
	if t == nil || !t.modern {
		return nil, mcp.TaskNotFound(id)
	}
	ack := map[string]string{"resultType": mcp.ResultComplete}
	switch method {
	case methodTasksGet:
		d := t.modernState(true)
		d.ResultType = mcp.ResultComplete
		return d, nil
	case mcp.MethodTasksUpdate:
		var p mcp.TaskUpdateParams
		if err := json.Unmarshal(params, &p); err != nil || p.InputResponses == nil {
			return nil, mcp.InvalidParams("tasks/update: params need inputResponses, an object of results by the keys of the task's inputRequests")
		}
		t.mu.Lock()
		for k, raw := range p.InputResponses {
			// A key not outstanding is ignored, as the extension says.
			if ch, ok := t.input.waiting[k]; ok {
				ch <- raw
				delete(t.input.waiting, k)
				delete(t.input.pending, k)
			}
		}
		if t.status == mcp.TaskInputRequired && len(t.input.pending) == 0 {
			t.status, t.message, t.updated = taskWorking, "", time.Now()
		}
		t.mu.Unlock()
		return ack, nil
	case methodTasksCancel:
		if t.finish(taskCancelled, "The task was cancelled by request.", nil, nil) {
			t.cancel()
		}
		return ack, nil
	}
	return nil, mcp.MethodNotFound(method)
}
