package engine_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/nexus-mcp/nexus/internal/registry"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/config"
	"github.com/nexus-mcp/nexus/internal/diag"
	"github.com/nexus-mcp/nexus/internal/engine"
	"github.com/nexus-mcp/nexus/internal/testenv"
)

// The test binary doubles as a misbehaving MCP server: with NEXUS_FAKE_SERVER
// set it runs fakeServer instead of the tests.
func TestMain(m *testing.M) {
	if mode := os.Getenv("NEXUS_FAKE_SERVER"); mode != "" {
		fakeServer(mode)
		return
	}
	os.Exit(m.Run())
}

func fakeServer(mode string) {
	out := bufio.NewWriter(os.Stdout)
	send := func(s string) { out.WriteString(s + "\n"); out.Flush() }
	switch mode {
	case "exit-before-init":
		fmt.Fprintln(os.Stderr, "Error: connect ECONNREFUSED 127.0.0.1:5432")
		os.Exit(1)
	case "ignore-term":
		signal.Ignore(syscall.SIGTERM)
	}
	in := bufio.NewReaderSize(os.Stdin, 1<<16)
	for {
		line, err := in.ReadString('\n')
		if err != nil {
			if mode == "ignore-term" {
				select {} // ignores stdin EOF too
			}
			return
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		json.Unmarshal([]byte(line), &m)
		id := string(m.ID)
		switch m.Method {
		case "initialize":
			if mode == "hang" {
				continue
			}
			send(`{"jsonrpc":"2.0","id":` + id + `,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"fake","version":"1"}}}`)
			if mode == "grandchild" {
				cmd := execSelf("hang")
				cmd.Start()
				os.WriteFile(os.Getenv("NEXUS_FAKE_PIDFILE"), []byte(fmt.Sprint(cmd.Process.Pid)), 0o600)
			}
		case "tools/list":
			switch mode {
			case "huge-line":
				out.WriteString(`{"jsonrpc":"2.0","id":` + id + `,"result":{"tools":[],"x":"`)
				out.WriteString(strings.Repeat("a", 11<<20))
				send(`"}}`)
			case "invalid-json":
				send(`{"jsonrpc":"2.0","id":` + id + `,"result":{tools: []}}`)
			default:
				send(`{"jsonrpc":"2.0","id":` + id + `,"result":{"tools":[{"name":"t","inputSchema":{"type":"object"}}]}}`)
			}
		case "tools/call":
			switch mode {
			case "exit-mid-call", "grandchild":
				fmt.Fprintln(os.Stderr, "fatal: GITHUB_TOKEN environment variable is not set")
				os.Exit(7)
			case "noisy":
				send(`{"jsonrpc":"2.0","id":424242,"result":{}}`)
				for i := 0; i < 10000; i++ {
					out.WriteString(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"n"}}` + "\n")
				}
				send("this server logs to stdout")
			}
			send(`{"jsonrpc":"2.0","id":` + id + `,"result":{"content":[{"type":"text","text":"done"}]}}`)
		}
	}
}

func execSelf(mode string) *exec.Cmd {
	exe, _ := os.Executable()
	c := exec.Command(exe)
	c.Env = append(os.Environ(), "NEXUS_FAKE_SERVER="+mode)
	return c
}

// alive reports whether pid runs; a zombie waiting for its reaper is dead.
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// fake returns a config for a fake server in the given mode.
func fake(t *testing.T, mode string, extra ...string) *engine.Host {
	t.Helper()
	// A generous handshake timeout: the fake is this race-built test
	// binary, which on a loaded machine takes seconds to start.
	return fakeTimeout(t, 15*time.Second, mode, extra...)
}

func fakeTimeout(t *testing.T, timeout time.Duration, mode string, extra ...string) *engine.Host {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"NEXUS_FAKE_SERVER": mode}
	for i := 0; i+1 < len(extra); i += 2 {
		env[extra[i]] = extra[i+1]
	}
	envJSON, _ := json.Marshal(env)
	cfgJSON := fmt.Sprintf(`{"mcpServers":{"fake":{"command":%q,"env":%s}}}`, exe, envJSON)
	return newHost(t, cfgJSON, engine.Options{Timeout: timeout, CloseGrace: 100 * time.Millisecond})
}

func newHost(t *testing.T, cfgJSON string, opts engine.Options) *engine.Host {
	t.Helper()
	path := filepath.Join(t.TempDir(), "mcp.json")
	if err := os.WriteFile(path, []byte(cfgJSON), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.LoadFile(path, "test")
	if err != nil {
		t.Fatal(err)
	}
	h := engine.New(cfg, opts)
	t.Cleanup(func() { h.Close() })
	return h
}

func testserverHost(t *testing.T, args ...string) *engine.Host {
	t.Helper()
	argv, _ := json.Marshal(append([]string{testenv.Nexus(t), "testserver"}, args...))
	return newHost(t, fmt.Sprintf(`{"servers":{"testserver":{"command":%s}}}`, argv), engine.Options{})
}

func TestTestServerOverStdio(t *testing.T) {
	h := testserverHost(t, "--tool-count", "25", "--page-size", "7")
	ctx := context.Background()
	c, err := h.Client(ctx, engine.CLIAgent, "testserver")
	if err != nil {
		t.Fatal(err)
	}
	tools, err := c.ListTools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, tool := range tools {
		names[tool.Name] = true
	}
	for _, want := range []string{"echo", "get_time", "add", "slow_operation", "tool_001", "tool_025"} {
		if !names[want] {
			t.Errorf("tool %s missing from %d tools", want, len(tools))
		}
	}
	res, err := c.CallTool(ctx, "echo", map[string]string{"message": "hi"}, nil)
	if err != nil || res.Content[0].Text != "hi" {
		t.Fatal(err, res)
	}
	var steps atomic.Int32
	res, err = c.CallTool(ctx, "slow_operation", map[string]any{"duration": 0.2, "steps": 4},
		&mcp.CallOptions{OnProgress: func(mcp.Progress) { steps.Add(1) }})
	if err != nil || res.IsError {
		t.Fatal(err, res)
	}
	if steps.Load() != 4 {
		t.Fatalf("progress notifications: %d, want 4", steps.Load())
	}
	rr, err := c.ReadResource(ctx, "file:///readme.txt")
	if err != nil || rr.Contents[0].Text == "" {
		t.Fatal(err, rr)
	}
	pr, err := c.GetPrompt(ctx, "greeting", map[string]string{"name": "Ada"})
	if err != nil || !strings.Contains(pr.Messages[0].Content.Text, "Ada") {
		t.Fatal(err, pr)
	}
	if _, err := c.Ping(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestServerEverything runs the reference server from npm over stdio.
func TestServerEverything(t *testing.T) {
	pkg := testenv.NPMPackage(t, "@modelcontextprotocol/server-everything")
	argv, _ := json.Marshal([]string{testenv.Node(t), filepath.Join(pkg, "dist", "index.js"), "stdio"})
	rootsAsked := make(chan struct{}, 8)
	h := newHost(t, fmt.Sprintf(`{"servers":{"everything":{"command":%s,"env_passthrough":["PATH"]}}}`, argv), engine.Options{
		Timeout: 20 * time.Second,
		Roots: func(ctx context.Context) ([]mcp.Root, error) {
			rootsAsked <- struct{}{}
			return []mcp.Root{{URI: "file:///workspace", Name: "workspace"}}, nil
		},
	})
	ctx := context.Background()
	c, err := h.Client(ctx, engine.CLIAgent, "everything")
	if err != nil {
		t.Fatal(err)
	}
	tools, err := c.ListTools(ctx)
	if err != nil || len(tools) < 5 {
		t.Fatal(err, len(tools))
	}
	if _, err := c.ListResources(ctx); err != nil {
		t.Fatal(err)
	}
	if tm, err := c.ListResourceTemplates(ctx); err != nil || len(tm) == 0 {
		t.Fatal(err, tm)
	}
	prompts, err := c.ListPrompts(ctx)
	if err != nil || len(prompts) == 0 {
		t.Fatal(err)
	}
	res, err := c.CallTool(ctx, "echo", map[string]string{"message": "hello"}, nil)
	if err != nil || !strings.Contains(res.Content[0].Text, "hello") {
		t.Fatal(err, res)
	}
	res, err = c.CallTool(ctx, "get-sum", map[string]int{"a": 2, "b": 3}, nil)
	if err != nil || !strings.Contains(res.Content[0].Text, "5") {
		t.Fatal(err, res)
	}
	resources, _ := c.ListResources(ctx)
	if len(resources) > 0 {
		rr, err := c.ReadResource(ctx, resources[0].URI)
		if err != nil || len(rr.Contents) == 0 {
			t.Fatal(err, rr)
		}
	}
	var simple string
	for _, p := range prompts {
		if len(p.Arguments) == 0 {
			simple = p.Name
			break
		}
	}
	if simple != "" {
		if _, err := c.GetPrompt(ctx, simple, nil); err != nil {
			t.Fatal(err)
		}
	}
	res, err = c.CallTool(ctx, "get-roots-list", nil, nil)
	if err != nil || !strings.Contains(res.Content[0].Text, "file:///workspace") {
		t.Fatal(err, res)
	}
	select {
	case <-rootsAsked:
	default:
		t.Fatal("the server never asked roots/list")
	}
	var steps atomic.Int32
	res, err = c.CallTool(ctx, "trigger-long-running-operation", map[string]any{"duration": 1, "steps": 3},
		&mcp.CallOptions{OnProgress: func(mcp.Progress) { steps.Add(1) }})
	if err != nil || res.IsError {
		t.Fatal(err, res)
	}
	if steps.Load() < 3 {
		t.Fatalf("progress notifications: %d", steps.Load())
	}
}

func wantReport(t *testing.T, err error, parts ...string) {
	t.Helper()
	var r *diag.Report
	if !errors.As(err, &r) {
		t.Fatalf("want a diag.Report, got %T: %v", err, err)
	}
	text := r.Error()
	for _, p := range append(parts, `"fake"`) {
		if !strings.Contains(text, p) {
			t.Errorf("report lacks %q:\n%s", p, text)
		}
	}
}

func TestBadServers(t *testing.T) {
	ctx := context.Background()
	t.Run("command not found", func(t *testing.T) {
		h := newHost(t, `{"mcpServers":{"fake":{"command":"nexus-no-such-binary"}}}`, engine.Options{})
		_, err := h.Client(ctx, engine.CLIAgent, "fake")
		wantReport(t, err, "nexus-no-such-binary", "PATH")
	})
	t.Run("not executable", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "server.sh")
		os.WriteFile(p, []byte("#!/bin/sh\n"), 0o644)
		h := newHost(t, fmt.Sprintf(`{"mcpServers":{"fake":{"command":%q}}}`, p), engine.Options{})
		_, err := h.Client(ctx, engine.CLIAgent, "fake")
		wantReport(t, err, "chmod +x")
	})
	t.Run("exits before initialize", func(t *testing.T) {
		_, err := fake(t, "exit-before-init").Client(ctx, engine.CLIAgent, "fake")
		wantReport(t, err, "ECONNREFUSED", "code 1")
	})
	t.Run("never answers initialize", func(t *testing.T) {
		h := fakeTimeout(t, 2*time.Second, "hang")
		start := time.Now()
		_, err := h.Client(ctx, engine.CLIAgent, "fake")
		wantReport(t, err, "handshake")
		if time.Since(start) > 20*time.Second {
			t.Fatalf("handshake timeout took %s", time.Since(start))
		}
	})
	t.Run("exits mid-call", func(t *testing.T) {
		h := fake(t, "exit-mid-call")
		c, err := h.Client(ctx, engine.CLIAgent, "fake")
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.CallTool(ctx, "t", nil, nil)
		wantReport(t, h.Explain("fake", err), "code 7", "GITHUB_TOKEN")
	})
	t.Run("11 MiB line", func(t *testing.T) {
		h := fake(t, "huge-line")
		c, err := h.Client(ctx, engine.CLIAgent, "fake")
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.ListTools(ctx)
		wantReport(t, h.Explain("fake", err), "10 MiB")
	})
	t.Run("invalid JSON", func(t *testing.T) {
		h := fake(t, "invalid-json")
		c, err := h.Client(ctx, engine.CLIAgent, "fake")
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.ListTools(ctx)
		wantReport(t, h.Explain("fake", err), "^")
	})
	t.Run("unknown id, notification flood, stdout noise", func(t *testing.T) {
		h := fake(t, "noisy")
		c, err := h.Client(ctx, engine.CLIAgent, "fake")
		if err != nil {
			t.Fatal(err)
		}
		res, err := c.CallTool(ctx, "t", nil, nil)
		if err != nil || res.Content[0].Text != "done" {
			t.Fatal(err, res)
		}
	})
	t.Run("ignores EOF and SIGTERM", func(t *testing.T) {
		h := fake(t, "ignore-term")
		c, err := h.Client(ctx, engine.CLIAgent, "fake")
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { h.Close(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("Close did not kill a server that ignores SIGTERM")
		}
		if c.Err() == nil {
			t.Fatal("session still alive after Close")
		}
	})
	t.Run("grandchild dies with the group", func(t *testing.T) {
		pidfile := filepath.Join(t.TempDir(), "pid")
		h := fake(t, "grandchild", "NEXUS_FAKE_PIDFILE", pidfile)
		c, err := h.Client(ctx, engine.CLIAgent, "fake")
		if err != nil {
			t.Fatal(err)
		}
		var pid int
		deadline := time.Now().Add(5 * time.Second)
		for pid == 0 && time.Now().Before(deadline) {
			b, _ := os.ReadFile(pidfile)
			fmt.Sscan(string(b), &pid)
			time.Sleep(10 * time.Millisecond)
		}
		if pid == 0 {
			t.Fatal("grandchild never started")
		}
		c.CallTool(ctx, "t", nil, nil) // the leader exits here
		for {
			if !alive(pid) {
				break
			}
			if time.Now().After(deadline.Add(5 * time.Second)) {
				syscall.Kill(pid, syscall.SIGKILL)
				t.Fatalf("grandchild %d outlived its server", pid)
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
}

func TestDisabledAndUnknownServers(t *testing.T) {
	h := newHost(t, `{"mcpServers":{"off":{"command":"x","disabled":true}}}`, engine.Options{})
	_, err := h.Client(context.Background(), engine.CLIAgent, "off")
	var r *diag.Report
	if !errors.As(err, &r) || !strings.Contains(r.Error(), "disabled") {
		t.Fatal(err)
	}
	_, err = h.Client(context.Background(), engine.CLIAgent, "nope")
	var ue *registry.UnknownServerError
	if !errors.As(err, &ue) {
		t.Fatal(err)
	}
}
