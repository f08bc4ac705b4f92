package stdio

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nexus-mcp/nexus/host/mcp"

	"github.com/nexus-mcp/nexus/internal/testenv"
)

const testGrace = 100 * time.Millisecond

func testExe(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

// checkNoLeak fails the test if goroutines started during it are still
// running shortly after its cleanups (registered later, so run earlier).
func checkNoLeak(t *testing.T) {
	t.Helper()
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		deadline := time.Now().Add(5 * time.Second)
		for runtime.NumGoroutine() > before {
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<20)
				t.Errorf("goroutine leak: %d before, %d after\n%s", before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
}

// coverDir is where a -cover build of the fake server writes its data:
// the run's own GOCOVERDIR, else a throwaway directory.
func coverDir(t *testing.T) string {
	if d := os.Getenv("GOCOVERDIR"); d != "" {
		return d
	}
	return t.TempDir()
}

// startFake starts the test binary as a fake server in the given mode.
func startFake(t *testing.T, mode string, edit func(*Config)) (*Conn, *testenv.Buffer) {
	t.Helper()
	checkNoLeak(t)
	logs := &testenv.Buffer{}
	cfg := Config{
		Server:  "fake",
		Command: []string{testExe(t)},
		// The race runtime otherwise sleeps a second before exiting, which
		// would outlast testGrace and turn every clean exit into a SIGTERM.
		// GOCOVERDIR: a test binary built with -cover warns on stderr
		// when it is unset, and these tests compare stderr exactly.
		Options:    Options{Env: map[string]string{modeEnv: mode, "GORACE": "atexit_sleep_ms=0"}},
		CloseGrace: testGrace,
		Logger:     hclog.New(&hclog.LoggerOptions{Output: logs, Level: hclog.Trace, DisableTime: true}),
	}
	if testing.CoverMode() != "" {
		cfg.Env["GOCOVERDIR"] = coverDir(t)
	}
	if edit != nil {
		edit(&cfg)
	}
	c, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c, logs
}

func mustRead(t *testing.T, c *Conn) string {
	t.Helper()
	b, err := c.ReadMessage()
	if err != nil {
		t.Fatalf("ReadMessage: %v", err)
	}
	return string(b)
}

func mustWrite(t *testing.T, c *Conn, msg string) {
	t.Helper()
	if err := c.WriteMessage(context.Background(), []byte(msg)); err != nil {
		t.Fatalf("WriteMessage: %v", err)
	}
}

func waitExited(t *testing.T, c *Conn, within time.Duration) {
	t.Helper()
	select {
	case <-c.Exited():
	case <-time.After(within):
		t.Fatalf("process %d did not exit within %v", c.PID(), within)
	}
}

func readExitError(t *testing.T, c *Conn) *ExitError {
	t.Helper()
	b, err := c.ReadMessage()
	if err == nil {
		t.Fatalf("unexpected frame %q while waiting for exit", b)
	}
	var ee *ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("ReadMessage error %v (%T), want *ExitError", err, err)
	}
	return ee
}

func TestEchoRoundtrip(t *testing.T) {
	// A generous grace: this test asserts the clean exit on stdin EOF, which
	// a loaded machine must not turn into a SIGTERM.
	c, _ := startFake(t, "echo", func(cfg *Config) { cfg.CloseGrace = 10 * time.Second })
	if _, ok := c.ExitCode(); ok {
		t.Fatal("ExitCode reports exit for a running process")
	}
	big := `{"big":"` + strings.Repeat("z", 300<<10) + `"}` // longer than the read buffer
	for _, msg := range []string{`{"jsonrpc":"2.0","id":1,"method":"ping"}`, `[{"id":2}]`, big, `{"id":3}`} {
		mustWrite(t, c, msg)
		if got := mustRead(t, c); got != msg {
			t.Fatalf("echo mismatch: got %d bytes %.40q, want %d bytes %.40q", len(got), got, len(msg), msg)
		}
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if code, ok := c.ExitCode(); !ok || code != 0 {
		t.Errorf("ExitCode = %d, %v; want 0, true (echo exits on stdin EOF)", code, ok)
	}
	if _, err := c.ReadMessage(); !errors.Is(err, mcp.ErrClosed) {
		t.Errorf("ReadMessage after Close = %v, want mcp.ErrClosed", err)
	}
	if err := c.WriteMessage(context.Background(), []byte(`{}`)); !errors.Is(err, mcp.ErrClosed) {
		t.Errorf("WriteMessage after Close = %v, want mcp.ErrClosed", err)
	}
}

func TestCRLFAndBlankLines(t *testing.T) {
	c, _ := startFake(t, "crlf", nil)
	for _, want := range []string{`{"a":1}`, `[1,2]`, `{"b":2}`} {
		if got := mustRead(t, c); got != want {
			t.Fatalf("got %q, want %q", got, want)
		}
	}
}

func TestStdoutNoise(t *testing.T) {
	c, logs := startFake(t, "noise", nil)
	mustWrite(t, c, `{"id":1}`)
	if got := mustRead(t, c); got != `{"id":1}` {
		t.Fatalf("got %q", got)
	}
	ee := readExitError(t, c)
	if ee.Code != 0 || !errors.Is(ee, io.EOF) {
		t.Errorf("clean exit: Code=%d, Is(io.EOF)=%v", ee.Code, errors.Is(ee, io.EOF))
	}
	if len(ee.StdoutNoise) != noiseRingSize || ee.StdoutNoise[0] != "noise line 5" || ee.StdoutNoise[9] != "noise line 14" {
		t.Errorf("StdoutNoise = %q", ee.StdoutNoise)
	}
	out := logs.String()
	if n := strings.Count(out, "non-JSON text to stdout"); n != maxNoiseLogs {
		t.Errorf("logged %d noise lines, want %d:\n%s", n, maxNoiseLogs, out)
	}
	if n := strings.Count(out, "further stdout noise suppressed"); n != 1 {
		t.Errorf("suppression notice logged %d times", n)
	}
	if !strings.Contains(out, "server=fake") {
		t.Errorf("log lines do not name the server:\n%s", out)
	}
}

func TestFrameTooLarge(t *testing.T) {
	c, _ := startFake(t, "big", nil)
	start := time.Now()
	_, err := c.ReadMessage()
	var fe *mcp.FrameTooLargeError
	if !errors.As(err, &fe) || fe.Limit != mcp.MaxFrameSize {
		t.Fatalf("err = %v, want *mcp.FrameTooLargeError with the default limit", err)
	}
	if !strings.Contains(err.Error(), `server "fake"`) {
		t.Errorf("error does not name the server: %v", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("took %v to reject the frame", d)
	}
	waitExited(t, c, 5*time.Second) // the session was closed
	if _, err2 := c.ReadMessage(); !errors.As(err2, &fe) {
		t.Errorf("second ReadMessage = %v, want the same sticky error", err2)
	}
	if err := c.WriteMessage(context.Background(), []byte(`{}`)); !errors.As(err, &fe) {
		t.Errorf("WriteMessage after oversize = %v", err)
	}
}

func TestExitCodeAndStderr(t *testing.T) {
	c, logs := startFake(t, "exit3", nil)
	ee := readExitError(t, c)
	if ee.Code != 3 || ee.Signal != "" || errors.Is(ee, io.EOF) {
		t.Errorf("Code=%d Signal=%q", ee.Code, ee.Signal)
	}
	if want := []string{"starting", "fatal: something broke"}; strings.Join(ee.Stderr, "\n") != strings.Join(want, "\n") {
		t.Errorf("Stderr = %q, want %q", ee.Stderr, want)
	}
	msg := ee.Error()
	for _, s := range []string{`server "fake"`, "exited with code 3", "fatal: something broke"} {
		if !strings.Contains(msg, s) {
			t.Errorf("Error() = %q, missing %q", msg, s)
		}
	}
	if code, ok := c.ExitCode(); !ok || code != 3 {
		t.Errorf("ExitCode = %d, %v", code, ok)
	}
	if got := c.Stderr(); len(got) != 2 {
		t.Errorf("Stderr() = %q", got)
	}
	if !strings.Contains(logs.String(), "fatal: something broke") {
		t.Errorf("stderr was not logged:\n%s", logs)
	}
}

func TestExitMidConversation(t *testing.T) {
	c, _ := startFake(t, "exitmid", nil)
	for i := range 2 {
		msg := fmt.Sprintf(`{"id":%d}`, i)
		mustWrite(t, c, msg)
		if got := mustRead(t, c); got != msg {
			t.Fatalf("got %q, want %q", got, msg)
		}
	}
	ee := readExitError(t, c)
	if ee.Code != 5 || len(ee.Stderr) != 1 || ee.Stderr[0] != "bye" {
		t.Errorf("ExitError = %+v", ee)
	}
	err := c.WriteMessage(context.Background(), []byte(`{"id":9}`))
	if !errors.As(err, &ee) || ee.Code != 5 {
		t.Errorf("WriteMessage after exit = %v, want *ExitError with code 5", err)
	}
}

func TestFlood(t *testing.T) {
	c, _ := startFake(t, "flood", nil)
	for i := range 10000 {
		want := fmt.Sprintf(`{"i":%d}`, i)
		if got := mustRead(t, c); got != want {
			t.Fatalf("frame %d = %q", i, got)
		}
	}
	ee := readExitError(t, c)
	if ee.Code != 0 {
		t.Errorf("Code = %d", ee.Code)
	}
	got := c.Stderr()
	if len(got) != defaultStderrLines || got[0] != "err 9980" || got[len(got)-1] != "err 9999" {
		t.Errorf("Stderr() = %q", got)
	}
}

func TestStdoutClosedButRunning(t *testing.T) {
	c, _ := startFake(t, "closestdout", nil)
	_, err := c.ReadMessage()
	if err == nil || !strings.Contains(err.Error(), "closed its stdout but is still running") || !strings.Contains(err.Error(), `"fake"`) {
		t.Fatalf("err = %v", err)
	}
}

func TestCloseConcurrentWithRead(t *testing.T) {
	c, _ := startFake(t, "noread", nil)
	if got := mustRead(t, c); got != `{"ready":true}` {
		t.Fatalf("got %q", got)
	}
	errc := make(chan error, 1)
	go func() {
		_, err := c.ReadMessage()
		errc <- err
	}()
	// Close while the read waits for the pipe, not before it starts.
	if !testenv.WaitBlocked(t, errc, "IO wait", "(*Conn).ReadMessage(") {
		t.Fatalf("ReadMessage returned before Close: %v", <-errc)
	}
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() { _ = c.Close() })
	}
	wg.Wait()
	select {
	case err := <-errc:
		if !errors.Is(err, mcp.ErrClosed) {
			t.Errorf("ReadMessage = %v, want mcp.ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("ReadMessage did not return after Close")
	}
	if _, ok := c.ExitCode(); !ok {
		t.Error("process not reaped after Close")
	}
}

func TestWriteRespectsContext(t *testing.T) {
	t.Run("pre-cancelled", func(t *testing.T) {
		c, _ := startFake(t, "noread", nil)
		mustRead(t, c)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := c.WriteMessage(ctx, []byte(`{}`)); !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
		mustWrite(t, c, `{}`) // nothing was sent, so the stream is intact
	})
	t.Run("cancel unblocks a stuck write", func(t *testing.T) {
		c, _ := startFake(t, "noread", nil)
		mustRead(t, c)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		errc := make(chan error, 1)
		go func() {
			// Larger than any pipe buffer, so part of it is written and
			// then the write blocks.
			errc <- c.WriteMessage(ctx, []byte(`{"big":"`+strings.Repeat("b", 4<<20)+`"}`))
		}()
		// Cancel once it is stuck (a cancel before it starts is the
		// pre-cancelled case, which writes nothing).
		if !testenv.WaitBlocked(t, errc, "IO wait", "(*Conn).WriteMessage(") {
			t.Fatalf("the big write returned without blocking: %v", <-errc)
		}
		cancel()
		select {
		case err := <-errc:
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("err = %v, want context.Canceled", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("cancel did not unblock the write")
		}
		// Half a message is in the pipe: the session is over.
		if err := c.WriteMessage(context.Background(), []byte(`{}`)); err == nil || !strings.Contains(err.Error(), "interrupted") {
			t.Errorf("write after an interrupted write = %v", err)
		}
	})
	t.Run("deadline on a full pipe", func(t *testing.T) {
		c, _ := startFake(t, "noread", nil)
		mustRead(t, c)
		// Pipe writes up to PIPE_BUF are atomic, so the small write that
		// finally blocks sent nothing and the stream stays usable.
		small := []byte(`{"pad":"` + strings.Repeat("p", 100) + `"}`)
		var err error
		for i := 0; i < 1e5 && err == nil; i++ {
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			err = c.WriteMessage(ctx, small)
			cancel()
		}
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("write into a full pipe: err = %v, want DeadlineExceeded", err)
		}
		if ferr := c.fatalErr(); ferr != nil {
			t.Fatalf("a write that sent nothing ended the session: %v", ferr)
		}
	})
}

func TestStartErrors(t *testing.T) {
	checkNoLeak(t)
	ctx := context.Background()
	dir := t.TempDir()

	t.Run("not found with override PATH", func(t *testing.T) {
		path := strings.Join([]string{filepath.Join(dir, "a"), filepath.Join(dir, "b")}, string(os.PathListSeparator))
		_, err := Start(ctx, Config{Server: "fs", Command: []string{"nexus-no-such-command"}, Options: Options{Env: map[string]string{"PATH": path}}})
		var se *StartError
		if !errors.As(err, &se) || se.Kind != NotFound || se.Path != path {
			t.Fatalf("err = %#v", err)
		}
		want := `server "fs": command not found: "nexus-no-such-command" (PATH seen by the server: ` + path + ")"
		if se.Error() != want {
			t.Errorf("Error() = %q\nwant      %q", se.Error(), want)
		}
	})
	t.Run("not found with host PATH", func(t *testing.T) {
		_, err := Start(ctx, Config{Server: "fs", Command: []string{"nexus-no-such-command"}})
		var se *StartError
		if !errors.As(err, &se) || se.Kind != NotFound || se.Path != os.Getenv("PATH") {
			t.Fatalf("err = %#v", err)
		}
	})
	t.Run("missing absolute path", func(t *testing.T) {
		_, err := Start(ctx, Config{Server: "fs", Command: []string{filepath.Join(dir, "nope")}})
		var se *StartError
		if !errors.As(err, &se) || se.Kind != NotFound || !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("err = %#v", err)
		}
	})
	t.Run("bad dir", func(t *testing.T) {
		missing := filepath.Join(dir, "missing")
		_, err := Start(ctx, Config{Server: "fs", Command: []string{testExe(t)}, Options: Options{Cwd: missing}})
		var se *StartError
		if !errors.As(err, &se) || se.Kind != BadDir {
			t.Fatalf("err = %#v", err)
		}
		if !strings.Contains(se.Error(), `server "fs"`) || !strings.Contains(se.Error(), missing) {
			t.Errorf("Error() = %q", se.Error())
		}
	})
	t.Run("dir is a file", func(t *testing.T) {
		f := filepath.Join(dir, "file")
		if err := os.WriteFile(f, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Start(ctx, Config{Server: "fs", Command: []string{testExe(t)}, Options: Options{Cwd: f}})
		var se *StartError
		if !errors.As(err, &se) || se.Kind != BadDir {
			t.Fatalf("err = %#v", err)
		}
	})
	t.Run("empty command", func(t *testing.T) {
		_, err := Start(ctx, Config{Server: "fs"})
		var se *StartError
		if !errors.As(err, &se) || se.Kind != Other {
			t.Fatalf("err = %#v", err)
		}
	})
	t.Run("invalid env key", func(t *testing.T) {
		_, err := Start(ctx, Config{Server: "fs", Command: []string{testExe(t)}, Options: Options{Env: map[string]string{"A=B": "x"}}})
		var se *StartError
		if !errors.As(err, &se) || se.Kind != Other {
			t.Fatalf("err = %#v", err)
		}
	})
	t.Run("cancelled ctx", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		_, err := Start(cctx, Config{Server: "fs", Command: []string{testExe(t)}})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %#v", err)
		}
	})
}

func TestRelativeCommandUsesDir(t *testing.T) {
	exe := testExe(t)
	c, _ := startFake(t, "echo", func(cfg *Config) {
		cfg.Cwd = filepath.Dir(exe)
		cfg.Command = []string{"." + string(filepath.Separator) + filepath.Base(exe)}
	})
	mustWrite(t, c, `{"x":1}`)
	if got := mustRead(t, c); got != `{"x":1}` {
		t.Fatalf("got %q", got)
	}
}

func TestCommandResolvedOnChildPATH(t *testing.T) {
	exe := testExe(t)
	c, _ := startFake(t, "echo", func(cfg *Config) {
		cfg.Command = []string{filepath.Base(exe)}
		cfg.Env["PATH"] = filepath.Dir(exe)
	})
	mustWrite(t, c, `{"x":1}`)
	if got := mustRead(t, c); got != `{"x":1}` {
		t.Fatalf("got %q", got)
	}
}

func readEnv(t *testing.T, c *Conn) map[string]string {
	t.Helper()
	var env map[string]string
	if err := json.Unmarshal([]byte(mustRead(t, c)), &env); err != nil {
		t.Fatal(err)
	}
	delete(env, "GOCOVERDIR") // the harness's (startFake), not the transport's
	return env
}

func TestEnvSanitized(t *testing.T) {
	t.Setenv("NEXUS_TEST_SECRET", "hunter2")
	t.Setenv("NEXUS_TEST_PASS", "passed")
	t.Setenv("LANG", "C.UTF-8")
	c, _ := startFake(t, "env", func(cfg *Config) {
		cfg.EnvPassthrough = []string{"NEXUS_TEST_PASS", "NEXUS_TEST_NOT_SET"}
		cfg.Env["LANG"] = "override"
	})
	env := readEnv(t, c)
	if _, ok := env["NEXUS_TEST_SECRET"]; ok {
		t.Error("secret host variable reached the child")
	}
	if env["NEXUS_TEST_PASS"] != "passed" {
		t.Errorf("passthrough variable = %q", env["NEXUS_TEST_PASS"])
	}
	if _, ok := env["NEXUS_TEST_NOT_SET"]; ok {
		t.Error("passthrough of an unset variable created it")
	}
	if env["LANG"] != "override" {
		t.Errorf("LANG = %q, want the explicit value", env["LANG"])
	}
	if env["PATH"] != os.Getenv("PATH") {
		t.Errorf("PATH = %q, want the host's", env["PATH"])
	}
	allowed := map[string]bool{"NEXUS_TEST_PASS": true, modeEnv: true, "GORACE": true}
	for _, k := range SafeEnvKeys {
		allowed[k] = true
	}
	for k := range env {
		if !allowed[k] {
			t.Errorf("unexpected variable %q in the child", k)
		}
	}
}

func TestEnvInjectedEnviron(t *testing.T) {
	c, _ := startFake(t, "env", func(cfg *Config) {
		cfg.HostEnviron = func() []string {
			return []string{"PATH=/injected", "AWS_SECRET_ACCESS_KEY=x", "HOME=/home/h", "KEEP=1"}
		}
		cfg.EnvPassthrough = []string{"KEEP"}
	})
	env := readEnv(t, c)
	want := map[string]string{"PATH": "/injected", "HOME": "/home/h", "KEEP": "1", modeEnv: "env", "GORACE": "atexit_sleep_ms=0"}
	if len(env) != len(want) {
		t.Errorf("env = %v, want %v", env, want)
	}
	for k, v := range want {
		if env[k] != v {
			t.Errorf("%s = %q, want %q", k, env[k], v)
		}
	}
}

func TestEmptyEnvDoesNotInherit(t *testing.T) {
	t.Setenv("NEXUS_TEST_SECRET", "hunter2")
	// Nothing allowed survives and no Env is given except the mode: the
	// child must get exactly that, not the host environment (a nil
	// exec.Cmd.Env would mean "inherit everything").
	c, _ := startFake(t, "env", func(cfg *Config) {
		cfg.HostEnviron = func() []string { return nil }
	})
	env := readEnv(t, c)
	if len(env) != 2 || env[modeEnv] != "env" {
		t.Errorf("env = %v", env)
	}
}

// ReadMessageBefore (mcp.DirectReader) waits only until its deadline or an
// interrupt, consumes nothing when it gives up, skips noise, leaves a frame
// longer than the buffer to ReadMessage, and leaves an exit to ReadMessage
// too, which reports it.
func TestReadMessageBefore(t *testing.T) {
	c, _ := startFake(t, "echo", nil)
	if !c.DirectReads() {
		t.Fatal("pipes should support direct reads")
	}
	soon := func(d time.Duration) time.Time { return time.Now().Add(d) }
	t0 := time.Now()
	if _, err := c.ReadMessageBefore(soon(50 * time.Millisecond)); !errors.Is(err, mcp.ErrReadTimeout) {
		t.Fatalf("nothing sent: %v, want mcp.ErrReadTimeout", err)
	}
	if d := time.Since(t0); d < 50*time.Millisecond {
		t.Errorf("gave up after %v, before the deadline", d)
	}
	mustWrite(t, c, `{"id":1}`)
	if b, err := c.ReadMessageBefore(soon(10 * time.Second)); err != nil || string(b) != `{"id":1}` {
		t.Fatalf("got %q, %v", b, err)
	}

	// An interrupt ends a wait at once, and one sent before the wait ends
	// the next wait; neither loses input.
	errc := make(chan error, 1)
	go func() { _, err := c.ReadMessageBefore(soon(time.Hour)); errc <- err }()
	if !testenv.WaitBlocked(t, errc, "IO wait", "(*Conn).ReadMessageBefore(") {
		t.Fatalf("ReadMessageBefore returned before the interrupt: %v", <-errc)
	}
	c.InterruptRead()
	select {
	case err := <-errc:
		if !errors.Is(err, mcp.ErrReadTimeout) {
			t.Fatalf("interrupted: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("InterruptRead did not end the wait")
	}
	c.InterruptRead()
	if _, err := c.ReadMessageBefore(soon(time.Hour)); !errors.Is(err, mcp.ErrReadTimeout) {
		t.Fatalf("interrupt before the wait: %v", err)
	}
	mustWrite(t, c, `{"id":2}`)
	if b, err := c.ReadMessageBefore(soon(10 * time.Second)); err != nil || string(b) != `{"id":2}` {
		t.Fatalf("after interrupts: %q, %v", b, err)
	}

	// A frame longer than the read buffer is read directly too, whole.
	big := `{"big":"` + strings.Repeat("z", 200<<10) + `"}`
	mustWrite(t, c, big)
	b, err := c.ReadMessageBefore(soon(10 * time.Second))
	for errors.Is(err, mcp.ErrReadTimeout) {
		b, err = c.ReadMessageBefore(soon(10 * time.Second))
	}
	if err != nil || string(b) != big || !c.FrameOwned() {
		t.Fatalf("large frame: %d bytes (owned %v), %v; want %d", len(b), c.FrameOwned(), err, len(big))
	}
	// The next ReadMessage has no deadline left from the direct reads: not
	// even one that has passed, and it waits until the frame comes.
	if _, err := c.ReadMessageBefore(soon(20 * time.Millisecond)); !errors.Is(err, mcp.ErrReadTimeout) {
		t.Fatalf("nothing sent: %v, want mcp.ErrReadTimeout", err)
	}
	got := make(chan string, 1)
	errc = make(chan error, 1)
	go func() {
		b, err := c.ReadMessage()
		got <- string(b)
		errc <- err
	}()
	if !testenv.WaitBlocked(t, errc, "IO wait", "(*Conn).ReadMessage(") {
		t.Fatalf("ReadMessage did not wait for the frame: %v", <-errc)
	}
	mustWrite(t, c, `{"id":3}`)
	if b, err := <-got, <-errc; err != nil || b != `{"id":3}` {
		t.Fatalf("got %q, %v", b, err)
	}
}

// A deadline that passes while a long frame is half there loses nothing:
// what came stays collected, and the next read, of either kind, finishes
// the frame.
func TestReadMessageBeforeLongFrameInParts(t *testing.T) {
	for _, finish := range []string{"direct", "ReadMessage"} {
		t.Run(finish, func(t *testing.T) {
			c, _ := startFake(t, "parts", nil)
			head := `{"big":"` + strings.Repeat("y", 150<<10)
			mustWrite(t, c, head)
			stop := time.Now().Add(10 * time.Second)
			for !c.frames.collecting {
				if time.Now().After(stop) {
					t.Fatal("the head of the frame was never collected")
				}
				if _, err := c.ReadMessageBefore(time.Now().Add(20 * time.Millisecond)); !errors.Is(err, mcp.ErrReadTimeout) {
					t.Fatalf("half a frame: %v, want mcp.ErrReadTimeout", err)
				}
			}
			tail := strings.Repeat("y", 100<<10) + `"}`
			mustWrite(t, c, tail)
			mustWrite(t, c, ".")
			var b []byte
			var err error
			if finish == "direct" {
				b, err = c.ReadMessageBefore(time.Now().Add(10 * time.Second))
				for errors.Is(err, mcp.ErrReadTimeout) {
					b, err = c.ReadMessageBefore(time.Now().Add(10 * time.Second))
				}
			} else {
				b, err = c.ReadMessage()
			}
			if err != nil || string(b) != head+tail {
				t.Fatalf("got %d bytes, %v; want %d", len(b), err, len(head+tail))
			}
			mustWrite(t, c, `{"id":1}`)
			mustWrite(t, c, ".")
			if got := mustRead(t, c); got != `{"id":1}` {
				t.Fatalf("the next frame: %q", got)
			}
		})
	}
}

func TestReadMessageBeforeNoiseAndExit(t *testing.T) {
	c, _ := startFake(t, "exitmid", nil)
	mustWrite(t, c, "not json at all")
	mustWrite(t, c, `{"id":1}`)
	b, err := c.ReadMessageBefore(time.Now().Add(10 * time.Second))
	for errors.Is(err, mcp.ErrReadTimeout) || (err == nil && b == nil) {
		b, err = c.ReadMessageBefore(time.Now().Add(10 * time.Second))
	}
	if err != nil || string(b) != `{"id":1}` {
		t.Fatalf("after a noise line: %q, %v", b, err)
	}
	waitExited(t, c, 10*time.Second)
	if _, err := c.ReadMessageBefore(time.Now().Add(10 * time.Second)); !errors.Is(err, mcp.ErrNotDirect) {
		t.Fatalf("after exit: %v, want mcp.ErrNotDirect", err)
	}
	readExitError(t, c)
}
