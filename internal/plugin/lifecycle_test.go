package plugin

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nexus-mcp/nexus/internal/config"
	"github.com/nexus-mcp/nexus/internal/testenv"
	"github.com/nexus-mcp/nexus/sdk/event"
)

func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

func TestCloseStopsEveryPlugin(t *testing.T) {
	m, _ := newManager(t, Options{})
	ctx := ctxT(t)
	var pids []int
	for _, name := range []string{"a", "b", "c"} {
		p, err := m.Open(ctx, pinned(t, name, testPlugin(t, "good")))
		if err != nil {
			t.Fatal(err)
		}
		pids = append(pids, p.cur.runner.pid)
	}
	conn, err := m.plugins["a"].Dial(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	m.Close()
	// A session open at shutdown ends without a crash report or a restart.
	if _, err := conn.ReadMessage(); err == nil {
		t.Error("session still open after Close")
	} else if _, crashed := AsCrash(err); crashed {
		t.Errorf("shutdown reported as a crash: %v", err)
	}
	for _, pid := range pids {
		if alive(pid) {
			t.Errorf("plugin process %d outlived Manager.Close", pid)
		}
	}
	if _, err := m.Open(ctx, pinned(t, "late", testPlugin(t, "good"))); !errors.Is(err, ErrClosed) {
		t.Errorf("Open after Close: %v", err)
	}
}

// What a plugin spawned goes with it: stopped at Close and killed with
// the plugin when it overruns or crashes (the kill reaches its group).
func TestPluginChildrenStop(t *testing.T) {
	path := testPlugin(t, "spawner")
	record := filepath.Join(filepath.Dir(path), "spawner.children")
	os.Remove(record)
	m, _ := newManager(t, Options{})
	ctx := ctxT(t)
	if _, err := m.Open(ctx, pinned(t, "s", path)); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(record)
	if err != nil {
		t.Fatalf("the plugin recorded no child: %v", err)
	}
	child, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("record %q", b)
	}
	t.Cleanup(func() { syscall.Kill(child, syscall.SIGKILL) })
	if !alive(child) {
		t.Fatal("the plugin's child is not running")
	}
	m.Close()
	deadline := time.Now().Add(10 * time.Second)
	for testenv.Running(child) {
		if time.Now().After(deadline) {
			t.Fatalf("the plugin's child %d outlived Manager.Close by 10 s", child)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestReattach(t *testing.T) {
	cmd := exec.Command(testPlugin(t, "good"), "-debug")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var value string
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if v, ok := strings.CutPrefix(line, "export NEXUS_REATTACH_PLUGINS='"); ok {
			value = strings.TrimSuffix(v, "'")
			break
		}
	}
	// Done reading its stdout: Wait may run. exited is how the test sees
	// the process end (kill(pid, 0) cannot: it succeeds on the zombie a
	// killed child of ours stays until it is waited for).
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	defer func() { cmd.Process.Kill(); <-exited }()
	if value == "" {
		t.Fatal("the debug plugin printed no NEXUS_REATTACH_PLUGINS line")
	}
	m, logs := newManager(t, Options{Reattach: &value})
	ctx := ctxT(t)
	// The path is not used (and not checksummed) when reattaching.
	p, err := m.Open(ctx, &config.Plugin{Name: "testplugin", Path: "/not/used"})
	if err != nil {
		t.Fatal(err)
	}
	l, err := p.Policy(ctx, "f", []byte(`{"deny_tools": ["rm"]}`))
	if err != nil {
		t.Fatal(err)
	}
	if d, err := l.Handle(ctx, toolEvent("rm")); err != nil || d.Action != event.Deny {
		t.Fatalf("through the reattached plugin: %v %v", d, err)
	}
	if !strings.Contains(logs.String(), "attaching to a running plugin") {
		t.Errorf("no warning about reattaching:\n%s", logs)
	}
	m.Close()
	// Close kills what it owns before it returns; a short look for an exit
	// it set off in passing is enough.
	select {
	case <-exited:
		t.Error("Manager.Close stopped a plugin it only attached to")
	case <-time.After(200 * time.Millisecond):
	}
	// A stale value names a process that is gone.
	cmd.Process.Kill()
	<-exited
	m2, _ := newManager(t, Options{Reattach: &value})
	_, err = m2.Open(ctx, &config.Plugin{Name: "testplugin", Path: "/not/used"})
	var le *LoadError
	if !errors.As(err, &le) || le.Kind != LoadReattach {
		t.Fatalf("stale reattach: %v", err)
	}
	bad := "{not json"
	m3, _ := newManager(t, Options{Reattach: &bad})
	if _, err := m3.Open(ctx, &config.Plugin{Name: "x", Path: "/x"}); err == nil || !strings.Contains(err.Error(), "NEXUS_REATTACH_PLUGINS is not a JSON object") {
		t.Fatalf("bad value: %v", err)
	}
}

// Filters load concurrently; opening one plugin from several goroutines
// at once launches it once, and every caller gets that one.
func TestConcurrentOpenLaunchesOnce(t *testing.T) {
	m, _ := newManager(t, Options{})
	ctx := ctxT(t)
	path := testPlugin(t, "counted")
	log := filepath.Join(filepath.Dir(path), "counted.launches")
	os.Remove(log)
	pc := pinned(t, "shared", path)
	ps := make([]*Plugin, 6)
	errs := make([]error, len(ps))
	var wg sync.WaitGroup
	for i := range ps {
		wg.Add(1)
		go func() { defer wg.Done(); ps[i], errs[i] = m.Open(ctx, pc) }()
	}
	wg.Wait()
	for i := range ps {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if ps[i] != ps[0] {
			t.Error("callers got different plugins")
		}
	}
	b, _ := os.ReadFile(log)
	if n := strings.Count(string(b), "\n"); n != 1 {
		t.Errorf("launched %d times, want once", n)
	}
}
