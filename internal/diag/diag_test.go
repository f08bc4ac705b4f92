package diag

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

// setHome fixes the home directory for one test, so renderings do not
// depend on the machine.
func setHome(t *testing.T, dir string) {
	t.Helper()
	old := homeDir
	homeDir = func() (string, error) { return dir, nil }
	t.Cleanup(func() { homeDir = old })
}

func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./internal/diag -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs (run go test ./internal/diag -update if the change is intended)\n--- got ---\n%s\n--- want ---\n%s", path, got, want)
	}
}

var (
	projectSource = Source{File: "/home/alice/app/.nexus/mcp.json", Layer: "project", Line: 3}
	globalSource  = Source{File: "/home/alice/.nexus/mcp.json", Layer: "global"}
	hclSource     = Source{File: "/home/alice/app/nexus.hcl", Layer: "project", Line: 7}
	notFound      = &exec.Error{Name: "npx", Err: exec.ErrNotFound}
)

func TestGolden(t *testing.T) {
	setHome(t, "/home/alice")

	badJSON := []byte("Starting weather server v1.2 on stdio...")
	var badErr error = json.Unmarshal(badJSON, new(any))

	long := []byte(`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"` +
		strings.Repeat("lorem ipsum ", 12) + `天気は晴れ"},]` + strings.Repeat(`,"pad":0`, 20) + `}}`)
	longErr := json.Unmarshal(long, new(any))

	crashCtx := Context{
		Server:  "postgres",
		Source:  projectSource,
		Command: []string{"npx", "-y", "@modelcontextprotocol/server-postgres"},
		GOOS:    "linux",
	}
	manyLines := make([]string, 14)
	for i := range manyLines {
		manyLines[i] = fmt.Sprintf("loading shard %d/14", i+1)
	}

	tests := []struct {
		name string
		r    *Report
	}{
		{"command_not_found", CommandNotFound(Context{
			Server:  "filesystem",
			Source:  projectSource,
			Command: []string{"npx", "-y", "@modelcontextprotocol/server-filesystem", "/home/alice/docs"},
			GOOS:    "linux",
		}, "npx", "/usr/local/bin:/usr/bin:/bin", notFound)},

		// A server from nexus.hcl gets its fixes in HCL.
		{"command_not_found_hcl", CommandNotFound(Context{
			Server:  "filesystem",
			Source:  hclSource,
			Command: []string{"npx", "-y", "@modelcontextprotocol/server-filesystem", "/home/alice/docs"},
			GOOS:    "linux",
		}, "npx", "/usr/local/bin:/usr/bin:/bin", notFound)},

		{"server_crashed_missing_env_hcl", ServerCrashed(Context{
			Server:  "github",
			Source:  hclSource,
			Command: []string{"npx", "-y", "@modelcontextprotocol/server-github"},
			GOOS:    "linux",
		}, 1, "", []string{
			"Error: GITHUB_PERSONAL_ACCESS_TOKEN environment variable is not set",
		}, nil)},

		{"handshake_timeout_hcl", HandshakeTimeout(Context{
			Server:  "slow-server",
			Source:  hclSource,
			Command: []string{"node", "server.js"},
			GOOS:    "linux",
		}, 30*time.Second, nil, errors.New("context deadline exceeded"))},

		{"command_not_found_windows", CommandNotFound(Context{
			Server:  "filesystem",
			Command: []string{"npx", "-y", "@modelcontextprotocol/server-filesystem"},
			GOOS:    "windows",
		}, "npx", `C:\Windows\system32;C:\Windows`, notFound)},

		{"command_not_found_path", CommandNotFound(Context{
			Server:  "local-tools",
			Source:  Source{File: "/home/alice/app/.nexus/mcp.json", Layer: "local", Line: 12, Column: 18},
			Command: []string{"./bin/tools-server", "--stdio"},
			GOOS:    "linux",
		}, "./bin/tools-server", "", &fs.PathError{Op: "fork/exec", Path: "./bin/tools-server", Err: syscall.ENOENT})},

		{"permission_denied", PermissionDenied(Context{
			Server:  "custom-server",
			Source:  globalSource,
			Command: []string{"/home/alice/scripts/my-server.py"},
			GOOS:    "linux",
		}, "/home/alice/scripts/my-server.py", &fs.PathError{Op: "fork/exec", Path: "/home/alice/scripts/my-server.py", Err: syscall.EACCES})},

		{"permission_denied_windows", PermissionDenied(Context{
			Server:  "custom-server",
			Command: []string{`C:\tools\my server.py`},
			GOOS:    "windows",
		}, `C:\tools\my server.py`, nil)},

		{"server_crashed_econnrefused", ServerCrashed(crashCtx, 1, "", []string{
			"Error: connect ECONNREFUSED 127.0.0.1:5432",
			"    at TCPConnectWrap.afterConnect [as oncomplete] (node:net:1555:16)",
			"",
		}, errors.New("read |0: file already closed"))},

		{"server_crashed_missing_env", ServerCrashed(Context{
			Server:  "github",
			Source:  globalSource,
			Command: []string{"npx", "-y", "@modelcontextprotocol/server-github"},
			GOOS:    "linux",
		}, 1, "", []string{
			"GitHub MCP Server starting",
			"Error: GITHUB_PERSONAL_ACCESS_TOKEN environment variable is not set",
		}, nil)},

		{"server_crashed_no_stderr", ServerCrashed(Context{
			Server:  "notes",
			Source:  projectSource,
			Command: []string{"python3", "-m", "notes_server"},
			GOOS:    "linux",
		}, 1, "", nil, nil)},

		{"server_crashed_killed", ServerCrashed(Context{
			Server:  "embeddings",
			Command: []string{"uvx", "embeddings-mcp", "--model", "large"},
			GOOS:    "linux",
		}, -1, "SIGKILL", manyLines, nil)},

		{"server_crashed_python_module", ServerCrashed(Context{
			Server:  "notes",
			Source:  projectSource,
			Command: []string{"python3", "-m", "notes_server"},
			GOOS:    "linux",
		}, 1, "", []string{
			"Traceback (most recent call last):",
			`  File "/home/alice/app/notes_server/__main__.py", line 1, in <module>`,
			"    from mcp.server.fastmcp import FastMCP",
			"ModuleNotFoundError: No module named 'mcp'",
		}, nil)},

		{"handshake_timeout", HandshakeTimeout(Context{
			Server:  "slow-server",
			Source:  projectSource,
			Command: []string{"node", "server.js"},
			GOOS:    "linux",
		}, 30*time.Second, nil, errors.New("context deadline exceeded"))},

		{"handshake_timeout_http", HandshakeTimeout(Context{
			Server: "remote",
			Source: globalSource,
			URL:    "https://mcp.example.com/mcp",
			GOOS:   "linux",
		}, 10*time.Second, nil, nil)},

		{"invalid_json_log_line", InvalidJSONFromServer(Context{
			Server:  "weather",
			Source:  projectSource,
			Command: []string{"node", "weather.js"},
			GOOS:    "linux",
		}, badJSON, -1, badErr)},

		{"invalid_json_excerpt", InvalidJSONFromServer(Context{
			Server:  "weather",
			Source:  projectSource,
			Command: []string{"node", "weather.js"},
			GOOS:    "linux",
		}, long, -1, longErr)},

		{"frame_too_large", FrameTooLarge(Context{
			Server:  "files",
			Source:  globalSource,
			Command: []string{"npx", "-y", "@modelcontextprotocol/server-filesystem", "/"},
			GOOS:    "linux",
		}, 10<<20, nil)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkGolden(t, tc.name, tc.r.Error()+"\n")
		})
	}
}

func TestSourceString(t *testing.T) {
	setHome(t, "/home/alice")
	tests := []struct {
		s    Source
		want string
	}{
		{Source{}, ""},
		{Source{File: "/home/alice/.nexus/mcp.json", Layer: "global", Line: 4}, "~/.nexus/mcp.json (global config), line 4"},
		{Source{File: "/home/alice/.nexus/mcp.json", Layer: "global"}, "~/.nexus/mcp.json (global config)"},
		{Source{File: "/work/app/.nexus/mcp.json", Layer: "project", Line: 4, Column: 12}, "/work/app/.nexus/mcp.json (project config), line 4, column 12"},
		{Source{File: "/work/app/nexus.hcl", Column: 7}, "/work/app/nexus.hcl"},
		{Source{File: "/home/alice", Layer: "local"}, "~ (local config)"},
		{Source{File: "/home/alicent/mcp.json", Layer: "global"}, "/home/alicent/mcp.json (global config)"},
		{Source{File: "/etc/nexus/mcp.json", Layer: "system"}, "/etc/nexus/mcp.json (system config)"},
		{Source{Layer: "flag"}, "command-line flag"},
		{Source{Layer: "embedded"}, "built-in default"},
		{Source{Line: 3}, ""},
	}
	for _, tc := range tests {
		if got := tc.s.String(); got != tc.want {
			t.Errorf("%#v.String() = %q, want %q", tc.s, got, tc.want)
		}
	}

	setHome(t, `C:\Users\alice\`)
	s := Source{File: `C:\Users\alice\.nexus\mcp.json`, Layer: "global"}
	if got, want := s.String(), `~\.nexus\mcp.json (global config)`; got != want {
		t.Errorf("windows home: got %q, want %q", got, want)
	}

	homeDir = func() (string, error) { return "", errors.New("no home") }
	s = Source{File: "/home/alice/mcp.json"}
	if got := s.String(); got != "/home/alice/mcp.json" {
		t.Errorf("without a home dir: got %q", got)
	}
}

func TestRender(t *testing.T) {
	setHome(t, "/home/alice")
	r := CommandNotFound(Context{Server: "fs", Command: []string{"npx"}, GOOS: "linux"}, "npx", "", notFound)

	tests := []struct {
		name string
		err  error
		want string
	}{
		{"nil", nil, ""},
		{"plain", errors.New("boom"), "Error: boom\n"},
		{"report", r, r.Error() + "\n"},
		{"wrapped report", fmt.Errorf("starting fs: %w", r), r.Error() + "\n"},
		{"twice wrapped", fmt.Errorf("host: %w", fmt.Errorf("starting fs: %w", r)), r.Error() + "\n"},
		{"plain with escapes", errors.New("bad \x1b]0;pwned\x07name\x1b[2J\r"), "Error: bad name\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			Render(&b, tc.err)
			if b.String() != tc.want {
				t.Errorf("got\n%q\nwant\n%q", b.String(), tc.want)
			}
		})
	}
}

// A nil *Report in a chain must not make Render panic.
func TestRenderTypedNil(t *testing.T) {
	var b bytes.Buffer
	Render(&b, fmt.Errorf("x: %w", (*Report)(nil)))
	if !strings.HasPrefix(b.String(), "Error: x: ") {
		t.Errorf("got %q", b.String())
	}
}

func TestUnwrap(t *testing.T) {
	r := CommandNotFound(Context{GOOS: "linux"}, "npx", "", notFound)
	wrapped := fmt.Errorf("connect: %w", r)
	if !errors.Is(wrapped, exec.ErrNotFound) {
		t.Error("errors.Is does not reach the cause")
	}
	var got *Report
	if !errors.As(wrapped, &got) || got != r {
		t.Error("errors.As does not find the report")
	}
	var ee *exec.Error
	if !errors.As(wrapped, &ee) || ee.Name != "npx" {
		t.Error("errors.As does not reach the cause's type")
	}
}

func TestEscapesStripped(t *testing.T) {
	setHome(t, "/home/alice")
	r := ServerCrashed(Context{
		Server:  "evil\x1b[2J",
		Source:  Source{File: "/tmp/\x1b]0;x\x07mcp.json", Layer: "project"},
		Command: []string{"node", "server.js\x1b[8m"},
		URL:     "",
		GOOS:    "linux",
	}, 1, "", []string{
		"\x1b[31mError:\x1b[0m connect ECONNREFUSED 127.0.0.1:6379\r",
		"\x1b]8;;https://evil.example/\x1b\\click me\x1b]8;;\x1b\\",
		"\x1b]0;unterminated title", // must not swallow the rest of the report
		"bidi \u202etxt.exe\u202c and C1 \u009b31m",
	}, nil)

	var b bytes.Buffer
	Render(&b, fmt.Errorf("wrapped: %w", r))
	out := b.String()

	for _, bad := range []string{"\x1b", "\r", "\u202e", "\u009b", "\x07"} {
		if strings.Contains(out, bad) {
			t.Errorf("rendering contains %q:\n%s", bad, out)
		}
	}
	for _, want := range []string{
		`Server: "evil\u001b[2J"`,
		`Command: ["node", "server.js\u001b[8m"]`,
		"  Error: connect ECONNREFUSED 127.0.0.1:6379\n",
		"  click me\n",
		"  0;unterminated title\n",
		"Likely cause: Redis is not running",
		"Check if Redis is running: redis-cli -h 127.0.0.1 -p 6379 ping",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("rendering lacks %q:\n%s", want, out)
		}
	}
}

func TestLayout(t *testing.T) {
	r := &Report{
		Title:   "Tïtle",
		Problem: "first\nsecond",
		Details: []Section{{Heading: "Evidence", Lines: []string{"a", "b\nc"}}},
		Causes:  []string{"only one\nand more"},
		Fix:     []string{"do this:\n{\n  \"k\": 1\n}", "then that"},
	}
	want := "Tïtle\n" +
		"━━━━━\n" +
		"\n" +
		"Problem: first\n" +
		"  second\n" +
		"\n" +
		"Evidence:\n" +
		"  a\n" +
		"  b\n" +
		"  c\n" +
		"\n" +
		"Likely cause: only one\n" +
		"and more\n" +
		"\n" +
		"Troubleshooting:\n" +
		"  • do this:\n" +
		"    {\n" +
		"      \"k\": 1\n" +
		"    }\n" +
		"  • then that"
	if got := r.Error(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}

	r = &Report{Causes: []string{"a", "b"}, CausesHeading: "Possible causes", FixHeading: "Fix", Fix: []string{"x"}}
	want = "Error\n━━━━━\n\nPossible causes:\n  1. a\n  2. b\n\nFix:\n  • x"
	if got := r.Error(); got != want {
		t.Errorf("got\n%q\nwant\n%q", got, want)
	}
}

func TestCrashPatterns(t *testing.T) {
	tests := []struct {
		line, cause string
	}{
		{"Error: connect ECONNREFUSED 10.0.0.5:8080", "A service the server connects to is not running (connection refused by 10.0.0.5:8080)"},
		{"12:34:56 ERROR connect ECONNREFUSED [::1]:5432", "PostgreSQL is not running or not reachable (connection refused by [::1]:5432)"},
		{`connection to server at "localhost" (127.0.0.1), port 5432 failed: Connection refused`, "PostgreSQL is not running or not reachable (connection refused by port 5432)"},
		{"Error: listen EADDRINUSE: address already in use :::3000", "already in use, perhaps by another copy of the server (:::3000)"},
		{"OSError: [Errno 98] Address already in use", "already in use, perhaps by another copy of the server"},
		{"Error: Cannot find module 'express'", "A Node.js dependency of the server is not installed (module 'express')"},
		{"code: 'MODULE_NOT_FOUND'", "A Node.js dependency of the server is not installed"},
		{"ModuleNotFoundError: No module named 'httpx'", "A Python dependency of the server is not installed (module 'httpx')"},
		{"Error: spawn uv ENOENT", "The server runs a program that is missing: uv"},
		{"sh: 1: docker: not found", "The server runs a program that is missing: docker"},
		{"bash: git: command not found", "The server runs a program that is missing: git"},
		{"'git' is not recognized as an internal or external command,", "The server runs a program that is missing: git"},
		{"Error: ENOENT: no such file or directory, open 'config.json'", "A program or file the server needs is missing"},
		{"Error: EACCES: permission denied, open '/var/log/x.log'", "permission denied"},
		{"Error: OPENAI_API_KEY is not set", "A required environment variable or credential is missing (OPENAI_API_KEY)"},
		{"Missing Slack bot token", "A required environment variable or credential is missing"},
		{"HTTP 401 Unauthorized", "A required environment variable or credential is missing"},
		{"Please provide an API key", "A required environment variable or credential is missing"},
	}
	for _, tc := range tests {
		cause, fix := explainStderr(Context{GOOS: "linux"}, []string{"starting up", tc.line})
		if !strings.Contains(cause, tc.cause) {
			t.Errorf("%q:\n got cause %q\nwant it to contain %q", tc.line, cause, tc.cause)
		}
		if len(fix) == 0 {
			t.Errorf("%q: no fix", tc.line)
		}
	}

	if cause, _ := explainStderr(Context{}, []string{"all good", "line 4012 processed"}); cause != "" {
		t.Errorf("unremarkable stderr explained as %q", cause)
	}

	// Earlier patterns win over later ones wherever they appear.
	cause, _ := explainStderr(Context{}, []string{"warning: API key not set", "Error: connect ECONNREFUSED 127.0.0.1:6379"})
	if !strings.HasPrefix(cause, "Redis") {
		t.Errorf("priority: got %q", cause)
	}
}

func TestExcerptCaret(t *testing.T) {
	for _, tc := range []struct {
		frame  string
		offset int
	}{
		{`{"a":1,}`, 7},
		{`{"a":"世界",x}`, 16},
		{"{\"a\":\n\t\x1b[31m}", 9},
		{strings.Repeat("x", 300) + "!" + strings.Repeat("y", 300), 300},
		{`{"a":1`, 6},
	} {
		text, caret, _ := excerpt([]byte(tc.frame), tc.offset)
		// Columns before the caret must render the bytes before the offset.
		col := 0
		var under rune = -1
		for _, r := range text {
			if col == caret {
				under = r
				break
			}
			col += runeWidth(r)
		}
		if tc.offset < len(tc.frame) {
			want := []rune(tc.frame[tc.offset:])[0]
			if want < 0x20 {
				want += 0x2400
			}
			if under != want {
				t.Errorf("%q @%d: caret under %q, want %q (excerpt %q, col %d)", tc.frame, tc.offset, under, want, text, caret)
			}
		} else if caret != col {
			t.Errorf("%q @%d: caret %d, want end %d", tc.frame, tc.offset, caret, col)
		}
		if strings.ContainsAny(text, "\n\t\x1b") {
			t.Errorf("excerpt keeps controls: %q", text)
		}
	}
}
