package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/nexus-mcp/nexus/host"
	"github.com/nexus-mcp/nexus/internal/policy"
	"github.com/nexus-mcp/nexus/internal/testenv"
	"github.com/nexus-mcp/nexus/sdk/plugin/plugintest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	plugintest.Cleanup()
	os.Exit(code)
}

const testConfig = `{"mcpServers": {"testserver": {"command": "nexus", "args": ["testserver"]}}}`

// nexus runs the real binary in a temp dir holding mcp.json, with a fixed
// PATH so output does not depend on the machine.
func nexus(t *testing.T, config string, extraEnv []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	bin := testenv.Nexus(t)
	dir := t.TempDir()
	if config != "" {
		if err := os.WriteFile(filepath.Join(dir, "mcp.json"), []byte(config), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = append([]string{"PATH=" + filepath.Dir(bin) + ":/usr/bin:/bin", "HOME=" + dir}, extraEnv...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code = 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

var binDir = regexp.MustCompile(`/[^\s"]*/bin/testbuild/[0-9a-f]{16}`)

// pingTime is a ping's round trip, different in every run.
var pingTime = regexp.MustCompile(`ok [0-9.]+ ms`)

// golden compares got with testdata/name.golden (rewritten with -update).
func golden(t *testing.T, name, got string) {
	t.Helper()
	got = binDir.ReplaceAllString(got, "$$BIN")
	path := filepath.Join("testdata", name+".golden")
	if *update {
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

func TestCLI(t *testing.T) {
	cases := []struct {
		name   string
		config string
		args   []string
		code   int
	}{
		{"tools", testConfig, []string{"--config", "mcp.json", "tools"}, 0},
		{"tools_json_one_server", testConfig, []string{"--config", "mcp.json", "tools", "--server", "testserver", "-o", "json"}, 0},
		{"call_echo", testConfig, []string{"--config", "mcp.json", "--yes", "call", "testserver.echo", "message=hello world"}, 0},
		{"call_add", testConfig, []string{"--config", "mcp.json", "--yes", "call", "testserver.add", "a=2", "b=3.5"}, 0},
		{"call_args_json", testConfig, []string{"--config", "mcp.json", "--yes", "call", "testserver.echo", "--args-json", `{"message": "from json"}`}, 0},
		{"call_escapes_stripped", testConfig, []string{"--config", "mcp.json", "--yes", "call", "testserver.echo", "message=\x1b[31mred\x1b[0m \u202eevil\x07"}, 0},
		{"call_binary", testConfig, []string{"--config", "mcp.json", "--yes", "call", "testserver.emit_binary"}, 0},
		{"call_is_error", testConfig, []string{"--config", "mcp.json", "--yes", "call", "testserver.fail", "message=boom"}, 1},
		{"call_json", testConfig, []string{"--config", "mcp.json", "--yes", "call", "testserver.add", "a=1", "b=1", "--output", "json"}, 0},
		{"resources", testConfig, []string{"--config", "mcp.json", "resources"}, 0},
		{"read", testConfig, []string{"--config", "mcp.json", "--yes", "read", "testserver", "file:///readme.txt"}, 0},
		{"read_blob", testConfig, []string{"--config", "mcp.json", "--yes", "read", "testserver", "file:///logo.png"}, 0},
		{"prompts", testConfig, []string{"--config", "mcp.json", "prompts"}, 0},
		{"prompt", testConfig, []string{"--config", "mcp.json", "--yes", "prompt", "testserver.greeting", "name=Ada", "formal=true"}, 0},
		{"nexus_format", `{"servers": [{"name": "ts", "command": ["nexus", "testserver"]}]}`, []string{"--config", "mcp.json", "--yes", "call", "ts.echo", "message=array format"}, 0},
		{"env_config", testConfig, []string{"tools", "--server", "nope"}, 2},
		// No config anywhere: the built-in default (nexus.hcl) runs the test server.
		{"err_no_config", "", []string{"tools"}, 0},
		// The default's test server has confirm = "tool_calls": reads and pings
		// ask nobody, a tool call still needs --yes where nobody can be asked.
		{"default_read_unasked", "", []string{"read", "testserver", "file:///readme.txt"}, 0},
		{"default_ping_unasked", "", []string{"ping"}, 0},
		{"default_call_asks", "", []string{"call", "testserver.echo", "message=hi"}, 4},
		{"err_config_missing", "", []string{"--config", "missing.json", "tools"}, 2},
		{"err_config_syntax", "{\n  \"mcpServers\": {\n    \"a\": { \"command\": \"x\" \"args\": [] }\n  }\n}\n", []string{"--config", "mcp.json", "tools"}, 2},
		{"err_config_no_transport", `{"mcpServers": {"a": {"args": ["x"]}}}`, []string{"--config", "mcp.json", "tools"}, 2},
		{"err_command_not_found", `{"mcpServers": {"gone": {"command": "nexus-missing-server"}}}`, []string{"--config", "mcp.json", "tools"}, 3},
		{"err_bad_pair", testConfig, []string{"--config", "mcp.json", "call", "testserver.echo", "message"}, 2},
		{"err_bad_target", testConfig, []string{"--config", "mcp.json", "call", "echo"}, 2},
		{"err_unknown_verb", "", []string{"toolz"}, 2},
		{"err_unknown_tool", testConfig, []string{"--config", "mcp.json", "--yes", "call", "testserver.nope"}, 2},
		{"denied_without_yes", testConfig, []string{"--config", "mcp.json", "call", "testserver.echo", "message=hi"}, 4},
		{"denied_unknown_agent", `{"mcpServers": {"testserver": {"command": "nexus", "args": ["testserver"]}}}`, []string{"--config", "mcp.json", "--agent", "robot", "call", "testserver.echo", "message=hi"}, 4},
		{"call_exposed_name", testConfig, []string{"--config", "mcp.json", "--yes", "call", "mcp_testserver_add", "a=1", "b=2"}, 0},
		// The schema says message is a string: 123 stays a string; message:=123 forces JSON.
		{"call_typed_args", testConfig, []string{"--config", "mcp.json", "--yes", "call", "testserver.echo", "message=123"}, 0},
		{"err_forced_json", testConfig, []string{"--config", "mcp.json", "--yes", "call", "testserver.echo", "message:=123"}, 2},
		// With -o json a failure is a JSON object too (on stderr, with the exit code).
		{"err_json_schema", testConfig, []string{"--config", "mcp.json", "--yes", "-o", "json", "call", "testserver.add", "a=one", "b=2"}, 2},
		{"err_json_config", `{"mcpServers": {"a": {"args": ["x"]}}}`, []string{"--config", "mcp.json", "-o", "json", "tools"}, 2},
		{"err_schema", testConfig, []string{"--config", "mcp.json", "--yes", "call", "testserver.add", "a=one", "b=2"}, 2},
		{"servers", testConfig, []string{"--config", "mcp.json", "servers"}, 0},
		{"servers_masked", `{"mcpServers": {"gh": {"command": "docker", "args": ["run", "-e", "GITHUB_TOKEN=ghp_secret1", "img", "--token", "secret2"]},
  "db": {"url": "https://u:secret3@db.example/mcp?api_key=secret4"}}}`, []string{"--config", "mcp.json", "servers"}, 0},
		{"tools_positional", testConfig, []string{"--config", "mcp.json", "tools", "testserver"}, 0},
		{"err_server_twice", testConfig, []string{"--config", "mcp.json", "prompts", "testserver", "--server", "other"}, 2},
		{"servers_connect", testConfig + "\n", []string{"--config", "mcp.json", "servers", "--connect", "-o", "json"}, 0},
		{"err_unknown_server", testConfig, []string{"--config", "mcp.json", "--yes", "call", "other.echo"}, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := tc.args
			var env []string
			if tc.name == "env_config" {
				// NEXUS_CONFIG names the file when --config does not.
				env = []string{"NEXUS_CONFIG=mcp.json"}
			}
			stdout, stderr, code := nexus(t, tc.config, env, args...)
			if code != tc.code {
				t.Errorf("exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.code, stdout, stderr)
			}
			stdout = pingTime.ReplaceAllString(stdout, "ok $$MS ms")
			golden(t, tc.name, "$ nexus "+quoteArgs(args)+"\n--- stdout\n"+stdout+"--- stderr\n"+stderr)
		})
	}
}

// quoteArgs shows arguments as a shell would need them, escapes visible.
func quoteArgs(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		if strings.ContainsAny(a, " \"'{}\\") || strconv.Quote(a) != `"`+a+`"` {
			a = strconv.Quote(a)
		}
		out[i] = a
	}
	return strings.Join(out, " ")
}

func TestParseArgs(t *testing.T) {
	args, err := parseArgs([]string{"n=3", "s=hello", "b=true", "o={\"x\":1}", "e=", "q=\"7\"", "msg=123", "id=42", "j:=5", "u=null"}, `{"base": 1, "n": 0}`)
	if err != nil {
		t.Fatal(err)
	}
	schema := json.RawMessage(`{"type":"object","properties":{"msg":{"type":"string"},"id":{"type":["string","null"]},"j":{"type":"string"},"n":{"type":"integer"}}}`)
	got := args.resolve(schema)
	want := map[string]any{"base": float64(1), "n": float64(3), "s": "hello", "b": true, "o": map[string]any{"x": float64(1)}, "e": "", "q": "7",
		"msg": "123", "id": "42", "j": float64(5), "u": nil}
	for k, v := range want {
		if !equalJSON(got[k], v) {
			t.Errorf("%s = %#v, want %#v", k, got[k], v)
		}
	}
	// Without a schema a value that parses as JSON is JSON.
	if got := args.resolve(nil); !equalJSON(got["msg"], float64(123)) {
		t.Errorf("untyped msg = %#v", got["msg"])
	}
	if _, err := parseArgs([]string{"=x"}, ""); err == nil {
		t.Fatal("empty key accepted")
	}
	if _, err := parseArgs([]string{"n:=three"}, ""); err == nil || !strings.Contains(err.Error(), "is not JSON") {
		t.Fatalf("key:= with a value that is not JSON: %v", err)
	}
	if _, err := parseArgs(nil, "[1]"); err == nil {
		t.Fatal("non-object --args-json accepted")
	}
}

func equalJSON(a, b any) bool {
	switch av := a.(type) {
	case map[string]any:
		bv, ok := b.(map[string]any)
		if !ok || len(av) != len(bv) {
			return false
		}
		for k := range av {
			if !equalJSON(av[k], bv[k]) {
				return false
			}
		}
		return true
	default:
		return a == b
	}
}

// nexus version and --version say the release, the commit and the Go
// version, in one line.
func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}} {
		stdout, stderr, code := nexus(t, "", nil, args...)
		if code != 0 || !strings.HasPrefix(stdout, "nexus "+host.Version+" (") || !strings.Contains(stdout, runtime.Version()) || strings.Count(stdout, "\n") != 1 {
			t.Errorf("%v: exit %d\nstdout: %q\nstderr: %s", args, code, stdout, stderr)
		}
	}
}

// A server that refuses connections is retried out loud: the wait says
// what is retried, for how long and how many times (a silent wait of
// seconds looks like a hang).
func TestRetriesAreSaid(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String() + "/mcp"
	ln.Close() // nothing listens there now: connections are refused
	config := `{"mcpServers": {"down": {"type": "http", "url": "` + url + `", "http_max_retries": 2, "http_retry_backoff": "10ms", "allow_private_networks": true}}}`
	_, stderr, code := nexus(t, config, nil, "--config", "mcp.json", "tools")
	if code != 3 || strings.Count(stderr, "cannot connect; retrying") != 2 || !strings.Contains(stderr, url) ||
		!strings.Contains(stderr, `retry="1 of 2 (http_max_retries)"`) || !strings.Contains(stderr, `retry="2 of 2 (http_max_retries)"`) {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
}

// --out writes the bytes a terminal only summarizes: a resource's blob
// decoded, a tool result's images, audio and embedded blobs (FILE, FILE-2,
// ...), or one of them to stdout when it is not a terminal.
func TestOut(t *testing.T) {
	dir := t.TempDir()
	png := []byte("\x89PNG\r\n\x1a\n")
	logo := filepath.Join(dir, "logo.png")
	if _, stderr, code := nexus(t, testConfig, nil, "--config", "mcp.json", "--yes", "read", "testserver", "file:///logo.png", "--out", logo); code != 0 {
		t.Fatalf("read --out: exit %d\n%s", code, stderr)
	}
	if b, _ := os.ReadFile(logo); !bytes.HasPrefix(b, png) {
		t.Errorf("read --out wrote %q", b)
	}
	stdout, stderr, code := nexus(t, testConfig, nil, "--config", "mcp.json", "--yes", "read", "testserver", "file:///logo.png", "--out", "-")
	if code != 0 || !strings.HasPrefix(stdout, string(png)) {
		t.Errorf("read --out -: exit %d, stdout %q\n%s", code, stdout, stderr)
	}
	out := filepath.Join(dir, "result.bin")
	stdout, stderr, code = nexus(t, testConfig, nil, "--config", "mcp.json", "--yes", "call", "testserver.emit_binary", "--out", out)
	if code != 0 || !strings.Contains(stdout, "nexus-testserver") {
		t.Fatalf("call --out: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if b, _ := os.ReadFile(out); !bytes.HasPrefix(b, png) {
		t.Errorf("the image block: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "result-2.bin")); !bytes.HasPrefix(b, []byte("RIFF")) {
		t.Errorf("the audio block: %q", b)
	}
	if _, stderr, code := nexus(t, testConfig, nil, "--config", "mcp.json", "--yes", "call", "testserver.emit_binary", "--out", "-"); code != 2 || !strings.Contains(stderr, "writes one") {
		t.Errorf("call --out - with two blocks: exit %d\n%s", code, stderr)
	}
}

// An "always" is remembered in the approvals file: a later run needs no
// --yes, nexus approvals lists it, revoke forgets it.
func TestApprovals(t *testing.T) {
	file := filepath.Join(t.TempDir(), "approvals.json")
	env := []string{"NEXUS_APPROVALS=" + file}
	cfg, err := host.ParseConfig([]byte(testConfig), "mcp.json")
	if err != nil {
		t.Fatal(err)
	}
	// As a person's "always" at the prompt writes it.
	store, err := policy.OpenApprovals(file, host.Fingerprints(cfg))
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Approve(host.CLIAgent, "testserver", ""); err != nil {
		t.Fatal(err)
	}
	if stdout, stderr, code := nexus(t, testConfig, env, "--config", "mcp.json", "call", "testserver.echo", "message=remembered"); code != 0 || stdout != "remembered\n" {
		t.Fatalf("call with a remembered approval: exit %d\n%s%s", code, stdout, stderr)
	}
	stdout, _, code := nexus(t, testConfig, env, "--config", "mcp.json", "approvals")
	if code != 0 || !strings.Contains(stdout, "agent cli  testserver (every use)") || strings.Contains(stdout, "stale") {
		t.Errorf("approvals: exit %d\n%s", code, stdout)
	}
	// Another server config under the same name is stale.
	other := `{"mcpServers": {"testserver": {"command": "nexus", "args": ["testserver", "--tool-count", "3"]}}}`
	if stdout, _, _ := nexus(t, other, env, "--config", "mcp.json", "approvals"); !strings.Contains(stdout, "stale") {
		t.Errorf("a changed server's approval is not shown stale:\n%s", stdout)
	}
	if _, stderr, code := nexus(t, other, env, "--config", "mcp.json", "call", "testserver.echo", "message=x"); code != 4 {
		t.Errorf("a changed server was not asked again: exit %d\n%s", code, stderr)
	}
	if stdout, stderr, code := nexus(t, testConfig, env, "approvals", "revoke", "cli", "testserver"); code != 0 || !strings.Contains(stdout, "Revoked 1") {
		t.Fatalf("revoke: exit %d\n%s%s", code, stdout, stderr)
	}
	if _, _, code := nexus(t, testConfig, env, "--config", "mcp.json", "call", "testserver.echo", "message=x"); code != 4 {
		t.Errorf("after revoke: exit %d, want 4 (nobody to ask)", code)
	}
	if _, stderr, code := nexus(t, testConfig, env, "approvals", "revoke", "cli", "testserver"); code != 2 || !strings.Contains(stderr, "no approval") {
		t.Errorf("revoking what is not there: exit %d\n%s", code, stderr)
	}
}

// While the shell waits for a command, a server's log line goes above its
// prompt, which is drawn again; otherwise above the progress bar.
func TestLogAbovePrompt(t *testing.T) {
	var out bytes.Buffer
	c := &console{out: &out, outTTY: true}
	c.setPrompt("nexus> ")
	c.printLine("[s] info: hello")
	if got := out.String(); got != "\r\x1b[2K[s] info: hello\nnexus> " {
		t.Errorf("at the prompt: %q", got)
	}
	out.Reset()
	c.setPrompt("")
	c.printLine("[s] info: again")
	if got := out.String(); got != "[s] info: again\n" {
		t.Errorf("without a prompt: %q", got)
	}
}

func TestWrapWords(t *testing.T) {
	got := wrapWords("Echo back a message. Also sends a log notification (level info, logger \"echo\").", 24)
	want := []string{"Echo back a message.", "Also sends a log", "notification (level", "info, logger \"echo\")."}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("got %q", got)
	}
	if got := wrapWords("averyveryverylongwordthatdoesnotfit x", 10); len(got) != 2 || got[0] != "averyveryverylongwordthatdoesnotfit" {
		t.Errorf("long word: %q", got)
	}
}

// A sampling block answers a server's sampling request with the model at
// its endpoint (a fake one on loopback here): unattended with confirm =
// false; refused without a terminal when a person must confirm.
func TestSamplingModel(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Model    string                     `json:"model"`
			Messages []struct{ Content string } `json:"messages"`
		}
		json.NewDecoder(r.Body).Decode(&body)
		json.NewEncoder(w).Encode(map[string]any{"model": body.Model, "choices": []any{map[string]any{
			"message": map[string]any{"role": "assistant", "content": "the model says: " + body.Messages[len(body.Messages)-1].Content}, "finish_reason": "stop"}}})
	}))
	defer srv.Close()
	config := func(confirm bool) string {
		return fmt.Sprintf(`{"mcpServers": {"testserver": {"command": "nexus", "args": ["testserver"]}},
 "sampling": {"url": %q, "model": "fake-llm", "servers": ["testserver"], "confirm": %v}}`, srv.URL+"/v1", confirm)
	}
	stdout, stderr, code := nexus(t, config(false), nil, "--config", "mcp.json", "--yes", "call", "testserver.sample", "prompt=hello there")
	if code != 0 || !strings.Contains(stdout, "the model says: hello there") {
		t.Errorf("unattended: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	stdout, stderr, code = nexus(t, config(true), nil, "--config", "mcp.json", "--yes", "call", "testserver.sample", "prompt=hi")
	if code != 1 || !strings.Contains(stdout+stderr, "confirm = false") {
		t.Errorf("confirm without a terminal: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
}
