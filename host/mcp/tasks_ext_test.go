package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

const tasksCaps = `{"elicitation":{},"extensions":{"io.modelcontextprotocol/tasks":{}}}`

// taskServer is a modern-only server with task tools: wait (runs until
// release is closed or its task is cancelled, telling cancelled),
// confirm (one elicitation), pair (two at once), broken (a JSON-RPC
// error), must (required), composed (an MRTR round, then a task).
func taskServer(ttl time.Duration, release <-chan struct{}, cancelled chan<- struct{}) *Server {
	s := NewServer(Implementation{Name: "tasks", Version: "1"}, ServerOptions{ModernOnly: true, TaskTTL: ttl})
	s.AddTaskTool(Tool{Name: "wait"}, "optional", false, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		select {
		case <-release:
			return &CallToolResult{Content: []Content{TextContent("released")}}, nil
		case <-ctx.Done():
			if cancelled != nil {
				cancelled <- struct{}{}
			}
			return nil, ctx.Err()
		}
	})
	s.AddTaskTool(Tool{Name: "confirm"}, "optional", false, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		r, err := req.Session.Elicit(ctx, &ElicitParams{Message: "sure?", RequestedSchema: json.RawMessage(`{"type":"object"}`)})
		if err != nil {
			return nil, err
		}
		return &CallToolResult{Content: []Content{TextContent("confirm: " + r.Action)}}, nil
	})
	s.AddTaskTool(Tool{Name: "pair"}, "optional", false, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		errs := make(chan error, 2)
		for range 2 {
			go func() {
				_, err := req.Session.Elicit(ctx, &ElicitParams{Message: "one of two", RequestedSchema: json.RawMessage(`{"type":"object"}`)})
				errs <- err
			}()
		}
		for range 2 {
			if err := <-errs; err != nil {
				return nil, err
			}
		}
		return &CallToolResult{Content: []Content{TextContent("both")}}, nil
	})
	s.AddTaskTool(Tool{Name: "broken"}, "optional", false, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		return nil, &RPCError{Code: -32099, Message: "the worker crashed"}
	})
	s.AddTaskTool(Tool{Name: "must"}, "required", false, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		return &CallToolResult{Content: []Content{TextContent("as a task")}}, nil
	})
	s.AddTaskTool(Tool{Name: "composed"}, "required", true, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		r, err := req.Session.Elicit(ctx, &ElicitParams{Message: "name?", RequestedSchema: json.RawMessage(`{"type":"object"}`)})
		if err != nil {
			return nil, err
		}
		if !req.StartTask(ctx) {
			return nil, errors.New("not a task")
		}
		return &CallToolResult{Content: []Content{TextContent(fmt.Sprint("hello ", r.Content["name"]))}}, nil
	})
	return s
}

// getUntil polls tasks/get until ok says the answer will do (10 s at most).
func getUntil(t *testing.T, c *rawClient, id *int, task string, ok func(map[string]any) bool) map[string]any {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		*id++
		m := c.call(*id, "tasks/get", `{"taskId":"`+task+`",`+modernMeta(tasksCaps, "")+`}`)
		if ok(m) {
			return m
		}
		if time.Now().After(deadline) {
			t.Fatalf("tasks/get never came to the state wanted; last: %v", m)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func statusIs(s string) func(map[string]any) bool {
	return func(m map[string]any) bool { r, _ := m["result"].(map[string]any); return r != nil && r["status"] == s }
}

func TestTaskServerWire(t *testing.T) {
	release := make(chan struct{})
	c := serveRaw(t, taskServer(0, release, nil), nil)
	id := 1
	d := result(t, c.call(id, MethodServerDiscover, `{`+modernMeta(`{}`, "")+`}`))
	if ext := d["capabilities"].(map[string]any)["extensions"].(map[string]any); ext[ExtensionTasks] == nil {
		t.Fatalf("discover does not declare the extension: %v", d)
	}
	id++
	created := result(t, c.call(id, MethodToolsCall, `{"name":"wait",`+modernMeta(tasksCaps, "")+`}`))
	task, _ := created["taskId"].(string)
	if created["resultType"] != ResultTask || len(task) < 32 || created["status"] != TaskWorking || created["ttlMs"] == nil || created["pollIntervalMs"] == nil {
		t.Fatalf("CreateTaskResult: %v", created)
	}
	for _, k := range []string{"result", "error", "inputRequests", "requestState", "task"} {
		if _, ok := created[k]; ok {
			t.Errorf("CreateTaskResult carries %s: %v", k, created)
		}
	}
	id++
	if g := result(t, c.call(id, MethodTasksGet, `{"taskId":"`+task+`",`+modernMeta(tasksCaps, "")+`}`)); g["status"] != TaskWorking || g["resultType"] != ResultComplete {
		t.Fatalf("tasks/get at once: %v", g)
	}
	close(release)
	done := result(t, getUntil(t, c, &id, task, statusIs(TaskCompleted)))
	if r := done["result"].(map[string]any); r["content"].([]any)[0].(map[string]any)["text"] != "released" {
		t.Fatalf("completed: %v", done)
	}
	// Cancelling what ended is the same empty ack.
	id++
	if a := result(t, c.call(id, MethodTasksCancel, `{"taskId":"`+task+`",`+modernMeta(tasksCaps, "")+`}`)); len(a) != 1 || a["resultType"] != ResultComplete {
		t.Fatalf("cancel ack: %v", a)
	}

	for _, tc := range []struct {
		name, method, params string
		code                 int
	}{
		{"not declared", MethodTasksGet, `{"taskId":"` + task + `",` + modernMeta(`{}`, "") + `}`, CodeMissingRequiredCapability},
		{"update not declared", MethodTasksUpdate, `{"taskId":"x","inputResponses":{},` + modernMeta(`{}`, "") + `}`, CodeMissingRequiredCapability},
		{"unknown", MethodTasksGet, `{"taskId":"nope",` + modernMeta(tasksCaps, "") + `}`, CodeInvalidParams},
		{"unknown cancel", MethodTasksCancel, `{"taskId":"nope",` + modernMeta(tasksCaps, "") + `}`, CodeInvalidParams},
		{"too long", MethodTasksGet, `{"taskId":"` + strings.Repeat("a", MaxTaskIDBytes+1) + `",` + modernMeta(tasksCaps, "") + `}`, CodeInvalidParams},
		{"no id", MethodTasksGet, `{` + modernMeta(tasksCaps, "") + `}`, CodeInvalidParams},
		{"update without responses", MethodTasksUpdate, `{"taskId":"` + task + `",` + modernMeta(tasksCaps, "") + `}`, CodeInvalidParams},
		{"tasks/result is gone", MethodTasksResult, `{"taskId":"` + task + `",` + modernMeta(tasksCaps, "") + `}`, CodeMethodNotFound},
		{"tasks/list is gone", MethodTasksList, `{` + modernMeta(tasksCaps, "") + `}`, CodeMethodNotFound},
		{"required without the extension", MethodToolsCall, `{"name":"must",` + modernMeta(`{}`, "") + `}`, CodeMissingRequiredCapability},
	} {
		id++
		m := c.call(id, tc.method, tc.params)
		if errCode(m) != tc.code {
			t.Errorf("%s: %v, want code %d", tc.name, m, tc.code)
		}
		if tc.name == "required without the extension" {
			data, _ := json.Marshal(m["error"].(map[string]any)["data"])
			if !strings.Contains(string(data), `"extensions":{"io.modelcontextprotocol/tasks":{}}`) {
				t.Errorf("-32021 data: %s", data)
			}
		}
	}
	// An optional task tool called without the extension is a plain
	// call: its question is an MRTR round, not a task's.
	id++
	if r := result(t, c.call(id, MethodToolsCall, `{"name":"confirm",`+modernMeta(`{"elicitation":{}}`, "")+`}`)); r["resultType"] != ResultInputRequired || r["taskId"] != nil {
		t.Fatalf("plain call of confirm answered %v", r)
	}
}

func TestTaskServerFailsAndParks(t *testing.T) {
	c := serveRaw(t, taskServer(0, nil, nil), nil)
	id := 1
	created := result(t, c.call(id, MethodToolsCall, `{"name":"broken",`+modernMeta(tasksCaps, "")+`}`))
	if created["status"] != TaskWorking {
		t.Fatalf("a CreateTaskResult is the state the task started in: %v", created)
	}
	failed := result(t, getUntil(t, c, &id, created["taskId"].(string), statusIs(TaskFailed)))
	if e := failed["error"].(map[string]any); e["code"] != float64(-32099) || failed["result"] != nil {
		t.Fatalf("failed task: %v", failed)
	}

	// Two questions at once, answered one at a time: the answered key
	// goes, the other stays, an unknown key is ignored.
	id++
	created = result(t, c.call(id, MethodToolsCall, `{"name":"pair",`+modernMeta(tasksCaps, "")+`}`))
	task := created["taskId"].(string)
	parked := result(t, getUntil(t, c, &id, task, func(m map[string]any) bool {
		r, _ := m["result"].(map[string]any)
		q, _ := r["inputRequests"].(map[string]any)
		return len(q) == 2
	}))
	var keys []string
	for k, q := range parked["inputRequests"].(map[string]any) {
		if q.(map[string]any)["method"] != MethodElicitationCreate {
			t.Fatalf("input request %s: %v", k, q)
		}
		keys = append(keys, k)
	}
	id++
	ack := result(t, c.call(id, MethodTasksUpdate, `{"taskId":"`+task+`","inputResponses":{"`+keys[0]+`":{"action":"accept","content":{}},"never-asked":{"action":"accept"}},`+modernMeta(tasksCaps, "")+`}`))
	if len(ack) != 1 || ack["resultType"] != ResultComplete {
		t.Fatalf("update ack: %v", ack)
	}
	id++
	after := result(t, c.call(id, MethodTasksGet, `{"taskId":"`+task+`",`+modernMeta(tasksCaps, "")+`}`))
	left := after["inputRequests"].(map[string]any)
	if after["status"] != TaskInputRequired || len(left) != 1 || left[keys[1]] == nil {
		t.Fatalf("after a partial update: %v", after)
	}
	id++
	result(t, c.call(id, MethodTasksUpdate, `{"taskId":"`+task+`","inputResponses":{"`+keys[1]+`":{"action":"decline"}},`+modernMeta(tasksCaps, "")+`}`))
	getUntil(t, c, &id, task, statusIs(TaskCompleted))

	// The composed tool: an MRTR round first, then the task.
	id++
	round := result(t, c.call(id, MethodToolsCall, `{"name":"composed",`+modernMeta(tasksCaps, "")+`}`))
	if round["resultType"] != ResultInputRequired || round["taskId"] != nil {
		t.Fatalf("round 1: %v", round)
	}
	var key string
	for k := range round["inputRequests"].(map[string]any) {
		key = k
	}
	state, _ := json.Marshal(round["requestState"])
	id++
	created = result(t, c.call(id, MethodToolsCall, `{"name":"composed","inputResponses":{"`+key+`":{"action":"accept","content":{"name":"Ada"}}},"requestState":`+string(state)+`,`+modernMeta(tasksCaps, "")+`}`))
	if created["resultType"] != ResultTask || created["requestState"] != nil {
		t.Fatalf("round 2: %v", created)
	}
	done := result(t, getUntil(t, c, &id, created["taskId"].(string), statusIs(TaskCompleted)))
	if txt := done["result"].(map[string]any)["content"].([]any)[0].(map[string]any)["text"]; txt != "hello Ada" {
		t.Fatalf("composed result: %v", done)
	}
}

// A task is dropped, and its handler cancelled, once its ttl passed.
func TestTaskServerExpiry(t *testing.T) {
	cancelled := make(chan struct{}, 1)
	c := serveRaw(t, taskServer(time.Millisecond, make(chan struct{}), cancelled), nil)
	id := 1
	created := result(t, c.call(id, MethodToolsCall, `{"name":"wait",`+modernMeta(tasksCaps, "")+`}`))
	getUntil(t, c, &id, created["taskId"].(string), func(m map[string]any) bool { return errCode(m) == CodeInvalidParams })
	select {
	case <-cancelled:
	case <-time.After(10 * time.Second):
		t.Fatal("the expired task's handler was not cancelled")
	}
}

// The store is capped: one task more than maxServerTasks is refused.
func TestTaskServerCap(t *testing.T) {
	c := serveRaw(t, taskServer(0, make(chan struct{}), nil), nil)
	for i := 1; i <= maxServerTasks; i++ {
		if r := result(t, c.call(i, MethodToolsCall, `{"name":"wait",`+modernMeta(tasksCaps, "")+`}`)); r["resultType"] != ResultTask {
			t.Fatalf("task %d: %v", i, r)
		}
	}
	if m := c.call(maxServerTasks+1, MethodToolsCall, `{"name":"wait",`+modernMeta(tasksCaps, "")+`}`); errCode(m) != CodeBusy {
		t.Fatalf("over the cap: %v", m)
	}
}

// CallTool follows a modern server's task to its result: the question it
// asks meanwhile goes to the client's elicitation handler, once.
func TestTaskClientFollows(t *testing.T) {
	var asked atomic.Int32
	c := connectPair(t, taskServer(0, nil, nil), ClientOptions{Elicitation: func(ctx context.Context, p *ElicitParams) (*ElicitResult, error) {
		asked.Add(1)
		return &ElicitResult{Action: "accept", Content: map[string]any{}}, nil
	}})
	if !c.Modern() {
		t.Fatal("not modern")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var started atomic.Pointer[DetailedTask]
	res, err := c.CallTool(WithTaskHooks(ctx, &TaskHooks{Started: func(t *DetailedTask) { started.Store(t) }}), "confirm", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Content[0].Text != "confirm: accept" || asked.Load() != 1 || started.Load() == nil {
		t.Fatalf("result %+v, asked %d times, started %v", res, asked.Load(), started.Load())
	}
	// A required task tool through CallToolAsTask, and a failing one.
	if res, err := c.CallToolAsTask(ctx, "must", nil, nil); err != nil || res.Content[0].Text != "as a task" {
		t.Fatalf("must: %v %v", res, err)
	}
	var re *RPCError
	if _, err := c.CallTool(ctx, "broken", nil, nil); !errors.As(err, &re) || re.Code != -32099 {
		t.Fatalf("broken: %v", err)
	}
}

// The Answer hook answers what the task asks instead of the handlers.
func TestTaskClientAnswerHook(t *testing.T) {
	c := connectPair(t, taskServer(0, nil, nil), ClientOptions{Elicitation: func(ctx context.Context, p *ElicitParams) (*ElicitResult, error) {
		return nil, errors.New("the handler must not be asked")
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	hooks := &TaskHooks{Answer: func(ctx context.Context, reqs InputRequests) (InputResponses, error) {
		out := InputResponses{}
		for k := range reqs {
			out[k] = json.RawMessage(`{"action":"decline"}`)
		}
		return out, nil
	}}
	res, err := c.CallTool(WithTaskHooks(ctx, hooks), "confirm", nil, nil)
	if err != nil || res.Content[0].Text != "confirm: decline" {
		t.Fatalf("%+v %v", res, err)
	}
}

// When the caller gives up, so does the task: tasks/cancel reaches the
// server, whose handler is cancelled.
func TestTaskClientCancel(t *testing.T) {
	cancelled := make(chan struct{}, 1)
	c := connectPair(t, taskServer(0, make(chan struct{}), cancelled), ClientOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cctx, stop := context.WithCancel(ctx)
	_, err := c.CallTool(WithTaskHooks(cctx, &TaskHooks{Started: func(*DetailedTask) { stop() }}), "wait", nil, nil)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	select {
	case <-cancelled:
	case <-ctx.Done():
		t.Fatal("the server's handler was not cancelled")
	}
}

func TestPollWait(t *testing.T) {
	for _, tc := range []struct {
		ms   int64
		want time.Duration
	}{{0, 4 * minTaskPoll}, {-5, 4 * minTaskPoll}, {1, minTaskPoll}, {300, 300 * time.Millisecond}, {1 << 40, maxTaskPoll}} {
		if got := pollWait(tc.ms); got != tc.want {
			t.Errorf("pollWait(%d) = %v, want %v", tc.ms, got, tc.want)
		}
	}
}

// A task that outlives its ttlMs is given up on (and cancelled); one the
// server cancels ends the call with a TaskError; a task with a bad id or
// status is refused; every tasks/get carries the extension in _meta.
func TestTaskClientBounds(t *testing.T) {
	created := func(id string, ttl int) string {
		return fmt.Sprintf(`{"resultType":"task","taskId":%q,"status":"working","createdAt":"2026-01-01T00:00:00Z","lastUpdatedAt":"2026-01-01T00:00:00Z","ttlMs":%d,"pollIntervalMs":1}`, id, ttl)
	}
	f := &modernFake{serve: func(method string, params json.RawMessage) (string, string) {
		var p struct {
			Name   string `json:"name"`
			TaskID string `json:"taskId"`
		}
		json.Unmarshal(params, &p)
		switch {
		case method == MethodToolsCall && p.Name == "stuck":
			return created("stuck-1", 30), ""
		case method == MethodToolsCall && p.Name == "dropped":
			return created("dropped-1", 60000), ""
		case method == MethodToolsCall && p.Name == "huge":
			return created(strings.Repeat("h", MaxTaskIDBytes+1), 60000), ""
		case method == MethodToolsCall && p.Name == "odd":
			return created("odd-1", 60000), ""
		case method == MethodTasksGet && p.TaskID == "stuck-1":
			return `{"resultType":"complete","taskId":"stuck-1","status":"working","createdAt":"x","lastUpdatedAt":"x","ttlMs":30,"pollIntervalMs":1}`, ""
		case method == MethodTasksGet && p.TaskID == "dropped-1":
			return `{"resultType":"complete","taskId":"dropped-1","status":"cancelled","statusMessage":"an operator stopped it","createdAt":"x","lastUpdatedAt":"x","ttlMs":null}`, ""
		case method == MethodTasksGet && p.TaskID == "odd-1":
			return `{"resultType":"complete","taskId":"odd-1","status":"sleeping","createdAt":"x","lastUpdatedAt":"x","ttlMs":null}`, ""
		case method == MethodTasksCancel:
			return `{"resultType":"complete"}`, ""
		}
		return "", `{"code":-32601,"message":"no"}`
	}}
	c := connectModern(t, f, ClientOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var te *TaskError
	if _, err := c.CallTool(ctx, "stuck", nil, nil); !errors.As(err, &te) || !strings.Contains(err.Error(), "ttlMs") {
		t.Fatalf("stuck: %v", err)
	}
	if n := len(f.requests(MethodTasksCancel)); n != 1 {
		t.Fatalf("%d tasks/cancel sent for the task given up on", n)
	}
	if _, err := c.CallTool(ctx, "dropped", nil, nil); !errors.As(err, &te) || te.Status != TaskCancelled || !strings.Contains(err.Error(), "operator") {
		t.Fatalf("dropped: %v", err)
	}
	if _, err := c.CallTool(ctx, "huge", nil, nil); err == nil || !strings.Contains(err.Error(), "bytes") {
		t.Fatalf("huge id: %v", err)
	}
	if _, err := c.CallTool(ctx, "odd", nil, nil); err == nil || !strings.Contains(err.Error(), "sleeping") {
		t.Fatalf("odd status: %v", err)
	}
	for _, r := range f.requests(MethodTasksGet) {
		m := metaOf(t, r.params)
		if !strings.Contains(string(m[MetaClientCapabilities]), ExtensionTasks) {
			t.Fatalf("tasks/get without the extension in _meta: %s", r.params)
		}
	}
}
