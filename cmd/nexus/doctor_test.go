package main

import (
	"strings"
	"testing"
)

// nexus doctor reads a client's config files, finds the entries that run
// Nexus, and starts each as the client would: one that works, one whose
// arguments are not serve, one whose config does not load (its error, as
// the client would see it), and an entry of another server it leaves be
// (issue 42).
func TestDoctor(t *testing.T) {
	dir := t.TempDir()
	files(t, dir,
		".claude.json", `{"numStartups": 3, "mcpServers": {"nexus": {"type": "stdio", "command": "nexus", "args": ["serve", "--agent", "claude", "--config", "nexus.hcl"]}}}`,
		"nexus.hcl", "server \"testserver\" {\n  stdio {\n    command = \"nexus\"\n    args    = [\"testserver\"]\n  }\n}\n",
		".mcp.json", `{"mcpServers": {
  "other": {"command": "npx", "args": ["-y", "some-server"]},
  "tools": {"command": "nexus", "args": ["tools"]},
  "broken": {"command": "nexus", "args": ["serve", "--config", "missing.hcl"]}
}}`)
	stdout, stderr, code := nexusIn(t, dir, "", nil, "doctor", "--client", "claude-code")
	if code != 1 {
		t.Errorf("exit %d, want 1 (two entries are broken)", code)
	}
	golden(t, "doctor_claude_code", "$ nexus doctor --client claude-code\n--- stdout\n"+stdout+"--- stderr\n"+stderr)

	stdout, _, code = nexusIn(t, dir, "", nil, "doctor", "--client", "gemini")
	if code != 1 || !strings.Contains(stdout, "0 Nexus entries") {
		t.Errorf("no gemini config: exit %d\n%s", code, stdout)
	}
}
