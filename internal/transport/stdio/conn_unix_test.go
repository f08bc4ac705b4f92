//go:build unix

package stdio

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// processGone reports whether pid no longer runs. A killed grandchild is
// reparented to init, which may not reap it promptly (or at all in some
// containers), so a zombie counts as gone.
func processGone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	if runtime.GOOS == "linux" {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return errors.Is(err, os.ErrNotExist)
		}
		// The state follows the parenthesised command name.
		if i := strings.LastIndexByte(string(b), ')'); i >= 0 && i+2 < len(b) {
			return b[i+2] == 'Z' || b[i+2] == 'X'
		}
	}
	return false
}

func waitGone(t *testing.T, pid int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !processGone(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d still alive after %v", pid, within)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// killOnCleanup makes sure a failing test does not leave a process behind;
// it only ever signals the PID the test itself started.
func killOnCleanup(t *testing.T, pid int) {
	t.Cleanup(func() {
		if !processGone(pid) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
}

func readPID(t *testing.T, c *Conn) int {
	t.Helper()
	s := mustRead(t, c)
	pid, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(s, `{"pid":`), "}"))
	if err != nil {
		t.Fatalf("bad pid frame %q", s)
	}
	killOnCleanup(t, pid)
	return pid
}

func TestCloseKillsStubbornServer(t *testing.T) {
	c, logs := startFake(t, "stubborn", nil)
	if got := mustRead(t, c); got != `{"ready":true}` {
		t.Fatalf("got %q", got)
	}
	start := time.Now()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	// At least both graces: SIGKILL comes only after the server had its
	// chances. The signal and the log line below show the escalation; the
	// upper bound only catches a Close that waits on the stubborn process
	// instead of killing it, and leaves a loaded machine a minute.
	d := time.Since(start)
	if d < 2*testGrace || d > 2*testGrace+time.Minute {
		t.Errorf("Close took %v; want 2*CloseGrace (%v) and then the kill, not a wait", d, 2*testGrace)
	}
	if code, ok := c.ExitCode(); !ok || code != -1 || c.exitSig != "SIGKILL" {
		t.Errorf("exit = %d, %v, signal %q; want killed by SIGKILL", code, ok, c.exitSig)
	}
	waitGone(t, c.PID(), 30*time.Second)
	if !strings.Contains(logs.String(), "killing") {
		t.Errorf("escalation not logged:\n%s", logs)
	}
}

func TestCloseTerminatesServer(t *testing.T) {
	// Long enough that the SIGTERM, not the SIGKILL after it, ends the
	// server even on a loaded machine.
	c, _ := startFake(t, "noread", func(cfg *Config) { cfg.CloseGrace = time.Second })
	mustRead(t, c)
	_ = c.Close()
	if code, ok := c.ExitCode(); !ok || code != -1 || c.exitSig != "SIGTERM" {
		t.Errorf("exit = %d, %v, signal %q; want SIGTERM", code, ok, c.exitSig)
	}
}

func TestGrandchildKilledWhenLeaderExits(t *testing.T) {
	c, _ := startFake(t, "grandchild-exit", nil)
	pid := readPID(t, c)
	// The grandchild still holds stdout; the leader's exit must end the
	// session anyway.
	ee := readExitError(t, c)
	if ee.Code != 0 {
		t.Errorf("leader exit: %v", ee)
	}
	waitGone(t, pid, 5*time.Second)
}

func TestGrandchildKilledOnClose(t *testing.T) {
	c, _ := startFake(t, "grandchild-stay", nil)
	pid := readPID(t, c)
	_ = c.Close()
	waitGone(t, c.PID(), 5*time.Second)
	waitGone(t, pid, 5*time.Second)
}

func TestOwnProcessGroup(t *testing.T) {
	c, _ := startFake(t, "noread", nil)
	mustRead(t, c)
	pgid, err := syscall.Getpgid(c.PID())
	if err != nil {
		t.Fatal(err)
	}
	if pgid != c.PID() || pgid == syscall.Getpgrp() {
		t.Errorf("pgid = %d, pid = %d, ours = %d", pgid, c.PID(), syscall.Getpgrp())
	}
}

func TestPermissionDenied(t *testing.T) {
	checkNoLeak(t)
	dir := t.TempDir()
	script := filepath.Join(dir, "server")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho hi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, cfg := range map[string]Config{
		"absolute":    {Server: "fs", Command: []string{script}},
		"via PATH":    {Server: "fs", Command: []string{"server"}, Options: Options{Env: map[string]string{"PATH": dir}}},
		"a directory": {Server: "fs", Command: []string{dir}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Start(context.Background(), cfg)
			var se *StartError
			if !errors.As(err, &se) || se.Kind != PermissionDenied {
				t.Fatalf("err = %#v", err)
			}
			if !strings.Contains(se.Error(), `server "fs": command is not executable`) {
				t.Errorf("Error() = %q", se.Error())
			}
		})
	}
	// An executable copy later on PATH wins, as with execvp.
	dir2 := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir2, "server"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	got, kind, err := resolveCommand("server", "", []string{"PATH=" + dir + ":" + dir2})
	if err != nil || got != filepath.Join(dir2, "server") {
		t.Errorf("resolveCommand = %q, %v, %v", got, kind, err)
	}
}

func TestMissingInterpreter(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "server")
	if err := os.WriteFile(script, []byte("#!/nonexistent/interpreter\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := Start(context.Background(), Config{Server: "fs", Command: []string{script}})
	var se *StartError
	if !errors.As(err, &se) || se.Kind != Other || !strings.Contains(err.Error(), "interpreter") {
		t.Fatalf("err = %v", err)
	}
}

func TestRelativePATHEntriesIgnored(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "server"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	for _, path := range []string{".", "", ":" + "/nonexistent"} {
		if _, kind, err := resolveCommand("server", "", []string{"PATH=" + path}); err == nil || kind != NotFound {
			t.Errorf("PATH=%q: resolved from the current directory (kind %v, err %v)", path, kind, err)
		}
	}
}
