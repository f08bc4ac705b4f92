package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/config"
	"github.com/nexus-mcp/nexus/sdk/event"
)

// stillServing checks that a good plugin in the same manager answers:
// whatever went wrong before, the host keeps serving.
func stillServing(t *testing.T, m *Manager) {
	t.Helper()
	ctx := ctxT(t)
	p, err := m.Open(ctx, pinned(t, "healthy", testPlugin(t, "good")))
	if err != nil {
		t.Fatalf("a good plugin no longer opens: %v", err)
	}
	l, err := p.Policy(ctx, "ok", nil)
	if err != nil {
		t.Fatal(err)
	}
	d, err := l.Handle(ctx, toolEvent("anything"))
	if err != nil || d.Action != event.Allow {
		t.Fatalf("a good plugin no longer answers: %v %v", d, err)
	}
}

func writeScript(t *testing.T, body string, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "plugin.sh")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), mode); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadFailures(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "ran")
	cases := []struct {
		name  string
		block func(t *testing.T) *config.Plugin
		opts  Options
		kind  LoadErrorKind
		want  []string // in the report
	}{
		{"missing", func(t *testing.T) *config.Plugin {
			return &config.Plugin{Name: "p", Path: "/nonexistent/nexus-plugin", SHA256: strings.Repeat("0", 64)}
		}, Options{}, LoadNotFound, []string{"no file at /nonexistent/nexus-plugin"}},
		{"not executable", func(t *testing.T) *config.Plugin {
			return pinned(t, "p", writeScript(t, "exit 0", 0o644))
		}, Options{}, LoadNotExecutable, []string{"not an executable file", "chmod +x"}},
		{"directory", func(t *testing.T) *config.Plugin {
			return &config.Plugin{Name: "p", Path: t.TempDir(), SHA256: strings.Repeat("0", 64)}
		}, Options{}, LoadNotExecutable, []string{"not an executable file"}},
		{"checksum missing", func(t *testing.T) *config.Plugin {
			pc := pinned(t, "p", writeScript(t, "touch "+marker, 0o755))
			pc.SHA256 = ""
			return pc
		}, Options{}, LoadChecksumMissing, []string{"no sha256", `sha256 = "`}},
		{"checksum mismatch", func(t *testing.T) *config.Plugin {
			pc := pinned(t, "p", writeScript(t, "touch "+marker, 0o755))
			pc.SHA256 = strings.Repeat("ab", 32)
			return pc
		}, Options{}, LoadChecksumMismatch, []string{"does not match", "it was not run", "pinned: abab", "actual: "}},
		{"not a plugin", func(t *testing.T) *config.Plugin {
			return pinned(t, "p", writeScript(t, "echo 'usage: tool [flags]'; exit 2", 0o755))
		}, Options{}, LoadNotAPlugin, []string{"is not a Nexus plugin", `"usage: tool [flags]"`, "sdk/plugin/proto/README.md"}},
		{"another host's plugin", func(t *testing.T) *config.Plugin {
			return pinned(t, "p", testPlugin(t, "othercookie"))
		}, Options{}, LoadExited, []string{"exited during start", "This binary is a plugin"}},
		{"unsupported protocol version", func(t *testing.T) *config.Plugin {
			return pinned(t, "p", testPlugin(t, "badversion"))
		}, Options{}, LoadVersion, []string{"no protocol version this host supports", "Plugin version: 99"}},
		{"crash at start", func(t *testing.T) *config.Plugin {
			return pinned(t, "p", testPlugin(t, "crash-at-start"))
		}, Options{}, LoadExited, []string{"exited during start", "cannot read /etc/testplugin.conf"}},
		{"hang", func(t *testing.T) *config.Plugin {
			return pinned(t, "p", testPlugin(t, "hang"))
		}, Options{StartTimeout: 2 * time.Second}, LoadTimeout, []string{"did not finish its handshake in time"}},
		{"garbage on stdout", func(t *testing.T) *config.Plugin {
			return pinned(t, "p", testPlugin(t, "garbage"))
		}, Options{}, LoadNotAPlugin, []string{`"hello, I am not a handshake"`, "prints to stdout before calling plugin.Serve"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m, _ := newManager(t, tc.opts)
			start := time.Now()
			_, err := m.Open(ctxT(t), tc.block(t))
			err = Explain(err)
			var le *LoadError
			if !errors.As(err, &le) {
				t.Fatalf("got %v, want a *LoadError", err)
			}
			if le.Kind != tc.kind {
				t.Errorf("kind %v, want %v; error:\n%v", le.Kind, tc.kind, err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
			if !strings.Contains(err.Error(), "Plugin Launch Failed") {
				t.Errorf("not a report:\n%v", err)
			}
			// The load ends by its own limits (StartTimeout, 2 s, for the
			// one that hangs), not by ctxT's 30 s: the bound sits between
			// the two, generous for a loaded machine.
			if d := time.Since(start); d > 20*time.Second {
				t.Errorf("took %v: the load waited for the caller's context, not its own limits", d)
			}
			if _, err := os.Stat(marker); err == nil {
				t.Fatal("a binary that failed its checksum ran")
			}
			stillServing(t, m)
		})
	}
}

func TestInsecureSkipChecksum(t *testing.T) {
	m, logs := newManager(t, Options{InsecureSkipChecksum: true})
	pc := pinned(t, "loose", testPlugin(t, "good"))
	pc.SHA256 = ""
	if _, err := m.Open(ctxT(t), pc); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "INSECURE") || !strings.Contains(logs.String(), `sha256 = "`) {
		t.Errorf("no loud warning:\n%s", logs)
	}
}

func openGood(t *testing.T, m *Manager, name string) *Plugin {
	t.Helper()
	p, err := m.Open(ctxT(t), pinned(t, name, testPlugin(t, "good")))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCrashDuringCall(t *testing.T) {
	m, _ := newManager(t, Options{RestartBackoff: 50 * time.Millisecond})
	ctx := ctxT(t)
	p := openGood(t, m, "guard")
	// The filter's own time limit is far off, so only noticing the crash
	// can end the call within the bound below (on a loaded machine too).
	l, err := p.Filter(ctx, &config.Filter{Name: "crashy", Kind: "policy", Plugin: "guard",
		Config: map[string]any{"crash_on": "explode", "deny_tools": []any{"rm"}}, Limits: config.Limits{Timeout: time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	pid := p.cur.runner.pid
	start := time.Now()
	_, err = l.Handle(ctx, toolEvent("explode"))
	crash, ok := AsCrash(err)
	if !ok {
		t.Fatalf("got %v, want a crash", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the call in flight took %v to fail", d)
	}
	for _, w := range []string{`plugin "guard" crashed during policy Decide`, "exit status 2", "panic: boom in Decide"} {
		if !strings.Contains(crash.Error(), w) {
			t.Errorf("crash error lacks %q: %v", w, crash)
		}
	}
	if r := Explain(crash); !strings.Contains(r.Error(), "Plugin Crashed") || !strings.Contains(r.Error(), "panic: boom in Decide") {
		t.Error(r)
	}
	// Restarted with backoff; the link configures the new process itself.
	d, err := l.Handle(ctx, toolEvent("rm"))
	if err != nil || d.Action != event.Deny {
		t.Fatalf("after restart: %v %v", d, err)
	}
	if p.cur.runner.pid == pid {
		t.Error("same pid after a crash")
	}
}

func TestCallFailures(t *testing.T) {
	m, _ := newManager(t, Options{})
	ctx := ctxT(t)
	p := openGood(t, m, "guard")
	l, err := p.Policy(ctx, "f", json.RawMessage(`{"hang_on": "slow", "fail_on": "auth", "panic_on": "bug", "stdout": true}`))
	if err != nil {
		t.Fatal(err)
	}
	// A plugin that hangs: the caller's deadline ends the call.
	hctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	_, err = l.Handle(hctx, toolEvent("slow"))
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("hang: %v", err)
	}
	// An error the plugin returns.
	_, err = l.Handle(ctx, toolEvent("auth"))
	var fe *FilterError
	if !errors.As(err, &fe) || !strings.Contains(err.Error(), `plugin "guard" Decide: authorization service unreachable`) {
		t.Errorf("plugin error: %v", err)
	}
	// A panic in the plugin's code is an error; the plugin lives on.
	_, err = l.Handle(ctx, toolEvent("bug"))
	if !errors.As(err, &fe) || !strings.Contains(err.Error(), "Decide panicked: nil map write") {
		t.Errorf("panic: %v", err)
	}
	if strings.Contains(err.Error(), "\n") || strings.Contains(err.Error(), "goroutine") || !strings.Contains(err.Error(), "in Nexus's log") {
		t.Errorf("a panic shows more than one line, or not where the rest is: %q", err)
	}
	// Garbage on stdout after the handshake is only logged.
	if d, err := l.Handle(ctx, toolEvent("fine")); err != nil || d.Action != event.Allow {
		t.Errorf("after all that: %v %v", d, err)
	}
	// A config the plugin itself rejects.
	_, err = p.Policy(ctx, "bad", json.RawMessage(`{"deny_tools": 3}`))
	if err == nil || !strings.Contains(err.Error(), "/deny_tools") {
		t.Errorf("schema: %v", err)
	}
}

// A plugin that overruns its filter's time limit (ignoring its context)
// fails the call closed with an error naming it and the limit, and is
// replaced: the next call is served by a new process. The limit is long
// enough for the healthy calls (configuring a process just started among
// them) on a loaded machine; only the stuck call pays it.
func TestCallTimeout(t *testing.T) {
	m, _ := newManager(t, Options{})
	p := openGood(t, m, "guard")
	l, err := p.Filter(ctxT(t), &config.Filter{Name: "slowpoke", Kind: "policy", Plugin: "guard",
		Config: map[string]any{"stuck_on": "stuck"}, Limits: config.Limits{Timeout: 2 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	pid := p.cur.runner.pid
	ctx := ctxT(t)
	_, err = l.Handle(ctx, toolEvent("stuck"))
	var te *TimeoutError
	if !errors.As(err, &te) || te.Limit != 2*time.Second {
		t.Fatalf("overrun: %v", err)
	}
	for _, want := range []string{`plugin "guard"`, `filter "slowpoke"`, "2s", "limits { timeout }"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error lacks %q: %v", want, err)
		}
	}
	d, err := l.Handle(ctx, toolEvent("fine"))
	if err != nil || d.Action != event.Allow {
		t.Fatalf("after the overrun: %v %v", d, err)
	}
	if p.cur.runner.pid == pid {
		t.Error("the stuck process was not replaced")
	}
}

func dialT(t *testing.T, p *Plugin, cfg string) *mcp.Client {
	t.Helper()
	ctx := ctxT(t)
	conn, err := p.Dial(ctx, json.RawMessage(cfg))
	if err != nil {
		t.Fatal(err)
	}
	c, err := mcp.Connect(ctx, conn, mcp.ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestCrashDuringStream(t *testing.T) {
	m, _ := newManager(t, Options{RestartBackoff: 50 * time.Millisecond})
	ctx := ctxT(t)
	p := openGood(t, m, "ws")
	// initialize + initialized are frames 1 and 2; the call is frame 3.
	c := dialT(t, p, `{"crash_after": 2}`)
	start := time.Now()
	_, err := c.CallTool(ctx, "echo", map[string]any{"message": "x"}, nil)
	var rpcErr *mcp.RPCError
	if !errors.As(err, &rpcErr) || rpcErr.Code != CodePluginCrashed {
		t.Fatalf("in-flight call: %v, want a JSON-RPC error with code %d", err, CodePluginCrashed)
	}
	if d := time.Since(start); d > 10*time.Second { // the call's own timeout is 30 s
		t.Errorf("took %v", d)
	}
	for _, w := range []string{`plugin "ws" crashed during transport stream`, "index out of range"} {
		if !strings.Contains(rpcErr.Message, w) {
			t.Errorf("RPC error lacks %q: %s", w, rpcErr.Message)
		}
	}
	<-c.Done()
	if _, ok := AsCrash(c.Err()); !ok {
		t.Errorf("session ended with %v, want the crash", c.Err())
	}
	// The next use reconnects to the restarted plugin.
	c2 := dialT(t, p, `{}`)
	if _, err := c2.CallTool(ctx, "echo", map[string]any{"message": "again"}, nil); err != nil {
		t.Fatal(err)
	}
}

func TestMalformedFrames(t *testing.T) {
	m, _ := newManager(t, Options{})
	ctx := ctxT(t)
	p := openGood(t, m, "ws")
	conn, err := p.Dial(ctx, json.RawMessage(`{"malformed": true}`))
	if err != nil {
		t.Fatal(err)
	}
	_, err = mcp.Connect(ctx, conn, mcp.ClientOptions{})
	var mf *MalformedFrameError
	if !errors.As(err, &mf) || !strings.Contains(err.Error(), `"<html>502 Bad Gateway</html>"`) {
		t.Fatalf("got %v, want a MalformedFrameError", err)
	}
	conn, err = p.Dial(ctx, json.RawMessage(`{"huge": true}`))
	if err != nil {
		t.Fatal(err)
	}
	_, err = mcp.Connect(ctx, conn, mcp.ClientOptions{})
	var big *mcp.FrameTooLargeError
	if !errors.As(err, &big) {
		t.Fatalf("got %v, want a FrameTooLargeError", err)
	}
	// An Open the plugin refuses: its message and stderr reach the error.
	_, err = p.Dial(ctx, json.RawMessage(`{"fail_open": "server refused the login"}`))
	var oe *OpenError
	if !errors.As(err, &oe) || !strings.Contains(err.Error(), "server refused the login") || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("open: %v", err)
	}
	// The plugin still serves new sessions.
	c := dialT(t, p, `{}`)
	if _, err := c.CallTool(ctx, "echo", map[string]any{"message": "ok"}, nil); err != nil {
		t.Fatal(err)
	}
}

func TestSanitizedEnvironmentAndStdin(t *testing.T) {
	m, _ := newManager(t, Options{Environ: func() []string {
		return []string{"PATH=/usr/bin:/bin", "HOME=/home/x", "GITHUB_TOKEN=ghp_secret", "AWS_SECRET_ACCESS_KEY=abc"}
	}})
	ctx := ctxT(t)
	p, err := m.Open(ctx, pinned(t, "env", testPlugin(t, "envdump")))
	if err != nil {
		t.Fatal(err)
	}
	l, err := p.Policy(ctx, "env", nil)
	if err != nil {
		t.Fatal(err)
	}
	d, err := l.Handle(ctx, toolEvent("x"))
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Env   []string `json:"env"`
		Stdin string   `json:"stdin"`
	}
	if err := json.Unmarshal([]byte(d.Reason), &got); err != nil {
		t.Fatal(err)
	}
	env := strings.Join(got.Env, "\n")
	if strings.Contains(env, "ghp_secret") || strings.Contains(env, "AWS_SECRET") {
		t.Errorf("the host's secrets reached the plugin:\n%s", env)
	}
	if !strings.Contains(env, "PATH=/usr/bin:/bin") || !strings.Contains(env, "HOME=/home/x") {
		t.Errorf("safe keys missing:\n%s", env)
	}
	if got.Stdin != "read 0 bytes, err=EOF" {
		t.Errorf("plugin stdin: %s, want an empty stream (/dev/null)", got.Stdin)
	}
}

func TestDownWhileBackingOff(t *testing.T) {
	// The restart is 30 s away (MaxRestartBackoff), well beyond
	// maxRestartWait however slowly the test runs.
	m, logs := newManager(t, Options{RestartBackoff: 30 * time.Second})
	ctx := ctxT(t)
	p := openGood(t, m, "guard")
	l, err := p.Policy(ctx, "crashy", json.RawMessage(`{"crash_on": "explode"}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Handle(ctx, toolEvent("explode")); err == nil {
		t.Fatal("no crash")
	}
	// A call now fails at once, saying so, rather than waiting as for a
	// restart due within maxRestartWait. The DownError is the proof, not a
	// clock: a call that waited would have met the restart (and the
	// plugin's answer) or ctx's end (ctx.Err), never this error.
	_, err = l.Handle(ctx, toolEvent("ls"))
	var down *DownError
	if !errors.As(err, &down) || !strings.Contains(err.Error(), `plugin "guard" is down after 1 failure(s); next restart in`) ||
		!strings.Contains(err.Error(), "panic: boom in Decide") {
		t.Fatalf("got %v, want a DownError with the crash", err)
	}
	if !strings.Contains(logs.String(), "plugin crashed; restarting") {
		t.Errorf("crash not logged:\n%s", logs)
	}
}

// TestStderrJSONTypes: a plugin's stderr line that is JSON with a number,
// null or object where go-plugin expects a string (@message, @level,
// @timestamp) once panicked go-plugin's reader and took the host down. The
// host now survives it, reports the plugin's failure as usual, and keeps
// what the lines said.
func TestStderrJSONTypes(t *testing.T) {
	m, logs := newManager(t, Options{})
	p := writeScript(t, `echo '{"@level":"error","@message":1}' >&2
echo '{"@message":null,"@timestamp":5}' >&2
echo '{"@level":{"x":1},"@message":"odd level"}' >&2
exit 3`, 0o755)
	_, err := m.Open(ctxT(t), pinned(t, "p", p))
	var le *LoadError
	if !errors.As(err, &le) || le.Kind != LoadExited {
		t.Fatalf("got %v, want a *LoadError of kind %v", err, LoadExited)
	}
	for _, w := range []string{"[ERROR] 1", "null", `odd level`} {
		if !strings.Contains(err.Error()+logs.String(), w) {
			t.Errorf("%q is neither in the error nor in the log:\n%v\nlogs:\n%s", w, err, logs)
		}
	}
}

func TestFixLogLine(t *testing.T) {
	for in, want := range map[string]string{
		"plain text\n":                          "plain text\n",
		`{"@message":"fine","n":1}` + "\n":      `{"@message":"fine","n":1}` + "\n",
		`{"@message":1,"@level":"warn"}` + "\n": `{"@level":"warn","@message":"1"}` + "\n",
		`{"@message":[1,2]}` + "\r\n":           `{"@message":"[1,2]"}` + "\r\n",
		`{"@timestamp":null}`:                   `{"@timestamp":"null"}`,
		`{"@message":1`:                         `{"@message":1`, // not JSON: go-plugin logs it as text
	} {
		if got := string(fixLogLine([]byte(in))); got != want {
			t.Errorf("fixLogLine(%q) = %q, want %q", in, got, want)
		}
	}
	// Lines go-plugin cannot read whole pass through untouched, in pieces.
	long := `{"@message":1,"pad":"` + strings.Repeat("x", 3*maxLineBytes) + `"}` + "\n" + `{"@message":2}` + "\n"
	out, err := io.ReadAll(guardLogLines(strings.NewReader(long)))
	if err != nil {
		t.Fatal(err)
	}
	if want := long[:len(long)-len(`{"@message":2}`+"\n")] + `{"@message":"2"}` + "\n"; string(out) != want {
		t.Errorf("a long line was changed, or the line after it was not checked: got %d bytes, want %d", len(out), len(want))
	}
}
