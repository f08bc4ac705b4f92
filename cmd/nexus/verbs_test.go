package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nexus-mcp/nexus/internal/testenv"
)

const disabledConfig = `{"mcpServers": {
  "testserver": {"command": "nexus", "args": ["testserver"]},
  "off": {"command": "nexus", "args": ["testserver"], "disabled": true}
}}`

// TestVerbs runs the verbs of this file against the test server; the
// output is pinned by golden files like TestCLI's.
func TestVerbs(t *testing.T) {
	cases := []struct {
		name   string
		config string
		args   []string
		code   int
	}{
		{"templates", testConfig, []string{"--config", "mcp.json", "templates"}, 0},
		{"templates_json", testConfig, []string{"--config", "mcp.json", "templates", "-o", "json"}, 0},
		{"complete_prompt", testConfig, []string{"--config", "mcp.json", "--yes", "complete", "testserver.code_review", "language", "j"}, 0},
		{"complete_template_json", testConfig, []string{"--config", "mcp.json", "--yes", "complete", "testserver", "--template", "file:///users/{id}", "id", "-o", "json"}, 0},
		{"complete_none", testConfig, []string{"--config", "mcp.json", "--yes", "complete", "testserver.summarize", "max_length"}, 0},
		{"complete_unknown_prompt", testConfig, []string{"--config", "mcp.json", "--yes", "complete", "testserver.nope", "x"}, 1},
		{"complete_bad_context", testConfig, []string{"--config", "mcp.json", "complete", "testserver.greeting", "formal", "--context", "name"}, 2},
		{"sampling_denied", testConfig, []string{"--config", "mcp.json", "--yes", "call", "testserver.sample", "prompt=hi"}, 1},
		{"sampling_ask_needs_terminal", testConfig, []string{"--config", "mcp.json", "--sampling", "ask", "tools"}, 2},
		{"sampling_bad_value", testConfig, []string{"--config", "mcp.json", "--sampling", "maybe", "tools"}, 2},
		{"elicit_declined", testConfig, []string{"--config", "mcp.json", "--yes", "call", "testserver.elicit"}, 0},
		{"log_info", testConfig, []string{"--config", "mcp.json", "--yes", "--log-level", "info", "call", "testserver.echo", "message=logged\x1b[2J"}, 0},
		{"log_default_hidden", testConfig, []string{"--config", "mcp.json", "--yes", "call", "testserver.echo", "message=quiet"}, 0},
		{"err_unknown_flag", testConfig, []string{"--config", "mcp.json", "tools", "--srever", "testserver"}, 2},
		{"err_unknown_subverb", "", []string{"config", "shwo"}, 2},
		{"err_disabled_call", disabledConfig, []string{"--config", "mcp.json", "--yes", "call", "off.echo", "message=hi"}, 3},
		{"err_disabled_list", disabledConfig, []string{"--config", "mcp.json", "tools", "--server", "off"}, 3},
		{"err_prompt_bad_pair", testConfig, []string{"--config", "mcp.json", "prompt", "testserver.greeting", "Ada"}, 2},
		{"err_server_error", testConfig, []string{"--config", "mcp.json", "--yes", "read", "testserver", "file:///nope"}, 1},
		{"call_large_piped", testConfig, []string{"--config", "mcp.json", "--yes", "call", "testserver.large_output", "bytes=300"}, 0},
		{"help_root", "", []string{"--help"}, 0},
		{"help_serve", "", []string{"serve", "--help"}, 0},
		{"serve_unconfigured_agent", testConfig, []string{"--config", "mcp.json", "serve", "--agent", "nobody"}, 0},
		{"err_serve_no_way_in", testConfig, []string{"--config", "mcp.json", "serve", "--listen", "127.0.0.1:0"}, 2},
		{"err_serve_half_tls", testConfig, []string{"--config", "mcp.json", "serve", "--listen", "127.0.0.1:0", "--tls-cert", "c.pem"}, 2},
		{"err_serve_console_no_tokens", testConfig, []string{"--config", "mcp.json", "serve", "--agent", "cli", "--listen", "127.0.0.1:0", "--console", "127.0.0.1:0"}, 2},
		{"err_serve_bad_listen", testConfig, []string{"--config", "mcp.json", "serve", "--agent", "cli", "--listen", "127.0.0.1:99999"}, 3},
		{"help_call", "", []string{"call", "--help"}, 0},
		{"help_complete", "", []string{"complete", "--help"}, 0},
		{"help_shell", "", []string{"shell", "--help"}, 0},
		{"help_trust", "", []string{"trust", "--help"}, 0},
		{"help_templates", "", []string{"templates", "--help"}, 0},
		{"shell_completion_call", testConfig, []string{"--config", "mcp.json", "__complete", "call", "te"}, 0},
		{"shell_completion_server_flag", disabledConfig, []string{"--config", "mcp.json", "__complete", "tools", "--server", ""}, 0},
		{"shell_completion_output", "", []string{"__complete", "tools", "--output", ""}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			stdout, stderr, code := nexus(t, tc.config, nil, tc.args...)
			if code != tc.code {
				t.Errorf("exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.code, stdout, stderr)
			}
			golden(t, tc.name, "$ nexus "+quoteArgs(tc.args)+"\n--- stdout\n"+stdout+"--- stderr\n"+stderr)
		})
	}
}

// Without roots in the config, the working directory is the root.
func TestRootsDefaultToWorkingDirectory(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "mcp.json"), []byte(testConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := nexusIn(t, dir, "", nil, "--config", "mcp.json", "--yes", "call", "testserver.roots")
	if code != 0 || stdout != "file://$DIR ("+filepath.Base(dir)+")\n" {
		t.Fatalf("code %d\nstdout: %q\nstderr: %s", code, stdout, stderr)
	}
}

// The shell completion scripts build (cobra's completion command).
func TestCompletionScripts(t *testing.T) {
	for _, sh := range []string{"bash", "zsh", "fish", "powershell"} {
		stdout, stderr, code := nexus(t, "", nil, "completion", sh)
		if code != 0 || !strings.Contains(stdout, "nexus") {
			t.Errorf("%s: code %d, %d bytes\n%s", sh, code, len(stdout), stderr)
		}
	}
}

// Progress arrives as plain lines on stderr when it is not a terminal.
func TestProgressPlain(t *testing.T) {
	stdout, stderr, code := nexus(t, testConfig, nil, "--config", "mcp.json", "--yes", "call", "testserver.slow_operation", "duration=0.6", "steps=3")
	if code != 0 || !strings.Contains(stdout, "completed 3 steps") {
		t.Fatalf("code %d\n%s\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stderr, "testserver.slow_operation: 3/3 step 3 of 3\n") || strings.Contains(stderr, "\r") {
		t.Fatalf("stderr: %q", stderr)
	}
}

// Ctrl-C during a call cancels it and exits 130 at once, with the server
// process stopped, rather than waiting for the 300 s operation. No clock
// measures "at once": the operation is far longer than the wait below, so
// a Nexus that waited for it fails the wait, and the wait is far longer
// than a loaded machine needs to stop.
func TestInterruptExits130(t *testing.T) {
	bin := testenv.Nexus(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "mcp.json"), []byte(testConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--config", "mcp.json", "call", "testserver.slow_operation", "duration=300", "steps=300", "--yes")
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + filepath.Dir(bin) + ":/usr/bin:/bin", "HOME=" + dir}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	lines := bufio.NewScanner(stderr)
	started := make(chan bool, 1)
	scanned := make(chan struct{}) // closed at stderr's end: rest is complete
	var rest strings.Builder
	go func() {
		defer close(scanned)
		seen := false
		for lines.Scan() {
			if !seen && strings.Contains(lines.Text(), "step 1 of 300") {
				seen = true
				started <- true
			}
			rest.WriteString(lines.Text() + "\n")
		}
		if !seen {
			started <- false
		}
	}()
	select {
	case ok := <-started:
		if !ok {
			t.Fatal("the call ended before its first progress notification")
		}
	case <-time.After(15 * time.Second):
		t.Fatal("no progress within 15 s")
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	// Wait may only run once stderr has been read to its end (os/exec), and
	// rest may only be read then too.
	done := make(chan error, 1)
	go func() { <-scanned; done <- cmd.Wait() }()
	select {
	case err := <-done:
		ee, ok := err.(*exec.ExitError)
		if !ok || ee.ExitCode() != exitInterrupted {
			t.Fatalf("exit: %v, want code 130\n%s", err, rest.String())
		}
		if !strings.Contains(rest.String(), "interrupted") {
			t.Errorf("stderr does not say interrupted:\n%s", rest.String())
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("still running 2 minutes after SIGINT: the call was not cancelled")
	}
}

// Right after `make build`, bin/ is not on PATH: a server whose command is
// "nexus" (the default config's test server) runs this very binary.
func TestNexusCommandWithoutPath(t *testing.T) {
	bin := testenv.Nexus(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "mcp.json"), []byte(testConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--config", "mcp.json", "--yes", "call", "testserver.echo", "message=found")
	cmd.Dir = dir
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + dir} // no nexus here
	out, err := cmd.CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "found" {
		t.Fatalf("%v: %s", err, out)
	}
}
