package engine_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nexus-mcp/nexus/internal/config"
	"github.com/nexus-mcp/nexus/internal/diag"
	"github.com/nexus-mcp/nexus/internal/engine"
	"github.com/nexus-mcp/nexus/internal/registry"
	"github.com/nexus-mcp/nexus/internal/testenv"
)

// testserverEntry is the mcpServers JSON of `nexus testserver args...`.
func testserverEntry(t testing.TB, args ...string) string {
	t.Helper()
	argv, _ := json.Marshal(append([]string{testenv.Nexus(t), "testserver"}, args...))
	return fmt.Sprintf(`{"command": %s}`, argv)
}

// stdioHost makes a host from mcpServers entries by name, with agent y (yolo).
func stdioHost(t testing.TB, entries map[string]string, opts engine.Options) *engine.Host {
	t.Helper()
	var parts []string
	for name, e := range entries {
		parts = append(parts, fmt.Sprintf("%q: %s", name, e))
	}
	return newHostTB(t, `{"mcpServers": {`+strings.Join(parts, ",")+`}, "agents": `+yolo+`}`, opts)
}

// newHostTB makes a host from a JSON config held in memory.
func newHostTB(t testing.TB, doc string, opts engine.Options) *engine.Host {
	t.Helper()
	if opts.CloseGrace == 0 {
		opts.CloseGrace = 200 * time.Millisecond
	}
	cfg, err := config.Parse([]byte(doc), diag.Source{File: "test.json", Layer: "test"})
	if err != nil {
		t.Fatal(err)
	}
	h := engine.New(cfg, opts)
	t.Cleanup(func() { h.Close() })
	return h
}

func statusOf(h *engine.Host, name string) registry.Status {
	for _, s := range h.Servers() {
		if s.Config.Name == name {
			return s
		}
	}
	return registry.Status{}
}

// TestStartStdio: one server that is not installed and one that never
// answers initialize fail on their own; the others connect.
func TestStartStdio(t *testing.T) {
	exe, _ := os.Executable()
	h := stdioHost(t, map[string]string{
		"ok1":     testserverEntry(t),
		"ok2":     testserverEntry(t, "--tool-count", "3"),
		"missing": `{"command": "nexus-no-such-binary"}`,
		"hang":    fmt.Sprintf(`{"command": %q, "env": {"NEXUS_FAKE_SERVER": "hang"}, "timeout": "500ms"}`, exe),
	}, engine.Options{})
	h.Start(ctx)
	for _, name := range []string{"ok1", "ok2"} {
		if s := statusOf(h, name); !s.Connected || s.Err != nil || s.Info.Name != "nexus-testserver" {
			t.Errorf("%s: connected=%v err=%v info=%v", name, s.Connected, s.Err, s.Info)
		}
	}
	if s := statusOf(h, "missing"); s.Connected || s.Err == nil || !strings.Contains(s.Err.Error(), "nexus-no-such-binary") {
		t.Errorf("missing: connected=%v err=%v", s.Connected, s.Err)
	}
	if s := statusOf(h, "hang"); s.Connected || s.Err == nil || !strings.Contains(strings.ToLower(s.Err.Error()), "handshake") {
		t.Errorf("hang: connected=%v err=%v", s.Connected, s.Err)
	}
	tools, err := h.Tools(ctx, "y")
	if len(tools) < 2*7 {
		t.Errorf("%d tools from the servers that work", len(tools))
	}
	var se *registry.ServerError
	if !errors.As(err, &se) {
		t.Errorf("Tools does not report the broken servers: %v", err)
	}
}

// TestStartIsConcurrent: eight servers that each answer only once all
// eight have been started connect; started one after another, the first
// would wait for the others forever (20 s, then exit). A slow server
// therefore costs Start its own time, not the sum.
func TestStartIsConcurrent(t *testing.T) {
	const n = 8
	dir := t.TempDir()
	entries := map[string]string{}
	for i := range n {
		entries[fmt.Sprintf("s%d", i)] = fakeEntry(t, "barrier", map[string]string{"NEXUS_FAKE_BARRIER": dir, "NEXUS_FAKE_N": fmt.Sprint(n)}, "")
	}
	entries["missing"] = `{"command": "nexus-no-such-binary"}`
	h := stdioHost(t, entries, engine.Options{})
	h.Start(ctx)
	for _, s := range h.Servers() {
		if s.Config.Name != "missing" && !s.Connected {
			t.Errorf("%s: %v", s.Config.Name, s.Err)
		}
	}
}

// TestDiesBetweenListAndCall: the call fails with a report that says what
// happened (exit code, stderr), and the next use starts it again.
func TestDiesBetweenListAndCall(t *testing.T) {
	dir := t.TempDir()
	starts := filepath.Join(dir, "starts")
	h := stdioHost(t, map[string]string{"fake": fakeEntry(t, "die-once", map[string]string{
		"NEXUS_FAKE_STATE": filepath.Join(dir, "died"), "NEXUS_FAKE_STARTS": starts}, "")}, engine.Options{})
	tools, err := h.Tools(ctx, "y")
	if err != nil {
		t.Fatal(err)
	}
	wantNames(t, tools, "mcp_fake_t")
	_, err = h.CallTool(ctx, "y", "mcp_fake_t", nil, nil)
	var r *diag.Report
	if !errors.As(err, &r) || !strings.Contains(err.Error(), "code 3") || !strings.Contains(err.Error(), "lost the database connection") {
		t.Fatalf("want a report with the exit code and stderr, got %T: %v", err, err)
	}
	if got := ok(t, h, "y", "mcp_fake_t", nil); got != "t ok" {
		t.Fatalf("after reconnecting: %q", got)
	}
	b, _ := os.ReadFile(starts)
	if n := strings.Count(string(b), "\n"); n != 2 {
		t.Fatalf("%d processes started, want 2", n)
	}
}

// TestKilledServerReconnects: a testserver killed between listing and
// calling is started again by the call.
func TestKilledServerReconnects(t *testing.T) {
	h := stdioHost(t, map[string]string{"ts": testserverEntry(t)}, engine.Options{})
	if _, err := h.Tools(ctx, "y"); err != nil {
		t.Fatal(err)
	}
	pid := h.PIDs()["ts"]
	syscall.Kill(pid, syscall.SIGKILL)
	waitFor(t, "the host notices the dead server", func() bool { return !statusOf(h, "ts").Connected })
	if got := ok(t, h, "y", "mcp_ts_echo", hi); got != "hi" {
		t.Fatalf("echo after the kill: %q", got)
	}
	if h.PIDs()["ts"] == pid {
		t.Fatal("the call did not start a new process")
	}
}

// TestCrashLoopBacksOff: a server that crashes right after its handshake
// is not restarted on every call: calls in between fail at once with the
// backoff error, and process starts stay few.
func TestCrashLoopBacksOff(t *testing.T) {
	starts := filepath.Join(t.TempDir(), "starts")
	h := stdioHost(t, map[string]string{"fake": fakeEntry(t, "crash-init", map[string]string{"NEXUS_FAKE_STARTS": starts}, "")}, engine.Options{})
	h.Start(ctx)
	calls := 0
	var backoffs int
	for end := time.Now().Add(1500 * time.Millisecond); time.Now().Before(end); calls++ {
		_, err := h.CallTool(ctx, "y", "fake.t", nil, nil)
		if err == nil {
			t.Fatal("a crashing server answered")
		}
		var be *registry.BackoffError
		if errors.As(err, &be) {
			backoffs++
			if !strings.Contains(err.Error(), "next reconnection attempt") {
				t.Fatalf("backoff error %q", err)
			}
		}
		time.Sleep(time.Millisecond)
	}
	b, _ := os.ReadFile(starts)
	n := strings.Count(string(b), "\n")
	t.Logf("%d calls, %d answered by the backoff, %d processes", calls, backoffs, n)
	// 500 ms, 1 s, 2 s ... between attempts: 3 starts in 1.5 s, 5 allowed.
	if n > 5 || backoffs == 0 {
		t.Fatalf("%d processes for %d calls in 1.5 s (%d backoff errors): a crash loop", n, calls, backoffs)
	}
	if s := statusOf(h, "fake"); s.Connected || s.Err == nil || s.Failures < 2 {
		t.Errorf("status: connected=%v failures=%d err=%v", s.Connected, s.Failures, s.Err)
	}
}

// TestListChanged: a server's tools/list_changed refreshes what the host
// offers: new tools appear and can be called by exposed name, removed ones
// no longer resolve.
func TestListChanged(t *testing.T) {
	var changes atomic.Int32
	h := stdioHost(t, map[string]string{"fake": fakeEntry(t, "dynamic", nil, "")},
		engine.Options{OnChange: func(server string) {
			if server == "fake" {
				changes.Add(1)
			}
		}})
	tools, err := h.Tools(ctx, "y")
	if err != nil {
		t.Fatal(err)
	}
	wantNames(t, tools, "mcp_fake_t", "mcp_fake_grow", "mcp_fake_shrink")
	before := changes.Load()
	ok(t, h, "y", "mcp_fake_grow", nil)
	waitFor(t, "OnChange after list_changed", func() bool { return changes.Load() > before })
	tools, err = h.Tools(ctx, "y")
	if err != nil {
		t.Fatal(err)
	}
	wantNames(t, tools, "mcp_fake_t", "mcp_fake_t2", "mcp_fake_grow", "mcp_fake_shrink")
	if got := ok(t, h, "y", "mcp_fake_t2", nil); got != "t2 ok" {
		t.Fatalf("new tool answered %q", got)
	}

	before = changes.Load()
	ok(t, h, "y", "fake.shrink", nil)
	waitFor(t, "OnChange after list_changed", func() bool { return changes.Load() > before })
	_, err = h.CallTool(ctx, "y", "mcp_fake_t2", nil, nil)
	var ut *registry.UnknownToolError
	if !errors.As(err, &ut) {
		t.Fatalf("a removed tool still resolves: %v", err)
	}
}

// TestCloseLeavesNoChildren: after Close no server process is left.
func TestCloseLeavesNoChildren(t *testing.T) {
	exe, _ := os.Executable()
	h := stdioHost(t, map[string]string{
		"a":      testserverEntry(t),
		"b":      testserverEntry(t),
		"c":      fakeEntry(t, "dynamic", nil, ""),
		"stuck":  fmt.Sprintf(`{"command": %q, "env": {"NEXUS_FAKE_SERVER": "ignore-term"}}`, exe),
		"broken": `{"command": "nexus-no-such-binary"}`,
	}, engine.Options{})
	h.Start(ctx)
	pids := h.PIDs()
	if len(pids) != 4 {
		t.Fatalf("pids %v", pids)
	}
	for name, pid := range pids {
		if !alive(pid) {
			t.Fatalf("%s (%d) is not running before Close", name, pid)
		}
	}
	done := make(chan struct{})
	go func() { h.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		t.Fatal("Close hangs")
	}
	for name, pid := range pids {
		if alive(pid) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Errorf("%s (pid %d) outlived Close", name, pid)
		}
	}
}

// TestTenThousandTools: a server with 10,000 tools on pages of 500 lists
// in full, with valid, distinct names, and any of them can be called.
func TestTenThousandTools(t *testing.T) {
	h := stdioHost(t, map[string]string{"ts": testserverEntry(t, "--tool-count", "10000", "--page-size", "500")}, engine.Options{})
	tools, err := h.Tools(ctx, "y")
	if err != nil {
		t.Fatal(err)
	}
	if len(tools) < 10000 {
		t.Fatalf("%d tools", len(tools))
	}
	seen := make(map[string]bool, len(tools))
	for _, tool := range tools {
		if !allowedName.MatchString(tool.Name) || seen[tool.Name] {
			t.Fatalf("name %q invalid or repeated", tool.Name)
		}
		seen[tool.Name] = true
	}
	for _, name := range []string{"mcp_ts_tool_00001", "mcp_ts_tool_10000", "ts.tool_05000"} {
		if got := ok(t, h, "y", name, nil); !strings.Contains(got, "tool_") {
			t.Errorf("%s answered %q", name, got)
		}
	}
}

// TestRawArgumentsOverStdio: arguments given as raw JSON reach a stdio
// server however they are laid out: pretty-printed ones (line breaks
// between tokens, as an HTTP client may send them) are written on one
// line, not as two broken frames that end the session; ones that are not
// JSON are refused before anything is sent.
func TestRawArgumentsOverStdio(t *testing.T) {
	h := stdioHost(t, map[string]string{"ts": testserverEntry(t)}, engine.Options{})
	pretty := json.RawMessage("{\n  \"message\":\r\n \"one\\ntwo\"\n}\n")
	for range 2 {
		res, err := h.CallTool(ctx, "y", "ts.echo", pretty, nil)
		if err != nil {
			t.Fatalf("pretty-printed arguments: %v", err)
		}
		if len(res.Content) != 1 || !strings.Contains(res.Content[0].Text, "one\ntwo") {
			t.Fatalf("echo of pretty-printed arguments: %+v", res.Content)
		}
	}
	_, err := h.CallTool(ctx, "y", "ts.echo", json.RawMessage("{\"message\":\"a\"}\n{\"jsonrpc\":\"2.0\""), nil)
	if err == nil || !strings.Contains(err.Error(), "not one valid JSON value") {
		t.Fatalf("raw arguments that are not JSON: %v", err)
	}
	if s := statusOf(h, "ts"); !s.Connected {
		t.Fatalf("the session ended: %v", s.Err)
	}
}
