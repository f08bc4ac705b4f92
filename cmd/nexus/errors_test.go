package main

import (
	"strings"
	"testing"
)

// Errors mask the credentials of a server's URL and command, wherever the
// report quotes them (its URL and Command lines, the problem, a server's
// error): a failing server must not print the secret it was given.
func TestMaskedInErrors(t *testing.T) {
	dir := t.TempDir()
	files(t, dir, "mcp.json", `{"mcpServers": {
  "remote": {"type": "http", "url": "http://ada:pa55@127.0.0.1:9/mcp?api_key=abc123&region=eu", "http_max_retries": 0},
  "local": {"command": "nexus-no-such-command", "args": ["--token", "ghp_literal", "--db=postgres://u:pw9@db.internal/x"]},
  "oauthed": {"type": "http", "url": "https://ada:pa55@mcp.example.com/mcp", "oauth": {"client_id": "nexus"}}
}}`)
	for _, server := range []string{"remote", "local", "oauthed"} {
		t.Run(server, func(t *testing.T) {
			args := []string{"--config", "mcp.json", "tools", server}
			stdout, stderr, code := nexusIn(t, dir, "", nil, args...)
			if code == 0 {
				t.Fatalf("exit 0: %s", stdout)
			}
			for _, s := range []string{"pa55", "abc123", "ghp_literal", "pw9"} {
				if strings.Contains(stdout+stderr, s) {
					t.Errorf("%q printed:\n%s", s, stderr)
				}
			}
			golden(t, "masked_error_"+server, "$ nexus "+quoteArgs(args)+"\n--- stdout\n"+stdout+"--- stderr\n"+stderr)
		})
	}
}
