//go:build !windows

package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/nexus-mcp/nexus/internal/policy"
	"github.com/nexus-mcp/nexus/internal/testenv"
)

// ptyTerm is the real binary on a pseudo-terminal: what a person sees and
// types, with stdin, stdout and stderr all the terminal.
type ptyTerm struct {
	t    *testing.T
	cmd  *exec.Cmd
	ptmx *os.File
	dir  string

	mu   sync.Mutex
	out  bytes.Buffer
	seen int // expect consumed out up to here
	done chan error
}

func startTerm(t *testing.T, config string, args ...string) *ptyTerm {
	t.Helper()
	return startTermIn(t, t.TempDir(), config, args...)
}

// startTermIn is startTerm in dir, which may hold files already.
func startTermIn(t *testing.T, dir, config string, args ...string) *ptyTerm {
	t.Helper()
	bin := testenv.Nexus(t)
	if err := os.WriteFile(filepath.Join(dir, "mcp.json"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + filepath.Dir(bin) + ":/usr/bin:/bin", "HOME=" + dir, "TERM=xterm"}
	ptmx, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 50, Cols: 200})
	if err != nil {
		t.Fatal(err)
	}
	tm := &ptyTerm{t: t, cmd: cmd, ptmx: ptmx, dir: dir, done: make(chan error, 1)}
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := ptmx.Read(buf)
			tm.mu.Lock()
			tm.out.Write(buf[:n])
			tm.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	go func() { tm.done <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		ptmx.Close()
	})
	return tm
}

// expect waits until s appears in the output after what earlier expects
// consumed, and consumes up to its end.
func (tm *ptyTerm) expect(s string) {
	tm.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		tm.mu.Lock()
		text := tm.out.String()
		i := strings.Index(text[tm.seen:], s)
		if i >= 0 {
			tm.seen += i + len(s)
		}
		tm.mu.Unlock()
		if i >= 0 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	tm.t.Fatalf("did not see %q; the terminal shows:\n%s", s, tm.screen())
}

// screen is everything shown, with escape sequences made visible.
func (tm *ptyTerm) screen() string {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	return strings.ReplaceAll(tm.out.String(), "\x1b", "<ESC>")
}

func (tm *ptyTerm) send(s string) {
	tm.t.Helper()
	if _, err := io.WriteString(tm.ptmx, s); err != nil {
		tm.t.Fatal(err)
	}
}

// exit waits for the program to end and returns its exit code.
func (tm *ptyTerm) exit() int {
	tm.t.Helper()
	select {
	case err := <-tm.done:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		if err != nil {
			tm.t.Fatal(err)
		}
		return 0
	case <-time.After(20 * time.Second):
		tm.t.Fatalf("still running; the terminal shows:\n%s", tm.screen())
	}
	return -1
}

func TestTerminalElicitation(t *testing.T) {
	tm := startTerm(t, testConfig, "--config", "mcp.json", "--yes", "call", "testserver.elicit")
	tm.expect(`Server "testserver" asks for input:`)
	tm.expect("Please enter your name.")
	tm.expect("Name* — Your name.")
	tm.send("\r") // required: asked again
	tm.expect("Name is required.")
	tm.send("Ada Lovelace\r")
	tm.expect("Confirm — Confirm that the test may continue. (y/n)")
	tm.expect("[n] > ")
	tm.send("y\r")
	tm.expect("action: accept")
	tm.expect(`content: {"confirm":true,"name":"Ada Lovelace"}`)
	if code := tm.exit(); code != 0 {
		t.Fatalf("exit %d\n%s", code, tm.screen())
	}
}

func TestTerminalClosedMidPrompt(t *testing.T) {
	tm := startTerm(t, testConfig, "--config", "mcp.json", "--yes", "call", "testserver.elicit")
	tm.expect("Name* — Your name.")
	tm.send("\x04") // Ctrl-D: end of input, as when the terminal goes away
	tm.expect("action: cancel")
	if code := tm.exit(); code != 0 {
		t.Fatalf("exit %d\n%s", code, tm.screen())
	}
}

func TestTerminalSampling(t *testing.T) {
	tm := startTerm(t, testConfig, "--config", "mcp.json", "--yes", "call", "testserver.sample", "prompt=What is 2+2?", "max_tokens=50")
	tm.expect(`Server "testserver" asks for a model reply`)
	tm.expect("max tokens: 50")
	tm.expect("What is 2+2?")
	tm.expect("reply> ")
	tm.send("Four.\r")
	tm.expect("...> ")
	tm.send("\r")
	tm.expect("Reply sent")
	tm.expect("Four.")
	if code := tm.exit(); code != 0 {
		t.Fatalf("exit %d\n%s", code, tm.screen())
	}
}

func TestTerminalConfirmation(t *testing.T) {
	tm := startTerm(t, testConfig, "--config", "mcp.json", "call", "testserver.echo", "message=confirmed")
	tm.expect(`Agent "cli" wants to use server "testserver" (tool testserver.echo).`)
	tm.expect("Allow? [y]es, [n]o, [a]lways for this server, [t]his tool always: ")
	tm.send("y\r")
	tm.expect("confirmed")
	if code := tm.exit(); code != 0 {
		t.Fatalf("exit %d\n%s", code, tm.screen())
	}
}

// "This tool always" is remembered in ~/.nexus/approvals.json for that
// tool alone; "yes" is not remembered at all.
func TestTerminalAlwaysRemembered(t *testing.T) {
	tm := startTerm(t, testConfig, "--config", "mcp.json", "call", "testserver.echo", "message=once")
	tm.expect("[t]his tool always: ")
	tm.send("t\r")
	tm.expect("once")
	if code := tm.exit(); code != 0 {
		t.Fatalf("exit %d\n%s", code, tm.screen())
	}
	list, err := policy.ReadApprovals(filepath.Join(tm.dir, ".nexus", "approvals.json"))
	if err != nil || len(list) != 1 || list[0].Agent != "cli" || list[0].Server != "testserver" || list[0].Tool != "echo" {
		t.Fatalf("remembered %+v, %v", list, err)
	}
}

func TestTerminalProgressBarAndInterrupt(t *testing.T) {
	tm := startTerm(t, testConfig, "--config", "mcp.json", "--yes", "call", "testserver.slow_operation", "duration=30", "steps=30")
	tm.expect("testserver.slow_operation [")
	tm.expect("step 1 of 30")
	tm.send("\x03") // Ctrl-C
	tm.expect("interrupted")
	if code := tm.exit(); code != exitInterrupted {
		t.Fatalf("exit %d\n%s", code, tm.screen())
	}
	// The bar was drawn in place: no line of plain progress text.
	if strings.Contains(tm.screen(), "slow_operation: 1/30") {
		t.Errorf("plain progress on a terminal:\n%s", tm.screen())
	}
}

func TestTerminalHugeOutputSummarised(t *testing.T) {
	tm := startTerm(t, testConfig, "--config", "mcp.json", "--yes", "call", "testserver.large_output", "bytes=1000000")
	tm.expect("not shown on the terminal; redirect stdout to a file to get all 976.6 KiB]")
	if code := tm.exit(); code != 0 {
		t.Fatalf("exit %d", code)
	}
	if n := len(tm.screen()); n > 100<<10 {
		t.Errorf("%d bytes reached the terminal", n)
	}
}

var ansi = regexp.MustCompile(`\x1b\[[0-9;?]*[A-Za-z]`)

func TestShell(t *testing.T) {
	tm := startTerm(t, testConfig, "--config", "mcp.json", "shell")
	tm.expect("shell: 1 server configured (testserver)")
	tm.expect("nexus> ")

	tm.send("/help\r")
	tm.expect("/mcp connect <name> [--allow-all] [--shared]")
	tm.expect("nexus> ")

	tm.send("/mcp\r")
	tm.expect("testserver  stdio  not connected")
	tm.expect("nexus> ")

	tm.send("/mcp connect testserver --allow-all\r")
	tm.expect("connected to testserver: nexus-testserver")
	tm.expect("its tools are approved without asking")
	tm.expect("nexus> ")

	tm.send("/mcp\r")
	tm.expect("testserver  stdio  connected: nexus-testserver")
	tm.expect("nexus> ")

	// Tab completes the server, then (after listing) the tool.
	tm.send("/call tests\t")
	tm.expect("testserver.")
	tm.send("ech\t")
	tm.expect("testserver.echo ")
	tm.send("message='hello shell'\r")
	tm.expect("hello shell")
	tm.expect("nexus> ")

	tm.send("/mcp tools testserver\r")
	tm.expect("testserver.slow_operation")
	tm.expect("nexus> ")

	// The echo tool logs at info: shown with /loglevel info (the default
	// --log-level warn hides it), tagged with the server.
	tm.send("/loglevel info\r")
	tm.expect("Servers' log messages from info up are shown.")
	tm.expect("nexus> ")
	tm.send("/call testserver.echo message=logged\r")
	tm.expect("[testserver] info echo")
	tm.expect("nexus> ")
	tm.send("/loglevel loud\r")
	tm.expect(`unknown log level "loud"`)
	tm.expect("nexus> ")

	tm.send("/read testserver file:///readme.txt\r")
	tm.expect("sample text resource")
	tm.expect("nexus> ")

	tm.send("/prompt testserver.greeting name=Ada\r")
	tm.expect("Ada")
	tm.expect("nexus> ")

	tm.send("/call testserver.nope\r")
	tm.expect("Unknown MCP Tool")
	tm.expect("nexus> ")

	tm.send("/mpc\r")
	tm.expect(`unknown command "/mpc"; did you mean /mcp?`)
	tm.expect("nexus> ")

	// Roots follow the working directory.
	tm.send("/cd sub\r")
	tm.expect("root is now file://" + tm.dir + "/sub")
	tm.expect("nexus> ")
	tm.send("/call testserver.roots\r")
	tm.expect("file://" + tm.dir + "/sub (sub)")
	tm.expect("nexus> ")

	// Elicitation inside the shell goes through the line editor.
	tm.send("/call testserver.elicit\r")
	tm.expect("Name* — Your name.")
	tm.send("Grace\r")
	tm.expect("[n] > ")
	tm.send("\r")
	tm.expect(`content: {"confirm":false,"name":"Grace"}`)
	tm.expect("nexus> ")

	// Ctrl-C stops the running command, not the shell.
	tm.send("/call testserver.slow_operation duration=30 steps=30\r")
	tm.expect("step 1 of 30")
	tm.send("\x03")
	tm.expect("interrupted")
	tm.expect("nexus> ")

	// The connection stayed open through all of it.
	tm.send("/mcp disconnect testserver\r")
	tm.expect("disconnected testserver")
	tm.expect("nexus> ")

	// History: Up recalls the last line.
	tm.send("\x1b[A")
	tm.expect("/mcp disconnect testserver")
	tm.send("\x15") // Ctrl-U clears the line

	tm.send("/quit\r")
	if code := tm.exit(); code != 0 {
		t.Fatalf("exit %d\n%s", code, tm.screen())
	}
	hist, err := os.ReadFile(filepath.Join(tm.dir, ".nexus", "shell_history"))
	if err != nil || !strings.Contains(string(hist), "/call testserver.roots") {
		t.Errorf("history: %q %v", hist, err)
	}
	if strings.Contains(ansi.ReplaceAllString(tm.screen(), ""), "\x1b]") {
		t.Errorf("a server's escape sequence reached the terminal")
	}
}

// With a sampling block that asks for confirmation, the request is shown at
// the terminal and goes to the model only after a yes.
func TestTerminalSamplingModel(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]any{"model": "fake-llm", "choices": []any{map[string]any{
			"message": map[string]any{"role": "assistant", "content": "modelled reply"}, "finish_reason": "stop"}}})
	}))
	defer srv.Close()
	config := `{"mcpServers": {"testserver": {"command": "nexus", "args": ["testserver"]}},
 "sampling": {"url": "` + srv.URL + `/v1", "model": "fake-llm", "servers": ["testserver"]}}`
	tm := startTerm(t, config, "--config", "mcp.json", "--yes", "call", "testserver.sample", "prompt=hi")
	tm.expect(`Send it to model "fake-llm"? [y]es, [n]o: `)
	tm.send("y\r")
	tm.expect("modelled reply")
	if code := tm.exit(); code != 0 {
		t.Fatalf("exit %d\n%s", code, tm.screen())
	}
}
