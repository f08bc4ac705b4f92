package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/nexus-mcp/nexus/internal/testenv"
)

// claudeToken is the token of agent claude in gatewayConfig, passed to
// the gateway in $CLAUDE_TOKEN.
const claudeToken = "test-token-0123456789abcdef"

// gatewayConfig is the HCL of a gateway in front of the built-in test
// server, with an agent whose rules hide the fail tool. mark goes into the
// upstream's environment, so a test can find its process.
func gatewayConfig(t *testing.T, mark string) string {
	t.Helper()
	bin := testenv.Nexus(t)
	path := filepath.Join(t.TempDir(), "nexus.hcl")
	hcl := fmt.Sprintf(`
server "testserver" {
  stdio {
    command = %q
    args    = ["testserver"]
    env     = { NEXUS_TEST_MARK = %q }
  }
}

variable "claude_token" { sensitive = true }

agent "claude" {
  permission = "yolo"
  deny       = ["testserver.fail"]
  tokens     = [var.claude_token]
}

# The upstream may take over a second to start on a loaded box (the
# default list_wait): the first list waits for it, so a client's first
# tools/list is never empty for that reason alone.
gateway {
  list_wait = "60s"
}
`, bin, mark)
	if err := os.WriteFile(path, []byte(hcl), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// sdkClient runs the official TypeScript SDK's client script against a
// gateway and fails the test with its output unless every check passed.
func sdkClient(t *testing.T, opts map[string]any) string {
	t.Helper()
	node := testenv.Node(t)
	sdk := testenv.NPMPackage(t, "@modelcontextprotocol/sdk")
	raw, _ := json.Marshal(opts)
	script, _ := filepath.Abs(filepath.Join("testdata", "gateway-client.mjs"))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script, sdk, string(raw))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if err != nil || strings.Contains(out.String(), "FAIL:") {
		t.Fatalf("the SDK client failed (%v):\n%s", err, out.String())
	}
	return out.String()
}

// serveHTTP starts `nexus serve --listen 127.0.0.1:0` and returns its URL
// and a stop function that interrupts it and checks it exits 0.
func serveHTTP(t *testing.T, config string, args ...string) (string, func() string) {
	t.Helper()
	u, stop, _ := serveHTTPKill(t, config, args...)
	return u, stop
}

// serveHTTPKill is serveHTTP that also returns a kill function: SIGKILL,
// as a crash would, by its PID (its upstream processes die with it).
func serveHTTPKill(t *testing.T, config string, args ...string) (string, func() string, func()) {
	t.Helper()
	bin := testenv.Nexus(t)
	cmd := exec.Command(bin, append([]string{"serve", "--config", config, "--listen", "127.0.0.1:0"}, args...)...)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir(), "CLAUDE_TOKEN=" + claudeToken}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	lines := bufio.NewScanner(stderr)
	urlc := make(chan string, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for lines.Scan() {
			line := lines.Text()
			log.WriteString(line + "\n")
			if u, ok := strings.CutPrefix(line, "nexus: serving MCP at "); ok {
				urlc <- u
			}
		}
	}()
	stopped := false
	stop := func() string {
		if stopped {
			return log.String()
		}
		stopped = true
		cmd.Process.Signal(os.Interrupt)
		waited := make(chan error, 1)
		go func() { <-done; waited <- cmd.Wait() }()
		select {
		case err := <-waited:
			if err != nil {
				t.Errorf("nexus serve exited with %v after SIGINT, want 0; stderr:\n%s", err, log.String())
			}
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			t.Fatalf("nexus serve did not exit within 30 s of SIGINT; stderr:\n%s", log.String())
		}
		return log.String()
	}
	kill := func() {
		if stopped {
			return
		}
		stopped = true
		cmd.Process.Kill()
		<-done
		cmd.Wait()
	}
	t.Cleanup(func() { stop() })
	select {
	case u := <-urlc:
		return u, stop, kill
	case <-done:
		t.Fatalf("nexus serve exited before listening:\n%s", log.String())
	case <-time.After(60 * time.Second):
		t.Fatalf("nexus serve did not listen within 60 s:\n%s", log.String())
	}
	return "", nil, nil
}

// marked lists the PIDs of live processes whose environment holds mark.
func marked(t *testing.T, mark string) []string {
	t.Helper()
	ents, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range ents {
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil || !bytes.Contains(env, []byte("NEXUS_TEST_MARK="+mark)) {
			continue
		}
		stat, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if testenv.Zombie(stat) {
			continue // a zombie is gone, only not yet reaped by its parent
		}
		out = append(out, e.Name())
	}
	return out
}

// someMarked waits (a while) for a process holding mark to show in /proc.
func someMarked(t *testing.T, mark string) bool {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for len(marked(t, mark)) == 0 {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return true
}

// noneLeft waits for every process holding mark to be gone.
func noneLeft(t *testing.T, mark string) {
	t.Helper()
	if runtime.GOOS != "linux" {
		return
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		left := marked(t, mark)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("upstream processes left behind: %v", left)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestServeSDKClientStdio(t *testing.T) {
	mark := fmt.Sprintf("stdio-%d", time.Now().UnixNano())
	config := gatewayConfig(t, mark)
	out := sdkClient(t, map[string]any{
		"mode":    "stdio",
		"command": testenv.Nexus(t),
		"args":    []string{"serve", "--config", config, "--agent", "claude"},
		"env":     map[string]string{"PATH": "/usr/bin:/bin", "CLAUDE_TOKEN": claudeToken},
	})
	if !strings.Contains(out, "ok: close") {
		t.Fatalf("the client did not finish:\n%s", out)
	}
	noneLeft(t, mark)
}

func TestServeSDKClientHTTP(t *testing.T) {
	mark := fmt.Sprintf("http-%d", time.Now().UnixNano())
	config := gatewayConfig(t, mark)
	// Every request acts as the agent whose token it carries.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	metricsAddr := ln.Addr().String()
	ln.Close()
	url, stop := serveHTTP(t, config, "--metrics", metricsAddr)
	sdkClient(t, map[string]any{"mode": "http", "url": url, "token": claudeToken})
	// The calls are counted, in the Prometheus text format.
	resp, err := http.Get("http://" + metricsAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	calls := 0.0
	if f := fams["nexus_requests_total"]; f != nil {
		for _, m := range f.Metric {
			calls += m.Counter.GetValue()
		}
	}
	if calls < 3 || fams["nexus_downstream_sessions"] == nil || fams["nexus_link_duration_seconds"] == nil {
		t.Errorf("metrics after the SDK client's calls: %v requests counted; families %v", calls, len(fams))
	}
	// The legacy HTTP+SSE transport, for old clients.
	sdkClient(t, map[string]any{"mode": "sse", "url": strings.TrimSuffix(url, "/mcp") + "/sse", "token": claudeToken})

	for _, c := range []struct {
		name, path, origin string
		want               int
	}{
		{"health", "/healthz", "", http.StatusOK},
		{"ready", "/readyz", "", http.StatusOK},
		{"foreign origin", "/mcp", "https://evil.example", http.StatusForbidden},
		{"no token", "/mcp", "", http.StatusUnauthorized},
		{"unknown path", "/nope", "", http.StatusNotFound},
	} {
		req, _ := http.NewRequest(http.MethodGet, strings.TrimSuffix(url, "/mcp")+c.path, nil)
		if c.origin != "" {
			req.Header.Set("Origin", c.origin)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("%s: status %d, want %d: %s", c.name, resp.StatusCode, c.want, body)
		}
		if c.want == http.StatusUnauthorized && !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("%s: WWW-Authenticate %q", c.name, resp.Header.Get("WWW-Authenticate"))
		}
	}
	log := stop()
	if !strings.Contains(log, "serving MCP at http://127.0.0.1:") {
		t.Errorf("stderr: %s", log)
	}
	noneLeft(t, mark)
}

// A SIGTERM stops the gateway as SIGINT does: exit 0, no process left.
func TestServeSIGTERM(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no SIGTERM on Windows")
	}
	mark := fmt.Sprintf("term-%d", time.Now().UnixNano())
	config := gatewayConfig(t, mark)
	bin := testenv.Nexus(t)
	cmd := exec.Command(bin, "serve", "--config", config, "--agent", "claude")
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir(), "CLAUDE_TOKEN=" + claudeToken}
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	fmt.Fprintln(in, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	fmt.Fprintln(in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	fmt.Fprintln(in, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"mcp_testserver_echo","arguments":{"message":"x"}}}`)
	sc := bufio.NewScanner(out)
	answered := false
	for !answered && sc.Scan() {
		answered = strings.Contains(sc.Text(), `"id":2`)
	}
	if !answered {
		cmd.Wait()
		t.Fatalf("no answer to the call; stderr:\n%s", stderr.String())
	}
	if !someMarked(t, mark) {
		t.Fatalf("the upstream is not running after a call; stderr:\n%s", stderr.String())
	}
	cmd.Process.Signal(syscall.SIGTERM)
	waited := make(chan error, 1)
	go func() { io.Copy(io.Discard, out); waited <- cmd.Wait() }()
	select {
	case err := <-waited:
		if err != nil {
			t.Errorf("exit after SIGTERM: %v, want 0", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("nexus serve did not exit within 30 s of SIGTERM")
	}
	noneLeft(t, mark)
}

// stdioServe is nexus serve --agent claude over stdio on a config of one
// stdio upstream (command, args) marked with mark, with an initialized
// session: send writes a line, answer waits for the response to id.
type stdioServe struct {
	t    *testing.T
	cmd  *exec.Cmd
	in   io.WriteCloser
	line chan string
}

func startStdioServe(t *testing.T, name, command, args, mark string) *stdioServe {
	t.Helper()
	bin := testenv.Nexus(t)
	config := filepath.Join(t.TempDir(), "nexus.hcl")
	hcl := fmt.Sprintf("server %q {\n  stdio {\n    command = %q\n    args    = %s\n    env     = { NEXUS_TEST_MARK = %q }\n  }\n}\nagent \"claude\" { permission = \"yolo\" }\n",
		name, command, args, mark)
	if err := os.WriteFile(config, []byte(hcl), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // never leave an upstream or what it started behind
		for _, p := range marked(t, mark) {
			if pid, err := strconv.Atoi(p); err == nil {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	s := &stdioServe{t: t, cmd: exec.Command(bin, "serve", "--config", config, "--agent", "claude"), line: make(chan string, 16)}
	s.cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir()}
	s.in, _ = s.cmd.StdinPipe()
	out, _ := s.cmd.StdoutPipe()
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.in.Close(); s.cmd.Process.Kill(); s.cmd.Wait() })
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			s.line <- sc.Text()
		}
		close(s.line)
	}()
	s.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	s.answer("1")
	s.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return s
}

func (s *stdioServe) send(line string) { fmt.Fprintln(s.in, line) }

func (s *stdioServe) answer(id string) string {
	s.t.Helper()
	return s.await("an answer to request "+id, `"id":`+id+`,`)
}

// await returns the first line out that holds sub, skipping the others.
func (s *stdioServe) await(what, sub string) string {
	s.t.Helper()
	for {
		select {
		case l, ok := <-s.line:
			if !ok {
				s.t.Fatalf("nexus serve ended before %s", what)
			}
			if strings.Contains(l, sub) {
				return l
			}
		case <-time.After(60 * time.Second):
			s.t.Fatalf("no %s in 60 s", what)
		}
	}
}

// SIGKILL of nexus serve leaves nothing behind: not the upstream (the
// parent-death signal) and not what the upstream spawned (the watchdog of
// internal/proc kills its group). The upstream's shell starts a
// sleep beside the test server; both carry the mark.
func TestServeSIGKILL(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("finds the upstream through /proc")
	}
	mark := fmt.Sprintf("kill-%d", time.Now().UnixNano())
	s := startStdioServe(t, "testserver", "/bin/sh", fmt.Sprintf("[\"-c\", \"sleep 300 & exec %s testserver\"]", testenv.Nexus(t)), mark)
	s.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"mcp_testserver_echo","arguments":{"message":"x"}}}`)
	if got := s.answer("2"); !strings.Contains(got, `"result"`) {
		t.Fatalf("the call: %s", got)
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(marked(t, mark)) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("want the upstream and its sleep running, have %v", marked(t, mark))
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.cmd.Process.Kill()
	s.cmd.Wait()
	noneLeft(t, mark)
}

// An upstream that crashes mid-call fails that call with an error naming
// the server and its stderr tail; the next call starts it again.
func TestServeUpstreamCrash(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("finds the upstream through /proc")
	}
	mark := fmt.Sprintf("crash-%d", time.Now().UnixNano())
	s := startStdioServe(t, "flaky", "/bin/sh", fmt.Sprintf("[\"-c\", \"echo 'flaky: warming up the cache' >&2; exec %s testserver\"]", testenv.Nexus(t)), mark)
	in, answer := s.in, s.answer
	s.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"mcp_flaky_echo","arguments":{"message":"up"}}}`)
	answer("2")
	fmt.Fprintln(in, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"mcp_flaky_slow_operation","arguments":{"duration":60,"steps":60},"_meta":{"progressToken":"crash-3"}}}`)
	// The call's first progress says the upstream is running it: the
	// kill lands mid-call, however slowly the call got there.
	s.await("progress of request 3", `"progressToken":"crash-3"`)
	pids := marked(t, mark)
	if len(pids) == 0 {
		t.Fatal("the upstream is not running")
	}
	for _, p := range pids {
		exec.Command("kill", "-9", p).Run()
	}
	got := answer("3")
	t.Logf("the crashed call: %s", got)
	for _, want := range []string{`"error"`, `flaky`, `warming up the cache`} {
		if !strings.Contains(got, want) {
			t.Errorf("the crashed call's answer lacks %q: %s", want, got)
		}
	}
	fmt.Fprintln(in, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"mcp_flaky_echo","arguments":{"message":"back"}}}`)
	if got := answer("4"); !strings.Contains(got, `"text":"back"`) {
		t.Errorf("the call after the crash: %s", got)
	}
}
