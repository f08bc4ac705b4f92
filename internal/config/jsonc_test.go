package config

import (
	"strings"
	"testing"
)

// A file a strict-JSON client reads, with a comment or a trailing comma,
// loads with a warning naming the client and the line; VS Code's files do
// not warn (issue 20, item 9).
func TestStrictJSONClients(t *testing.T) {
	const jsonc = "{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\"} // the test server\n  }\n}\n"
	const trailing = "{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\"},\n  }\n}\n"
	for _, c := range []struct{ name, file, content, want string }{
		{"claude desktop", "claude_desktop_config.json", jsonc, "1 comment (the first here), which Claude Desktop rejects"},
		{"claude code", ".mcp.json", trailing, "1 trailing comma (the first here), which Claude Code rejects"},
		{"cursor", ".cursor/mcp.json", jsonc, "which Cursor rejects"},
		{"other", "servers.json", jsonc, "which Claude Desktop and Claude Code reject"},
		{"vscode", ".vscode/mcp.json", "{\n  \"servers\": {\n    \"a\": {\"command\": \"x\"}, // ok here\n  }\n}\n", ""},
		{"strict", "claude_desktop_config.json", "{\"mcpServers\": {\"a\": {\"command\": \"x\"}}}", ""},
		{"nexus layer", ".nexus/mcp.json", jsonc, ""},
		{"nexus-json", "nexus.json", trailing, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := mustLoad(t, c.file, c.content, nil)
			var got []string
			for _, w := range cfg.Warnings {
				got = append(got, w.String())
			}
			text := strings.Join(got, "\n")
			if c.want == "" && text != "" {
				t.Errorf("warned: %s", text)
			}
			if c.want != "" && (!strings.Contains(text, c.want) || !strings.Contains(text, "line 3")) {
				t.Errorf("warnings %q, want %q at line 3", text, c.want)
			}
		})
	}
}

// The warning's text, pinned: the client, the line, and that Nexus itself
// accepts the file.
func TestStrictJSONWarningText(t *testing.T) {
	cfg := mustLoad(t, "claude_desktop_config.json", "{\n  \"mcpServers\": {\n    /* the test\n       server */\n    \"a\": {\"command\": \"x\"}, // ok\n  },\n}\n", nil)
	var b strings.Builder
	for _, w := range cfg.Warnings {
		b.WriteString(w.String() + "\n")
	}
	golden(t, "warnings_strict_json", b.String())
}
