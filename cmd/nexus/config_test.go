package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/nexus-mcp/nexus/internal/config"
	"github.com/nexus-mcp/nexus/internal/testenv"
)

// This file stands alone: it shares the -update flag with the other CLI
// tests when they define it (package variables are initialized before init
// runs), and defines it otherwise.
func init() {
	if flag.Lookup("update") == nil {
		flag.Bool("update", false, "rewrite the golden files in testdata/")
	}
}

func updating() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

// configGolden compares got with testdata/name.golden (-update rewrites it).
func configGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if updating() {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./cmd/nexus -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from %s (go test ./cmd/nexus -update rewrites it):\n--- got\n%s\n--- want\n%s", name, path, got, want)
	}
}

// shellArgs shows arguments as a shell would need them.
func shellArgs(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " \"'{}\\$") || strconv.Quote(a) != `"`+a+`"` {
			a = strconv.Quote(a)
		}
		out[i] = a
	}
	return strings.Join(out, " ")
}

// nexusIn runs the real binary in dir/cwd with HOME=dir, so the global
// layer is dir/.nexus and paths under it print as ~/...; the temp dir
// itself prints as $DIR. The test's own workspace configs (under dir) are
// trusted first, as their author would (trust_test.go).
func nexusIn(t *testing.T, dir, cwd string, extraEnv []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	trustWorkspace(t, dir, cwd)
	return nexusUntrusted(t, dir, cwd, extraEnv, args...)
}

// nexusUntrusted is nexusIn without trusting anything.
func nexusUntrusted(t *testing.T, dir, cwd string, extraEnv []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	bin := testenv.Nexus(t)
	cmd := exec.Command(bin, args...)
	cmd.Dir = filepath.Join(dir, cwd)
	cmd.Env = append([]string{"PATH=" + filepath.Dir(bin) + ":/usr/bin:/bin", "HOME=" + dir}, extraEnv...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return strings.ReplaceAll(out.String(), dir, "$DIR"), strings.ReplaceAll(errb.String(), dir, "$DIR"), code
}

func files(t *testing.T, dir string, kv ...string) {
	t.Helper()
	for i := 0; i+1 < len(kv); i += 2 {
		p := filepath.Join(dir, filepath.FromSlash(kv[i]))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(kv[i+1]), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// layered is a home with a global mcp.json, a parent directory's .nexus and
// a project with a local nexus.hcl that overrides a global server.
var layered = []string{
	".nexus/mcp.json", `{"mcpServers": {
  "testserver": {"command": "nexus", "args": ["testserver", "--tool-count", "3"]},
  "notes": {"command": "npx", "args": ["-y", "notes-server"], "env": {"NOTES_TOKEN": "${NOTES_TOKEN}"}}
}}`,
	"work/.nexus/nexus.hcl", `agent "ci" {
  permission = "sandboxed"
  servers    = ["testserver"]
  deny       = ["*.delete_*"]
}
`,
	"work/proj/nexus.hcl", `variable "api_token" {
  sensitive = true
}

server "testserver" {
  timeout = "20s"
  stdio {
    command = "nexus"
    args    = ["testserver"]
  }
}

server "api" {
  http {
    url     = "https://api.example.com/mcp"
    headers = { Authorization = "Bearer ${var.api_token}" }
  }
}
`,
}

// literalCreds has credentials written into the file itself: a database
// URL with its password in a server's args, and a token in a query.
var literalCreds = []string{"mcp.json", `{"mcpServers": {
  "db": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-postgres", "postgresql://app:pw-in-file@localhost/app"]},
  "search": {"url": "https://search.example.com/mcp?region=eu&api_key=key-in-file"}
}}`}

// gatewayBlockConfig has a gateway block, an agent with a token from a
// sensitive variable and a server with a name prefix.
var gatewayBlockConfig = []string{"nexus.hcl", `variable "claude_token" {
  sensitive = true
}

server "testserver" {
  prefix = ""
  stdio {
    command = "nexus"
    args    = ["testserver"]
  }
}

agent "claude" {
  permission = "trusted"
  tokens     = [var.claude_token]
}

gateway {
  listen           = "127.0.0.1:8750"
  required_servers = ["testserver"]
  limits {
    max_sessions   = 100
    shutdown_grace = "5s"
  }
}
`}

// observedConfig has the blocks a config has one of besides the gateway.
var observedConfig = []string{"nexus.hcl", `server "testserver" {
  stdio {
    command = "nexus"
    args    = ["testserver"]
  }
}

lock {
  on_new = "warn"
}

audit {
  path        = "nexus-audit.jsonl"
  fail_closed = true
}

telemetry {
  endpoint = "http://127.0.0.1:4318"
}
`}

// rulesConfig has CEL rules at the top level and in an agent.
var rulesConfig = []string{"nexus.hcl", `server "testserver" {
  stdio {
    command = "nexus"
    args    = ["testserver"]
  }
}

rule "no-fail" {
  when   = "tool.name == 'fail'"
  action = "deny"
  reason = "fail is not for agents"
}

agent "ci" {
  permission = "yolo"
  rule "quiet" {
    when   = "has(args.message) && args.message.contains('loud')"
    action = "deny"
  }
}
`}

func TestConfigCLI(t *testing.T) {
	secrets := []string{"NOTES_TOKEN=notes-SECRET", "API_TOKEN=api-SECRET"}
	cases := []struct {
		name  string
		files []string
		cwd   string
		env   []string
		args  []string
		code  int
	}{
		{"config_show", layered, "work/proj", secrets, []string{"config", "show"}, 0},
		{"config_show_json", layered, "work/proj", secrets, []string{"config", "show", "-o", "json"}, 0},
		{"config_show_unset", layered, "work/proj", nil, []string{"config", "show"}, 0},
		{"config_validate", layered, "work/proj", secrets, []string{"config", "validate"}, 0},
		{"config_validate_unset", layered, "work/proj", nil, []string{"config", "validate"}, 2},
		{"config_compile_mcpservers", layered, "work/proj", secrets, []string{"config", "compile"}, 0},
		{"config_compile_vscode", layered, "work/proj", nil, []string{"config", "compile", "--format", "vscode"}, 0},
		{"config_compile_nexus_json", layered, "work/proj", nil, []string{"config", "compile", "--format", "nexus-json"}, 0},
		{"config_compile_bad_format", layered, "work/proj", nil, []string{"config", "compile", "--format", "yaml"}, 2},
		{"config_validate_errors", []string{
			"a.json", "{\n  \"mcpServers\": {\n    \"x\": {\"command\": \"a\", \"url\": \"http://h/mcp\"},\n    \"y\": {\"args\": 3}\n  }\n}\n",
			"b.hcl", "server \"z\" {\n  stdio {\n    comand = \"x\"\n  }\n}\nlocals {\n  a = local.a\n}\n",
		}, "", nil, []string{"--config", "a.json", "--config", "b.hcl", "config", "validate"}, 2},
		{"config_flags_replace_discovery", append(append([]string{}, layered...), "one.json", `{"mcpServers": {"only": {"command": "nexus", "args": ["testserver"]}}}`),
			"work/proj", nil, []string{"--config", "../../one.json", "config", "show"}, 0},
		{"config_default", nil, "", nil, []string{"config", "show"}, 0},
		{"config_warnings", []string{"mcp.json", `{"mcpServers": {"t": {"command": "nexus", "args": ["testserver"], "timeuot": 5}}}`},
			"", nil, []string{"config", "validate", "--config", "mcp.json"}, 0},
		{"config_no_verb", nil, "", nil, []string{"config"}, 2},
		{"config_show_gateway", gatewayBlockConfig, "", []string{"CLAUDE_TOKEN=claude-SECRET-0123456789"}, []string{"config", "show", "--config", "nexus.hcl"}, 0},
		{"config_validate_gateway", gatewayBlockConfig, "", []string{"CLAUDE_TOKEN=claude-SECRET-0123456789"}, []string{"config", "validate", "--config", "nexus.hcl"}, 0},
		{"config_compile_gateway", gatewayBlockConfig, "", nil, []string{"config", "compile", "--format", "nexus-json", "--config", "nexus.hcl"}, 0},
		{"config_validate_rules", rulesConfig, "", nil, []string{"config", "validate", "--config", "nexus.hcl"}, 0},
		{"config_show_rules", rulesConfig, "", nil, []string{"config", "show", "--config", "nexus.hcl"}, 0},
		{"config_validate_rule_error", []string{"nexus.hcl", "rule \"no-fail\" {\n  when   = \"tool.name == 'fail' && agent.idd == 'ci'\"\n  action = \"deny\"\n}\n"},
			"", nil, []string{"config", "validate", "--config", "nexus.hcl"}, 2},
		{"config_show_blocks", observedConfig, "", nil, []string{"config", "show", "--config", "nexus.hcl"}, 0},
		{"config_show_masked", literalCreds, "", nil, []string{"config", "show", "--config", "mcp.json"}, 0},
		{"config_show_masked_json", literalCreds, "", nil, []string{"config", "show", "-o", "json", "--config", "mcp.json"}, 0},
		{"config_show_show_secrets", literalCreds, "", nil, []string{"config", "show", "--show-secrets", "--config", "mcp.json"}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			files(t, dir, tc.files...)
			if err := os.MkdirAll(filepath.Join(dir, tc.cwd), 0o755); err != nil {
				t.Fatal(err)
			}
			stdout, stderr, code := nexusIn(t, dir, tc.cwd, tc.env, tc.args...)
			if code != tc.code {
				t.Errorf("exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.code, stdout, stderr)
			}
			shown := []string{"notes-SECRET", "api-SECRET", "claude-SECRET"}
			if !strings.Contains(tc.name, "show_secrets") {
				shown = append(shown, "pw-in-file", "key-in-file")
			}
			for _, s := range shown {
				if strings.Contains(stdout+stderr, s) {
					t.Errorf("a secret value was printed:\n%s%s", stdout, stderr)
				}
			}
			configGolden(t, tc.name, "$ nexus "+shellArgs(tc.args)+"\n--- stdout\n"+stdout+"--- stderr\n"+stderr)
		})
	}
}

// With no config anywhere, the built-in default runs the test server.
func TestNoConfigUsesDefault(t *testing.T) {
	dir := t.TempDir()
	stdout, stderr, code := nexusIn(t, dir, "", nil, "--yes", "call", "testserver.echo", "message=default config")
	if code != 0 || !strings.Contains(stdout, "default config") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
}

// A layered config runs: the local nexus.hcl's testserver wins over the
// global one (which would offer only 3 tools).
func TestLayeredConfigRuns(t *testing.T) {
	dir := t.TempDir()
	files(t, dir, layered...)
	stdout, stderr, code := nexusIn(t, dir, "work/proj", []string{"NOTES_TOKEN=x", "API_TOKEN=y"}, "tools", "--server", "testserver")
	if code != 0 || strings.Count(stdout, "testserver.") < 4 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
}

// Every config this repository ships validates without its secrets, as a
// CI job checking them would run it.
func TestShippedExamplesValidate(t *testing.T) {
	root := testenv.Root(t)
	paths, _ := filepath.Glob(filepath.Join(root, "examples", "configs", "*"))
	checked := 0
	for _, p := range paths {
		base := filepath.Base(p)
		if base == "policy.json" || base == "example.env" || !(strings.HasSuffix(base, ".json") || strings.HasSuffix(base, ".hcl")) {
			continue // a filter's settings and an env file, not configs
		}
		checked++
		t.Run(base, func(t *testing.T) {
			_, stderr, code := nexus(t, "", nil, "config", "validate", "--allow-unset", "--skip-plugins", "--config", p)
			if code != 0 {
				t.Errorf("exit %d:\n%s", code, stderr)
			}
		})
	}
	if checked < 5 {
		t.Fatalf("only %d example configs found", checked)
	}
}

// config compile --via-gateway: what TestCompileViaGateway leaves out
// (neither way in, a token that would cross the network in the clear, a
// credential in the URL, a config found by discovery, the root --agent).
func TestConfigViaGateway(t *testing.T) {
	hcl := "server \"testserver\" {\n  stdio {\n    command = \"nexus\"\n    args    = [\"testserver\"]\n  }\n}\nagent \"claude\" {\n  permission = \"yolo\"\n}\n"
	cases := []struct {
		name string
		args []string
		code int
	}{
		{"err_neither", []string{"--config", "nexus.hcl", "config", "compile", "--via-gateway"}, 2},
		{"err_url_credential", []string{"--config", "nexus.hcl", "config", "compile", "--via-gateway", "--url", "https://nexus.example.com/mcp?token=s3cret"}, 2},
		{"err_without_via", []string{"--config", "nexus.hcl", "config", "compile", "--url", "https://nexus.example.com/mcp"}, 2},
		{"http_plain", []string{"--config", "nexus.hcl", "config", "compile", "--via-gateway", "--url", "http://10.0.0.7:8750/mcp"}, 0},
		{"http_loopback", []string{"--config", "nexus.hcl", "config", "compile", "--format", "vscode", "--via-gateway", "--url", "http://127.0.0.1:8750/mcp"}, 0},
		{"discovered", []string{"config", "compile", "--via-gateway", "--agent", "claude"}, 0},
		{"root_agent", []string{"--agent", "claude", "--config", "nexus.hcl", "config", "compile", "--via-gateway"}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			files(t, dir, "nexus.hcl", hcl)
			stdout, stderr, code := nexusIn(t, dir, "", nil, tc.args...)
			if code != tc.code {
				t.Errorf("exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.code, stdout, stderr)
			}
			if strings.Contains(stdout+stderr, "s3cret") {
				t.Errorf("a credential was printed:\n%s%s", stdout, stderr)
			}
			configGolden(t, "config_via_gateway_"+tc.name, "$ nexus "+shellArgs(tc.args)+"\n--- stdout\n"+stdout+"--- stderr\n"+stderr)
		})
	}
}

// config init writes the commented starter (the default config, which then
// runs as it is), keeps an existing file, and converts a client's config.
func TestConfigInit(t *testing.T) {
	dir := t.TempDir()
	stdout, stderr, code := nexusIn(t, dir, "", nil, "config", "init")
	if code != 0 || !strings.Contains(stdout, "Wrote nexus.hcl") {
		t.Fatalf("init: exit %d\n%s%s", code, stdout, stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "nexus.hcl")); string(b) != string(config.DefaultHCL()) {
		t.Errorf("the starter is not the default config:\n%s", b)
	}
	if _, stderr, code := nexusIn(t, dir, "", nil, "config", "init"); code != 2 || !strings.Contains(stderr, "is kept") {
		t.Errorf("a second init: exit %d\n%s", code, stderr)
	}
	os.WriteFile(filepath.Join(dir, "claude.json"), []byte(`{"mcpServers": {"gh": {"command": "nexus", "args": ["testserver"], "env": {"TOKEN": "${GH_TOKEN}"}}}}`), 0o600)
	if _, stderr, code := nexusIn(t, dir, "", nil, "config", "init", "--from", "claude.json", "--out", "gh.hcl"); code != 0 {
		t.Fatalf("init --from: exit %d\n%s", code, stderr)
	}
	stdout, stderr, code = nexusIn(t, dir, "", []string{"GH_TOKEN=x"}, "config", "validate", "--config", "gh.hcl")
	if code != 0 || !strings.Contains(stdout, "1 server") {
		t.Errorf("the converted config: exit %d\n%s%s", code, stdout, stderr)
	}
}

// nexus lock pins the servers' definitions; --check passes until a server
// changes, then fails with the difference; --server accepts it; a broken
// lockfile is refused with where it is broken.
func TestLock(t *testing.T) {
	dir := t.TempDir()
	write := func(args string) {
		hcl := "server \"testserver\" {\n  stdio {\n    command = \"nexus\"\n    args    = " + args + "\n  }\n}\n"
		if err := os.WriteFile(filepath.Join(dir, "nexus.hcl"), []byte(hcl), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(`["testserver"]`)
	if stdout, stderr, code := nexusIn(t, dir, "", nil, "lock"); code != 0 || !strings.Contains(stdout, "Wrote $DIR/nexus.lock.hcl: 1 server") {
		t.Fatalf("lock: exit %d\n%s%s", code, stdout, stderr)
	}
	if stdout, _, code := nexusIn(t, dir, "", nil, "lock", "--check"); code != 0 || !strings.Contains(stdout, "offer what") {
		t.Fatalf("check after lock: exit %d\n%s", code, stdout)
	}
	write(`["testserver", "--tool-count", "12"]`) // the server now offers more tools
	stdout, _, code := nexusIn(t, dir, "", nil, "lock", "--check")
	if code != 1 || !strings.Contains(stdout, "tool testserver.") || !strings.Contains(stdout, ": added") {
		t.Fatalf("check after a change: exit %d\n%s", code, stdout)
	}
	stdout, _, _ = nexusIn(t, dir, "", nil, "-o", "json", "lock", "--check")
	var report struct {
		Changes []struct{ Server, Kind, What string }
	}
	if err := json.Unmarshal([]byte(stdout), &report); err != nil || len(report.Changes) == 0 || report.Changes[0].What != "added" {
		t.Errorf("check -o json: %v\n%s", err, stdout)
	}
	// Enforced meanwhile: the new tools are withheld from listings and calls.
	if stdout, _, _ := nexusIn(t, dir, "", nil, "tools"); strings.Contains(stdout, "tool_001") || !strings.Contains(stdout, "testserver.echo") {
		t.Errorf("tools with unpinned ones:\n%s", stdout)
	}
	if _, stderr, code := nexusIn(t, dir, "", nil, "--yes", "call", "testserver.tool_001"); code != 4 || !strings.Contains(stderr, "new since the lockfile was written") || !strings.Contains(stderr, "nexus lock --server testserver") {
		t.Errorf("a call of an unpinned tool: exit %d\n%s", code, stderr)
	}
	if _, stderr, code := nexusIn(t, dir, "", nil, "lock", "--server", "testserver"); code != 0 {
		t.Fatalf("lock --server: exit %d\n%s", code, stderr)
	}
	if stdout, _, _ := nexusIn(t, dir, "", nil, "tools"); !strings.Contains(stdout, "tool_001") {
		t.Errorf("tools after accepting:\n%s", stdout)
	}
	if _, _, code := nexusIn(t, dir, "", nil, "lock", "--check"); code != 0 {
		t.Errorf("check after accepting: exit %d", code)
	}
	// The server's definitions change between runs: a description and a
	// schema. --check shows both; the changed tool is withheld until
	// accepted.
	write(`["testserver", "--tool-count", "12", "--variant", "changed"]`)
	stdout, _, code = nexusIn(t, dir, "", nil, "lock", "--check")
	for _, want := range []string{"tool testserver.echo: changed", `description now: "Echo back a message. Also sends a log notification (level info, logger \"echo\"). Messages are trimmed."`,
		`inputSchema.properties.trim: added {"description":"Trim spaces first.","type":"boolean"}`} {
		if code != 1 || !strings.Contains(stdout, want) {
			t.Errorf("check after a change of definition: exit %d, want %q in\n%s", code, want, stdout)
		}
	}
	if _, stderr, code := nexusIn(t, dir, "", nil, "--yes", "call", "testserver.echo", "message=hi"); code != 4 || !strings.Contains(stderr, "its description changed") {
		t.Errorf("a call of a changed tool: exit %d\n%s", code, stderr)
	}
	if _, stderr, code := nexusIn(t, dir, "", nil, "lock", "--server", "testserver"); code != 0 {
		t.Fatalf("lock --server: exit %d\n%s", code, stderr)
	}
	if _, stderr, code := nexusIn(t, dir, "", nil, "--yes", "call", "testserver.echo", "message=hi"); code != 0 {
		t.Errorf("a call of the accepted tool: exit %d\n%s", code, stderr)
	}
	// A pinned server no longer configured is said; a full nexus lock drops it.
	lockfile := filepath.Join(dir, "nexus.lock.hcl")
	b, _ := os.ReadFile(lockfile)
	os.WriteFile(lockfile, append(b, []byte("\nserver \"gone\" {\n}\n")...), 0o600)
	if _, stderr, _ := nexusIn(t, dir, "", nil, "tools"); !strings.Contains(stderr, `pins server "gone", which is not configured`) {
		t.Errorf("a pinned server no longer configured:\n%s", stderr)
	}
	nexusIn(t, dir, "", nil, "lock")
	if b, _ := os.ReadFile(lockfile); strings.Contains(string(b), `"gone"`) {
		t.Errorf("nexus lock kept an unconfigured server:\n%s", b)
	}
	// A description edited by hand no longer hashes to its sha256: refused,
	// at that sha256, as a reviewer would read what is not pinned.
	b, _ = os.ReadFile(lockfile)
	edited := strings.Replace(string(b), `description = "Echo`, `description = "Safely echo`, 1)
	if edited == string(b) {
		t.Fatalf("no echo description in\n%s", b)
	}
	os.WriteFile(lockfile, []byte(edited), 0o600)
	if _, stderr, code := nexusIn(t, dir, "", nil, "tools"); code != 2 || !strings.Contains(stderr, "Edited by hand") || !strings.Contains(stderr, `tool "echo"`) {
		t.Errorf("tools on a hand-edited lockfile: exit %d\n%s", code, stderr)
	}
	os.WriteFile(filepath.Join(dir, "nexus.lock.hcl"), []byte("server \"testserver\" {\n  tool \"add\" {\n    sha256 = \"nope\"\n    rest   = {}\n  }\n}\n"), 0o600)
	if _, stderr, code := nexusIn(t, dir, "", nil, "lock", "--check"); code != 2 || !strings.Contains(stderr, "nexus.lock.hcl:3:14") {
		t.Errorf("a broken lockfile: exit %d\n%s", code, stderr)
	}
	// A host does not run unpinned on a broken lockfile; nexus lock writes it anew.
	if _, stderr, code := nexusIn(t, dir, "", nil, "tools"); code != 2 || !strings.Contains(stderr, "nexus.lock.hcl:3:14") {
		t.Errorf("tools on a broken lockfile: exit %d\n%s", code, stderr)
	}
	if _, stderr, code := nexusIn(t, dir, "", nil, "lock"); code != 0 || !strings.Contains(stderr, "written anew") {
		t.Errorf("lock over a broken lockfile: exit %d\n%s", code, stderr)
	}
}

// config compile --via-gateway: the client config whose only server is
// Nexus, for each way in, and its errors.
func TestCompileViaGateway(t *testing.T) {
	dir := t.TempDir()
	files(t, dir, "nexus.hcl", "server \"testserver\" {\n  stdio {\n    command = \"nexus\"\n    args = [\"testserver\"]\n  }\n}\nagent \"claude\" {\n  permission = \"yolo\"\n}\n")
	for _, c := range []struct {
		name string
		args []string
		code int
	}{
		{"stdio_mcpservers", []string{"--config", "nexus.hcl", "config", "compile", "--via-gateway", "--agent", "claude"}, 0},
		{"stdio_vscode", []string{"--config", "nexus.hcl", "config", "compile", "--format", "vscode", "--via-gateway", "--agent", "claude"}, 0},
		{"http_mcpservers", []string{"--config", "nexus.hcl", "config", "compile", "--via-gateway", "--url", "https://nexus.example.com/mcp"}, 0},
		{"http_vscode", []string{"--config", "nexus.hcl", "config", "compile", "--format", "vscode", "--via-gateway", "--url", "https://nexus.example.com/mcp"}, 0},
		{"err_both", []string{"--config", "nexus.hcl", "config", "compile", "--via-gateway", "--agent", "claude", "--url", "https://x/mcp"}, 2},
		{"err_unknown_agent", []string{"--config", "nexus.hcl", "config", "compile", "--via-gateway", "--agent", "cladue"}, 2},
		{"err_bad_url", []string{"--config", "nexus.hcl", "config", "compile", "--via-gateway", "--url", "nexus.example.com"}, 2},
		{"err_nexus_json", []string{"--config", "nexus.hcl", "config", "compile", "--format", "nexus-json", "--via-gateway", "--agent", "claude"}, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			stdout, stderr, code := nexusIn(t, dir, "", nil, c.args...)
			if code != c.code {
				t.Errorf("exit %d, want %d\n%s%s", code, c.code, stdout, stderr)
			}
			golden(t, "via_gateway_"+c.name, "$ nexus "+quoteArgs(c.args)+"\n--- stdout\n"+stdout+"--- stderr\n"+stderr)
		})
	}
}

// Credentials written into a config file are masked by config show and
// config compile, with a warning to move them to variables; --show-secrets
// prints them (issue 20, item 8).
func TestMaskedCredentials(t *testing.T) {
	dir := t.TempDir()
	files(t, dir, "mcp.json", `{"mcpServers": {
  "remote": {"type": "http", "url": "https://user:pa55@mcp.example.com/mcp?api_key=abc123&region=eu", "headers": {"Authorization": "Bearer sk-live-123", "X-Trace": "on"}},
  "local": {"command": "x", "env": {"GITHUB_TOKEN": "ghp_literal", "LOG_LEVEL": "debug"}}
}}`)
	secrets := []string{"pa55", "abc123", "sk-live-123", "ghp_literal"}
	for _, c := range []struct {
		name string
		args []string
		show bool
	}{
		{"show", []string{"--config", "mcp.json", "config", "show"}, false},
		{"compile", []string{"--config", "mcp.json", "config", "compile"}, false},
		{"compile_show_secrets", []string{"--config", "mcp.json", "config", "compile", "--show-secrets"}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			stdout, stderr, code := nexusIn(t, dir, "", nil, c.args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			for _, s := range secrets {
				if strings.Contains(stdout+stderr, s) != c.show {
					t.Errorf("%q printed: %v, want %v", s, !c.show, c.show)
				}
			}
			golden(t, "masked_"+c.name, "$ nexus "+quoteArgs(c.args)+"\n--- stdout\n"+stdout+"--- stderr\n"+stderr)
		})
	}
}
