package testserver

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"image/png"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nexus-mcp/nexus/host/mcp"
)

// connect serves a test server over mcp.Pipe and returns a connected client.
func connect(t testing.TB, o Options, co mcp.ClientOptions) *mcp.Client {
	t.Helper()
	a, b := mcp.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- New(o).Serve(ctx, b) }()
	c, err := mcp.Connect(ctx, a, co)
	if err != nil {
		cancel()
		<-done
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() {
		c.Close()
		cancel()
		<-done
	})
	return c
}

func testCtx(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func call(t *testing.T, c *mcp.Client, name string, args any) *mcp.CallToolResult {
	t.Helper()
	res, err := c.CallTool(testCtx(t), name, args, nil)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res
}

// text is the single text block of a result.
func text(t *testing.T, r *mcp.CallToolResult) string {
	t.Helper()
	if len(r.Content) != 1 || r.Content[0].Type != mcp.ContentText {
		t.Fatalf("want one text block, got %+v", r.Content)
	}
	return r.Content[0].Text
}

func wantOK(t *testing.T, r *mcp.CallToolResult) string {
	t.Helper()
	s := text(t, r)
	if r.IsError {
		t.Fatalf("unexpected tool error: %s", s)
	}
	return s
}

func wantToolError(t *testing.T, r *mcp.CallToolResult, contains ...string) {
	t.Helper()
	s := text(t, r)
	if !r.IsError {
		t.Fatalf("want isError, got %q", s)
	}
	for _, c := range contains {
		if !strings.Contains(s, c) {
			t.Errorf("error text %q does not contain %q", s, c)
		}
	}
}

var builtinTools = []string{
	"echo", "get_time", "add", "slow_operation", "fail", "sample", "elicit", "roots", "large_output", "emit_binary",
}

func TestInitialize(t *testing.T) {
	c := connect(t, Options{}, mcp.ClientOptions{})
	if got := c.ServerInfo(); got.Name != "nexus-testserver" || got.Version != "1.0.0" {
		t.Errorf("serverInfo = %+v", got)
	}
	if c.Instructions() == "" {
		t.Error("no instructions")
	}
	caps := c.Capabilities()
	if caps.Tools == nil || caps.Resources == nil || caps.Prompts == nil || caps.Logging == nil || caps.Completions == nil {
		t.Errorf("capabilities = %+v", caps)
	}
	if c.ProtocolVersion() != mcp.LatestVersion {
		t.Errorf("protocol version %q", c.ProtocolVersion())
	}
}

type schema struct {
	Type       string                     `json:"type"`
	Properties map[string]json.RawMessage `json:"properties"`
	Required   []string                   `json:"required"`
}

func TestListTools(t *testing.T) {
	c := connect(t, Options{}, mcp.ClientOptions{})
	tools, err := c.ListTools(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	byName := map[string]mcp.Tool{}
	for _, tl := range tools {
		names = append(names, tl.Name)
		byName[tl.Name] = tl
		if tl.Title == "" || tl.Description == "" {
			t.Errorf("%s: missing title or description", tl.Name)
		}
		var s schema
		if err := json.Unmarshal(tl.InputSchema, &s); err != nil || s.Type != "object" || s.Properties == nil {
			t.Errorf("%s: inputSchema %s is not an object schema with properties (%v)", tl.Name, tl.InputSchema, err)
		}
		for _, r := range s.Required {
			if _, ok := s.Properties[r]; !ok {
				t.Errorf("%s: required %q is not a property", tl.Name, r)
			}
		}
		if tl.Annotations == nil || tl.Annotations.ReadOnlyHint == nil {
			t.Errorf("%s: no readOnlyHint annotation", tl.Name)
		}
	}
	if !slices.Equal(names, builtinTools) {
		t.Errorf("tools = %v, want %v", names, builtinTools)
	}

	wantSchema := map[string][]string{"echo": {"message"}, "add": {"a", "b"}, "sample": {"prompt"}, "large_output": {"bytes"}}
	for name, req := range wantSchema {
		var s schema
		_ = json.Unmarshal(byName[name].InputSchema, &s)
		if !slices.Equal(s.Required, req) {
			t.Errorf("%s: required = %v, want %v", name, s.Required, req)
		}
	}
	var slow schema
	_ = json.Unmarshal(byName["slow_operation"].InputSchema, &slow)
	if _, ok := slow.Properties["duration"]; !ok || slow.Properties["steps"] == nil {
		t.Errorf("slow_operation schema %s", byName["slow_operation"].InputSchema)
	}
	for name, prop := range map[string]string{"get_time": "time", "add": "sum"} {
		var s schema
		if err := json.Unmarshal(byName[name].OutputSchema, &s); err != nil || s.Type != "object" || s.Properties[prop] == nil {
			t.Errorf("%s: outputSchema %s", name, byName[name].OutputSchema)
		}
	}
	if a := byName["get_time"].Annotations; a == nil || a.ReadOnlyHint == nil || !*a.ReadOnlyHint {
		t.Error("get_time is not readOnly")
	}
}

func TestEcho(t *testing.T) {
	c := connect(t, Options{}, mcp.ClientOptions{})
	if got := wantOK(t, call(t, c, "echo", map[string]any{"message": "hello, wörld"})); got != "hello, wörld" {
		t.Errorf("echo = %q", got)
	}
	if got := wantOK(t, call(t, c, "echo", map[string]any{"message": ""})); got != "" {
		t.Errorf("echo empty = %q", got)
	}
	wantToolError(t, call(t, c, "echo", nil), `"message"`)
	wantToolError(t, call(t, c, "echo", map[string]any{"message": 42}), `"message"`, "string")
	wantToolError(t, call(t, c, "echo", json.RawMessage(`[1]`)), "JSON object")
}

func TestGetTime(t *testing.T) {
	c := connect(t, Options{}, mcp.ClientOptions{})
	before := time.Now().Add(-time.Second)
	r := call(t, c, "get_time", nil)
	s := wantOK(t, r)
	tm, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatalf("get_time %q: %v", s, err)
	}
	if tm.Before(before.Truncate(time.Second)) || tm.After(time.Now().Add(time.Second)) {
		t.Errorf("get_time %v is not now", tm)
	}
	var sc struct {
		Time string `json:"time"`
	}
	if err := json.Unmarshal(r.StructuredContent, &sc); err != nil || sc.Time != s {
		t.Errorf("structuredContent %s, text %q", r.StructuredContent, s)
	}
}

func TestAdd(t *testing.T) {
	c := connect(t, Options{}, mcp.ClientOptions{})
	r := call(t, c, "add", map[string]any{"a": 2, "b": 3.5})
	if got := wantOK(t, r); got != "5.5" {
		t.Errorf("add text = %q", got)
	}
	if string(r.StructuredContent) != `{"sum":5.5}` {
		t.Errorf("structuredContent = %s", r.StructuredContent)
	}
	if got := wantOK(t, call(t, c, "add", map[string]any{"a": -1, "b": 1})); got != "0" {
		t.Errorf("add = %q", got)
	}
	wantToolError(t, call(t, c, "add", map[string]any{"a": 1}), `"b"`, "missing")
	wantToolError(t, call(t, c, "add", nil), `"a" and "b"`)
	wantToolError(t, call(t, c, "add", map[string]any{"a": "1", "b": 2}), `"a"`, "must be a number")
	wantToolError(t, call(t, c, "add", json.RawMessage(`{"a":1e308,"b":1e308}`)), "overflows")
}

func TestFail(t *testing.T) {
	c := connect(t, Options{}, mcp.ClientOptions{})
	wantToolError(t, call(t, c, "fail", map[string]any{"message": "boom"}), "boom")
	wantToolError(t, call(t, c, "fail", nil), "always fails")
}

func TestLargeOutput(t *testing.T) {
	c := connect(t, Options{}, mcp.ClientOptions{})
	for _, n := range []int{0, 1, 61, 62, 63, 100000} {
		got := wantOK(t, call(t, c, "large_output", map[string]any{"bytes": n}))
		if len(got) != n {
			t.Errorf("large_output(%d) returned %d bytes", n, len(got))
		}
		if n >= 62 && !strings.HasPrefix(got, outputPattern) {
			t.Errorf("large_output(%d) content %q...", n, got[:62])
		}
	}
	wantToolError(t, call(t, c, "large_output", map[string]any{"bytes": 20<<20 + 1}), "20 MiB")
	wantToolError(t, call(t, c, "large_output", map[string]any{"bytes": -1}), "between")
	wantToolError(t, call(t, c, "large_output", map[string]any{"bytes": 1.5}), "integer")
	wantToolError(t, call(t, c, "large_output", nil), `"bytes"`)
}

func TestEmitBinary(t *testing.T) {
	c := connect(t, Options{}, mcp.ClientOptions{})
	r := call(t, c, "emit_binary", nil)
	if r.IsError || len(r.Content) != 4 {
		t.Fatalf("emit_binary = %+v", r)
	}
	img, audio, link, emb := r.Content[0], r.Content[1], r.Content[2], r.Content[3]
	if img.Type != mcp.ContentImage || img.MimeType != "image/png" {
		t.Errorf("image block %+v", img)
	}
	checkPNG(t, img.Data)
	if audio.Type != mcp.ContentAudio || audio.MimeType != "audio/wav" {
		t.Errorf("audio block %+v", audio)
	}
	wav, err := base64.StdEncoding.DecodeString(audio.Data)
	if err != nil || len(wav) != 44+80 || string(wav[:4]) != "RIFF" || string(wav[8:16]) != "WAVEfmt " || string(wav[36:40]) != "data" {
		t.Errorf("audio is not a WAV (%d bytes, %v)", len(wav), err)
	}
	if link.Type != mcp.ContentResourceLink || link.URI != "file:///readme.txt" || link.Name == "" {
		t.Errorf("resource_link %+v", link)
	}
	if emb.Type != mcp.ContentResource || emb.Resource == nil || emb.Resource.URI != "file:///config.json" || !json.Valid([]byte(emb.Resource.Text)) {
		t.Errorf("embedded resource %+v", emb)
	}
}

func checkPNG(t *testing.T, b64 string) {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		t.Fatalf("png base64: %v", err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("png: %v", err)
	}
	if img.Bounds().Dx() != 2 || img.Bounds().Dy() != 2 {
		t.Errorf("png bounds %v", img.Bounds())
	}
}

func TestPagination(t *testing.T) {
	c := connect(t, Options{ToolCount: 25, PageSize: 10}, mcp.ClientOptions{})
	ctx := testCtx(t)
	tools, err := c.ListTools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(tools) != 25+len(builtinTools) {
		t.Fatalf("got %d tools, want %d", len(tools), 25+len(builtinTools))
	}
	seen := map[string]bool{}
	for _, tl := range tools {
		if seen[tl.Name] {
			t.Errorf("duplicate tool %s", tl.Name)
		}
		seen[tl.Name] = true
	}
	for i := 1; i <= 25; i++ {
		if name := fmt.Sprintf("tool_%03d", i); !seen[name] {
			t.Errorf("missing %s", name)
		}
	}
	if got := wantOK(t, call(t, c, "tool_007", nil)); got != "tool_007" {
		t.Errorf("tool_007 = %q", got)
	}

	raw, err := c.Peer().CallRaw(ctx, mcp.MethodToolsList, nil)
	if err != nil {
		t.Fatal(err)
	}
	var page mcp.ListToolsResult
	if err := json.Unmarshal(raw, &page); err != nil {
		t.Fatal(err)
	}
	if len(page.Tools) != 10 || page.NextCursor == "" {
		t.Errorf("first page: %d tools, nextCursor %q", len(page.Tools), page.NextCursor)
	}

	// Every list method pages.
	c2 := connect(t, Options{PageSize: 2}, mcp.ClientOptions{})
	res, err := c2.ListResources(ctx)
	if err != nil || len(res) != 4 {
		t.Errorf("resources over pages of 2: %d, %v", len(res), err)
	}
	prompts, err := c2.ListPrompts(ctx)
	if err != nil || len(prompts) != 3 {
		t.Errorf("prompts over pages of 2: %d, %v", len(prompts), err)
	}
	raw, err = c2.Peer().CallRaw(ctx, mcp.MethodPromptsList, nil)
	if err != nil || !bytes.Contains(raw, []byte(`"nextCursor"`)) {
		t.Errorf("prompts/list page %s, %v", raw, err)
	}
}

func TestGeneratedToolNames(t *testing.T) {
	for _, tc := range []struct {
		n           int
		first, last string
	}{
		{1, "tool_001", "tool_001"},
		{999, "tool_001", "tool_999"},
		{1000, "tool_0001", "tool_1000"},
	} {
		s := mcp.NewServer(mcp.Implementation{Name: "x", Version: "1"}, mcp.ServerOptions{})
		addGeneratedTools(s, tc.n)
		a, b := mcp.Pipe()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- s.Serve(ctx, b) }()
		c, err := mcp.Connect(ctx, a, mcp.ClientOptions{})
		if err != nil {
			t.Fatal(err)
		}
		tools, err := c.ListTools(ctx)
		if err != nil || len(tools) != tc.n || tools[0].Name != tc.first || tools[len(tools)-1].Name != tc.last {
			t.Errorf("n=%d: %d tools, err %v", tc.n, len(tools), err)
		}
		c.Close()
		cancel()
		<-done
	}
}

func TestSlowOperationProgress(t *testing.T) {
	c := connect(t, Options{}, mcp.ClientOptions{})
	var mu sync.Mutex
	var got []mcp.Progress
	start := time.Now()
	r, err := c.CallTool(testCtx(t), "slow_operation", map[string]any{"duration": 0.2, "steps": 4}, &mcp.CallOptions{
		OnProgress: func(p mcp.Progress) {
			mu.Lock()
			got = append(got, p)
			mu.Unlock()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	wantOK(t, r)
	if el := time.Since(start); el < 200*time.Millisecond {
		t.Errorf("slow_operation took %v, want >= 200ms", el)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 4 {
		t.Fatalf("got %d progress notifications, want 4", len(got))
	}
	for i, p := range got {
		if p.Progress != float64(i+1) || p.Total == nil || *p.Total != 4 || p.Message != fmt.Sprintf("step %d of 4", i+1) {
			t.Errorf("progress %d = %+v", i, p)
		}
	}

	// Without a progress callback the tool still runs; defaults apply.
	wantOK(t, call(t, c, "slow_operation", map[string]any{"duration": 0, "steps": 3}))
	wantToolError(t, call(t, c, "slow_operation", map[string]any{"duration": -1}), "duration")
	wantToolError(t, call(t, c, "slow_operation", map[string]any{"duration": 0, "steps": 0}), "steps")
	wantToolError(t, call(t, c, "slow_operation", map[string]any{"duration": 0, "steps": 2.5}), "integer")
	wantToolError(t, call(t, c, "slow_operation", map[string]any{"duration": "1"}), "number")
}

func TestSlowOperationCancel(t *testing.T) {
	c := connect(t, Options{}, mcp.ClientOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := c.CallTool(ctx, "slow_operation", map[string]any{"duration": 60, "steps": 2}, nil)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want deadline exceeded", err)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("cancel took %v", el)
	}
	// The session is still usable.
	wantOK(t, call(t, c, "echo", map[string]any{"message": "still here"}))

	// The handler itself stops when its context ends (notifications/cancelled
	// cancels it in the peer).
	hctx, hcancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := slowOperation(hctx, &mcp.CallToolRequest{Name: "slow_operation", Arguments: json.RawMessage(`{"duration":300}`)})
		errc <- err
	}()
	time.Sleep(20 * time.Millisecond)
	hcancel()
	select {
	case err := <-errc:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("handler returned %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("slow_operation did not stop when cancelled")
	}
}

func TestLogging(t *testing.T) {
	logs := make(chan mcp.LogMessage, 10)
	c := connect(t, Options{}, mcp.ClientOptions{OnLog: func(m mcp.LogMessage) { logs <- m }})
	ctx := testCtx(t)
	wantOK(t, call(t, c, "echo", map[string]any{"message": "ping"}))
	// The notification is sent before the result, and the client handles
	// notifications in order on its read loop, so it has arrived by now.
	select {
	case m := <-logs:
		var data string
		if m.Level != "info" || m.Logger != "echo" || json.Unmarshal(m.Data, &data) != nil || data != "ping" {
			t.Errorf("log message %+v (data %s)", m, m.Data)
		}
	default:
		t.Fatal("no log notification for echo")
	}
	if err := c.SetLogLevel(ctx, "error"); err != nil {
		t.Fatal(err)
	}
	wantOK(t, call(t, c, "echo", map[string]any{"message": "quiet"}))
	select {
	case m := <-logs:
		t.Errorf("log at level info got through setLevel error: %+v", m)
	default:
	}
	if err := c.SetLogLevel(ctx, "debug"); err != nil {
		t.Fatal(err)
	}
	wantOK(t, call(t, c, "echo", map[string]any{"message": "loud"}))
	select {
	case <-logs:
	default:
		t.Error("no log notification after setLevel debug")
	}
}

func TestSampleElicitRoots(t *testing.T) {
	c := connect(t, Options{}, mcp.ClientOptions{
		Sampling: func(ctx context.Context, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
			var in mcp.Content
			if len(p.Messages) != 1 || p.Messages[0].Role != "user" || json.Unmarshal(p.Messages[0].Content, &in) != nil || p.MaxTokens != 256 {
				return nil, fmt.Errorf("unexpected sampling request %+v", p)
			}
			out, _ := json.Marshal(mcp.TextContent("reply to: " + in.Text))
			return &mcp.CreateMessageResult{Role: "assistant", Content: out, Model: "test-model"}, nil
		},
		Elicitation: func(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
			var s schema
			if err := json.Unmarshal(p.RequestedSchema, &s); err != nil || !slices.Equal(s.Required, []string{"name"}) || s.Properties["confirm"] == nil {
				return nil, fmt.Errorf("unexpected schema %s", p.RequestedSchema)
			}
			if p.Message == "decline me" {
				return &mcp.ElicitResult{Action: "decline"}, nil
			}
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada", "confirm": true}}, nil
		},
		Roots: func(ctx context.Context) ([]mcp.Root, error) {
			return []mcp.Root{{URI: "file:///work", Name: "Work"}, {URI: "file:///tmp"}}, nil
		},
	})
	if got := wantOK(t, call(t, c, "sample", map[string]any{"prompt": "hi"})); got != "reply to: hi" {
		t.Errorf("sample = %q", got)
	}
	wantToolError(t, call(t, c, "sample", nil), `"prompt"`)
	if got := wantOK(t, call(t, c, "elicit", map[string]any{"message": "who are you?"})); got != "action: accept\ncontent: {\"confirm\":true,\"name\":\"Ada\"}" {
		t.Errorf("elicit = %q", got)
	}
	if got := wantOK(t, call(t, c, "elicit", map[string]any{"message": "decline me"})); got != "action: decline" {
		t.Errorf("elicit decline = %q", got)
	}
	if got := wantOK(t, call(t, c, "roots", nil)); got != "file:///work (Work)\nfile:///tmp" {
		t.Errorf("roots = %q", got)
	}
}

func TestSampleElicitRootsUnsupported(t *testing.T) {
	c := connect(t, Options{}, mcp.ClientOptions{})
	wantToolError(t, call(t, c, "sample", map[string]any{"prompt": "hi"}), "sampling capability")
	wantToolError(t, call(t, c, "elicit", nil), "elicitation capability")
	wantToolError(t, call(t, c, "roots", nil), "roots capability")

	failing := connect(t, Options{}, mcp.ClientOptions{
		Sampling: func(context.Context, *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
			return nil, errors.New("user rejected sampling")
		},
	})
	wantToolError(t, call(t, failing, "sample", map[string]any{"prompt": "hi"}), "user rejected sampling")
}

func TestReplyText(t *testing.T) {
	got, err := replyText(json.RawMessage(` [{"type":"text","text":"a"},{"type":"image","data":"AA==","mimeType":"image/png"},{"type":"text","text":"b"}]`))
	if err != nil || got != "a\n[image content]\nb" {
		t.Errorf("replyText = %q, %v", got, err)
	}
	if _, err := replyText(json.RawMessage(`42`)); err == nil {
		t.Error("replyText accepted a number")
	}
}

func TestResources(t *testing.T) {
	c := connect(t, Options{}, mcp.ClientOptions{})
	ctx := testCtx(t)
	list, err := c.ListResources(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct{ uri, name, mime string }{
		{"file:///readme.txt", "README", "text/plain"},
		{"file:///config.json", "Configuration", "application/json"},
		{"file:///data/users.csv", "Users Data", "text/csv"},
		{"file:///logo.png", "Logo", "image/png"},
	}
	if len(list) != len(want) {
		t.Fatalf("resources = %+v", list)
	}
	for i, w := range want {
		r := list[i]
		if r.URI != w.uri || r.Name != w.name || r.MimeType != w.mime || r.Description == "" || r.Size == nil {
			t.Errorf("resource %d = %+v, want %+v", i, r, w)
		}
	}

	read := func(uri string) mcp.ResourceContents {
		t.Helper()
		res, err := c.ReadResource(ctx, uri)
		if err != nil {
			t.Fatalf("read %s: %v", uri, err)
		}
		if len(res.Contents) != 1 || res.Contents[0].URI != uri {
			t.Fatalf("read %s: %+v", uri, res)
		}
		return res.Contents[0]
	}
	for i, w := range want[:3] {
		rc := read(w.uri)
		if rc.MimeType != w.mime || rc.Text == "" || int64(len(rc.Text)) != *list[i].Size {
			t.Errorf("%s: %+v", w.uri, rc)
		}
	}
	if !strings.Contains(read("file:///readme.txt").Text, "test server") {
		t.Error("readme text")
	}
	var cfg map[string]any
	if err := json.Unmarshal([]byte(read("file:///config.json").Text), &cfg); err != nil || cfg["name"] != "nexus-testserver" {
		t.Errorf("config.json: %v %v", cfg, err)
	}
	rows, err := csv.NewReader(strings.NewReader(read("file:///data/users.csv").Text)).ReadAll()
	if err != nil || len(rows) != 5 || !slices.Equal(rows[0], []string{"id", "name", "email", "role"}) || rows[1][1] != "Alice Smith" {
		t.Errorf("users.csv rows %v, %v", rows, err)
	}

	logo := read("file:///logo.png")
	if logo.MimeType != "image/png" || logo.Text != "" {
		t.Errorf("logo %+v", logo)
	}
	checkPNG(t, logo.Blob)
	if *list[3].Size != int64(len(logoPNG)) {
		t.Errorf("logo size %d", *list[3].Size)
	}

	tmpls, err := c.ListResourceTemplates(ctx)
	if err != nil || len(tmpls) != 1 || tmpls[0].URITemplate != "file:///users/{id}" || tmpls[0].MimeType != "application/json" {
		t.Fatalf("templates %+v, %v", tmpls, err)
	}
	var u user
	if err := json.Unmarshal([]byte(read("file:///users/2").Text), &u); err != nil || u != users[1] {
		t.Errorf("users/2 = %+v, %v", u, err)
	}
	if err := json.Unmarshal([]byte(read("file:///users/42").Text), &u); err != nil || u.ID != "42" || u.Role != "guest" {
		t.Errorf("users/42 = %+v, %v", u, err)
	}
	if err := json.Unmarshal([]byte(read(`file:///users/a"b`).Text), &u); err != nil || u.ID != `a"b` {
		t.Errorf(`users/a"b = %+v, %v`, u, err)
	}

	for _, uri := range []string{"file:///users/a/b", "file:///missing.txt"} {
		var rerr *mcp.RPCError
		if _, err := c.ReadResource(ctx, uri); !errors.As(err, &rerr) || rerr.Code != -32002 {
			t.Errorf("read %s: err = %v, want resource not found", uri, err)
		}
	}
}

func TestPrompts(t *testing.T) {
	c := connect(t, Options{}, mcp.ClientOptions{})
	ctx := testCtx(t)
	prompts, err := c.ListPrompts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]mcp.PromptArgument{
		"greeting":    {{Name: "name", Required: true}, {Name: "formal"}},
		"code_review": {{Name: "language", Required: true}, {Name: "focus"}},
		"summarize":   {{Name: "max_length"}},
	}
	if len(prompts) != 3 {
		t.Fatalf("prompts = %+v", prompts)
	}
	for _, p := range prompts {
		w, ok := want[p.Name]
		if !ok || len(p.Arguments) != len(w) || p.Description == "" {
			t.Errorf("prompt %+v", p)
			continue
		}
		for i, a := range p.Arguments {
			if a.Name != w[i].Name || a.Required != w[i].Required || a.Description == "" {
				t.Errorf("%s argument %d = %+v", p.Name, i, a)
			}
		}
	}

	get := func(name string, args map[string]string) []mcp.PromptMessage {
		t.Helper()
		res, err := c.GetPrompt(ctx, name, args)
		if err != nil {
			t.Fatalf("%s %v: %v", name, args, err)
		}
		for _, m := range res.Messages {
			if (m.Role != "user" && m.Role != "assistant") || m.Content.Type != mcp.ContentText || m.Content.Text == "" {
				t.Errorf("%s: message %+v", name, m)
			}
		}
		return res.Messages
	}
	msgs := get("greeting", map[string]string{"name": "Ada"})
	if len(msgs) != 2 || !strings.Contains(msgs[0].Content.Text, "friendly greeting for Ada") || msgs[1].Role != "assistant" {
		t.Errorf("greeting = %+v", msgs)
	}
	msgs = get("greeting", map[string]string{"name": "Ada", "formal": "true"})
	if !strings.Contains(msgs[0].Content.Text, "formal greeting for Ada") || !strings.Contains(msgs[1].Content.Text, "Good day, Ada") {
		t.Errorf("formal greeting = %+v", msgs)
	}
	msgs = get("code_review", map[string]string{"language": "go", "focus": "performance"})
	if len(msgs) != 1 || !strings.Contains(msgs[0].Content.Text, "go code") || !strings.Contains(msgs[0].Content.Text, "performance") {
		t.Errorf("code_review = %+v", msgs)
	}
	msgs = get("code_review", map[string]string{"language": "rust"})
	if !strings.Contains(msgs[0].Content.Text, "security") {
		t.Errorf("code_review default focus = %+v", msgs)
	}
	if msgs = get("summarize", nil); !strings.Contains(msgs[0].Content.Text, "concisely") {
		t.Errorf("summarize = %+v", msgs)
	}
	if msgs = get("summarize", map[string]string{"max_length": "50"}); !strings.Contains(msgs[0].Content.Text, "at most 50 words") {
		t.Errorf("summarize 50 = %+v", msgs)
	}

	for _, tc := range []struct {
		name string
		args map[string]string
		want string
	}{
		{"greeting", nil, `missing required argument "name"`},
		{"greeting", map[string]string{"formal": "true"}, `"name"`},
		{"code_review", map[string]string{"focus": "x"}, `missing required argument "language"`},
		{"greeting", map[string]string{"name": "Ada", "formal": "maybe"}, `"formal"`},
		{"summarize", map[string]string{"max_length": "-3"}, `"max_length"`},
		{"nope", nil, "unknown prompt"},
	} {
		_, err := c.GetPrompt(ctx, tc.name, tc.args)
		var rerr *mcp.RPCError
		if !errors.As(err, &rerr) || rerr.Code != mcp.CodeInvalidParams || !strings.Contains(rerr.Message, tc.want) {
			t.Errorf("%s %v: err = %v, want invalid params containing %q", tc.name, tc.args, err, tc.want)
		}
	}
}

func TestCompletion(t *testing.T) {
	c := connect(t, Options{}, mcp.ClientOptions{})
	ctx := testCtx(t)
	complete := func(ref mcp.CompleteReference, arg, value string) ([]string, error) {
		p := &mcp.CompleteParams{Ref: ref}
		p.Argument.Name, p.Argument.Value = arg, value
		res, err := c.Complete(ctx, p)
		if err != nil {
			return nil, err
		}
		if res.Completion.Values == nil || res.Completion.Total == nil || *res.Completion.Total != len(res.Completion.Values) {
			t.Errorf("completion %+v", res.Completion)
		}
		return res.Completion.Values, nil
	}
	review := mcp.CompleteReference{Type: "ref/prompt", Name: "code_review"}
	for value, want := range map[string][]string{
		"py":   {"python"},
		"ja":   {"java", "javascript"},
		"T":    {"typescript"},
		"zzz":  {},
		"":     languages,
		"rust": {"rust"},
	} {
		got, err := complete(review, "language", value)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("language %q = %v, %v; want %v", value, got, err, want)
		}
	}
	if got, err := complete(review, "focus", "a"); err != nil || len(got) != 0 {
		t.Errorf("focus = %v, %v", got, err)
	}
	if got, err := complete(mcp.CompleteReference{Type: "ref/prompt", Name: "greeting"}, "formal", "t"); err != nil || !slices.Equal(got, []string{"true"}) {
		t.Errorf("formal = %v, %v", got, err)
	}
	userRef := mcp.CompleteReference{Type: "ref/resource", URI: "file:///users/{id}"}
	if got, err := complete(userRef, "id", ""); err != nil || !slices.Equal(got, []string{"1", "2", "3", "4"}) {
		t.Errorf("id = %v, %v", got, err)
	}
	if got, err := complete(userRef, "id", "3"); err != nil || !slices.Equal(got, []string{"3"}) {
		t.Errorf("id 3 = %v, %v", got, err)
	}
	for _, ref := range []mcp.CompleteReference{
		{Type: "ref/prompt", Name: "nope"},
		{Type: "ref/resource", URI: "file:///other/{x}"},
		{Type: "ref/tool", Name: "echo"},
	} {
		var rerr *mcp.RPCError
		if _, err := complete(ref, "x", ""); !errors.As(err, &rerr) || rerr.Code != mcp.CodeInvalidParams {
			t.Errorf("%+v: err = %v, want invalid params", ref, err)
		}
	}
}

func TestOptionsFromEnv(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	o, err := OptionsFromEnv(env(nil))
	if err != nil || o.ToolCount != 0 || o.PageSize != 0 {
		t.Errorf("empty env: %+v, %v", o, err)
	}
	o, err = OptionsFromEnv(env(map[string]string{"MCP_TOOL_COUNT": "10", "MCP_PAGE_SIZE": " 3 "}))
	if err != nil || o.ToolCount != 10 || o.PageSize != 3 {
		t.Errorf("10/3: %+v, %v", o, err)
	}
	for _, tc := range []struct {
		env  map[string]string
		name string
	}{
		{map[string]string{"MCP_TOOL_COUNT": "ten"}, "MCP_TOOL_COUNT"},
		{map[string]string{"MCP_TOOL_COUNT": "-1"}, "MCP_TOOL_COUNT"},
		{map[string]string{"MCP_TOOL_COUNT": "1000001"}, "MCP_TOOL_COUNT"},
		{map[string]string{"MCP_PAGE_SIZE": "2.5"}, "MCP_PAGE_SIZE"},
		{map[string]string{"MCP_TOOL_COUNT": "5", "MCP_PAGE_SIZE": "-2"}, "MCP_PAGE_SIZE"},
		{map[string]string{"MCP_START_DELAY": "soon"}, "MCP_START_DELAY"},
		{map[string]string{"MCP_START_DELAY": "-1s"}, "MCP_START_DELAY"},
		{map[string]string{"MCP_START_DELAY": "2h"}, "MCP_START_DELAY"},
	} {
		_, err := OptionsFromEnv(env(tc.env))
		if err == nil || !strings.Contains(err.Error(), tc.name) {
			t.Errorf("%v: err = %v, want one naming %s", tc.env, err, tc.name)
		}
	}
	if o, err := OptionsFromEnv(env(map[string]string{"MCP_START_DELAY": "250ms"})); err != nil || o.StartDelay != 250*time.Millisecond {
		t.Errorf("start delay: %+v, %v", o, err)
	}
	t.Setenv("MCP_TOOL_COUNT", "7")
	if o, err := OptionsFromEnv(nil); err != nil || o.ToolCount != 7 {
		t.Errorf("os env: %+v, %v", o, err)
	}
}

// TestStartDelay: ServeStdio answers nothing before the delay, and a
// cancelled context ends the wait at once.
func TestStartDelay(t *testing.T) {
	const delay = 150 * time.Millisecond
	pr, pw := io.Pipe()
	var out bytes.Buffer
	t0 := time.Now()
	done := make(chan error, 1)
	go func() { done <- ServeStdio(context.Background(), Options{StartDelay: delay}, pr, &out) }()
	pw.Close() // EOF as soon as it reads
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if d := time.Since(t0); d < delay {
		t.Errorf("served after %v, want at least %v", d, delay)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := ServeStdio(ctx, Options{StartDelay: MaxStartDelay}, strings.NewReader(""), io.Discard); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled during the delay: %v, want context.Canceled", err)
	}
}

func TestNewClampsOptions(t *testing.T) {
	c := connect(t, Options{ToolCount: -5, PageSize: -1}, mcp.ClientOptions{})
	tools, err := c.ListTools(testCtx(t))
	if err != nil || len(tools) != len(builtinTools) {
		t.Errorf("%d tools, %v", len(tools), err)
	}
}

func BenchmarkEchoPipe(b *testing.B) {
	c := connect(b, Options{}, mcp.ClientOptions{})
	ctx := context.Background()
	args := json.RawMessage(`{"message":"hello"}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.CallTool(ctx, "echo", args, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// The conformance suite's fixtures come with Options.Conformance only.
func TestConformanceFixtures(t *testing.T) {
	for _, on := range []bool{false, true} {
		s := New(Options{Conformance: on})
		a, b := mcp.Pipe()
		go s.Serve(context.Background(), b)
		c, err := mcp.Connect(context.Background(), a, mcp.ClientOptions{})
		if err != nil {
			t.Fatal(err)
		}
		tools, _ := c.ListTools(context.Background())
		has := false
		for _, tl := range tools {
			has = has || tl.Name == "test_simple_text"
		}
		if has != on {
			t.Errorf("Conformance %v: test_simple_text listed: %v", on, has)
		}
		if on {
			res, err := c.CallTool(context.Background(), "test_simple_text", nil, nil)
			if err != nil || res.Content[0].Text != "This is a simple text response for testing." {
				t.Errorf("test_simple_text: %v %+v", err, res)
			}
			rr, err := c.ReadResource(context.Background(), "test://template/123/data")
			if err != nil || rr.Contents[0].Text != `{"data":"Data for ID: 123","id":"123","templateTest":true}` {
				t.Errorf("template: %v %+v", err, rr)
			}
		}
		c.Close()
	}
	if o, _ := OptionsFromEnv(func(k string) string { return map[string]string{EnvConformance: "1"}[k] }); !o.Conformance {
		t.Error("MCP_CONFORMANCE=1 ignored")
	}
}

// The echo tool's variants change its definition between runs; rug-pull
// poisons it mid-session and says so with list_changed.
func TestVariants(t *testing.T) {
	echoOf := func(c *mcp.Client) mcp.Tool {
		t.Helper()
		tools, err := c.ListTools(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, tl := range tools {
			if tl.Name == "echo" {
				return tl
			}
		}
		t.Fatal("no echo")
		return mcp.Tool{}
	}
	plain := echoOf(connect(t, Options{}, mcp.ClientOptions{}))
	changed := echoOf(connect(t, Options{Variant: VariantChanged}, mcp.ClientOptions{}))
	poisoned := echoOf(connect(t, Options{Variant: VariantPoisoned}, mcp.ClientOptions{}))
	if changed.Description == plain.Description || string(changed.InputSchema) == string(plain.InputSchema) || !strings.Contains(string(changed.InputSchema), `"trim"`) {
		t.Errorf("changed: %+v", changed)
	}
	if !strings.Contains(poisoned.Description, "<IMPORTANT>") || !strings.Contains(string(poisoned.InputSchema), "id_rsa") {
		t.Errorf("poisoned: %+v", poisoned)
	}
	if _, err := OptionsFromEnv(func(k string) string { return map[string]string{EnvVariant: "evil"}[k] }); err == nil || !strings.Contains(err.Error(), `unknown tool variant "evil"`) {
		t.Errorf("a bad variant: %v", err)
	}

	changes := make(chan string, 4)
	c := connect(t, Options{Variant: VariantRugPull}, mcp.ClientOptions{OnListChanged: func(kind string) { changes <- kind }})
	if echoOf(c).Description != plain.Description {
		t.Fatal("rug-pull starts poisoned")
	}
	if _, err := c.CallTool(context.Background(), "rug_pull", nil, nil); err != nil {
		t.Fatal(err)
	}
	select {
	case kind := <-changes:
		if kind != "tools" {
			t.Fatalf("list_changed for %s", kind)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no list_changed after rug_pull")
	}
	if got := echoOf(c); got.Description != poisoned.Description {
		t.Errorf("after rug_pull: %q", got.Description)
	}
}
