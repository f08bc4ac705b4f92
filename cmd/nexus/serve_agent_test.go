package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nexus-mcp/nexus/internal/testenv"
)

// serveStdio runs `nexus serve` with args and input as its whole stdin,
// and returns its stdout, stderr and exit code.
func serveStdio(t *testing.T, hcl, input string, args ...string) (string, string, int) {
	t.Helper()
	bin := testenv.Nexus(t)
	config := filepath.Join(t.TempDir(), "nexus.hcl")
	if err := os.WriteFile(config, []byte(strings.ReplaceAll(hcl, "NEXUS", bin)), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"serve", "--config", config}, args...)...)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir()}
	cmd.Stdin = strings.NewReader(input)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return stdout.String(), stderr.String(), code
}

const testserverHCL = "server \"testserver\" {\n  stdio {\n    command = \"NEXUS\"\n    args    = [\"testserver\"]\n  }\n}\n"

// The README's stdio line, `nexus serve --agent claude`, works with no
// agent "claude" block: one local user, the built-in default permission,
// a warning on stderr (issue 42: the client showed only "Failed to
// connect").
func TestServeUnconfiguredAgent(t *testing.T) {
	out, stderr, code := serveStdio(t, testserverHCL, filterInit+`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`+"\n", "--agent", "claude")
	if code != 0 || !strings.Contains(out, "mcp_testserver_echo") {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, stderr)
	}
	if !strings.Contains(stderr, `agent "claude" is not configured; serving it as the one local user`) {
		t.Errorf("no warning on stderr: %s", stderr)
	}
}

// A config error reaches the client that started nexus serve: its
// initialize is answered with the error's text (issue 42), and serve
// exits 2 as before.
func TestServeConfigErrorToClient(t *testing.T) {
	out, stderr, code := serveStdio(t, "server \"broken\" {\n  stdio { command = 3 }\n}\n", filterInit, "--agent", "claude")
	if code != 2 {
		t.Fatalf("exit %d, want 2\nstdout: %s\nstderr: %s", code, out, stderr)
	}
	if !strings.Contains(out, `"id":1`) || !strings.Contains(out, "nexus serve cannot start") || !strings.Contains(out, "broken") {
		t.Errorf("initialize was not answered with the config error:\n%s", out)
	}
}

// A NEXUS_STATE_KEY that is not a key stops serve before it serves,
// saying so without echoing it (exit 2).
func TestServeBadStateKey(t *testing.T) {
	bin := testenv.Nexus(t)
	config := filepath.Join(t.TempDir(), "nexus.hcl")
	if err := os.WriteFile(config, []byte(strings.ReplaceAll(testserverHCL, "NEXUS", bin)), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "serve", "--config", config)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir(), "NEXUS_STATE_KEY=secret-but-short"}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 2 || strings.Contains(stderr.String(), "secret-but-short") {
		t.Fatalf("%v\nstderr: %s", err, stderr.String())
	}
	golden(t, "serve_bad_state_key", stderr.String())
}
