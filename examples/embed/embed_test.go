package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nexus-mcp/nexus/host/mcp"
)

// TestMain: run as `nexus testserver` (see fakeNexus), the test binary is
// the MCP server the default config runs, over stdin and stdout.
func TestMain(m *testing.M) {
	if filepath.Base(os.Args[0]) == "nexus" && len(os.Args) == 2 && os.Args[1] == "testserver" {
		if err := testServer().Serve(context.Background(), mcp.StdioConn()); err != nil && !errors.Is(err, mcp.ErrClosed) {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// testServer stands in for `nexus testserver`: its tools echo and add.
func testServer() *mcp.Server {
	s := mcp.NewServer(mcp.Implementation{Name: "testserver", Version: "1.0.0"}, mcp.ServerOptions{})
	s.AddTool(mcp.Tool{
		Name:        "echo",
		Description: "Echo back a message.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"message":{"type":"string"}},"required":["message"]}`),
	}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var a struct{ Message string }
		if err := json.Unmarshal(req.Arguments, &a); err != nil {
			return nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent(a.Message)}}, nil
	})
	s.AddTool(mcp.Tool{
		Name:        "add",
		Description: "Add two numbers.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}`),
	}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var a struct{ A, B float64 }
		if err := json.Unmarshal(req.Arguments, &a); err != nil {
			return nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent(fmt.Sprint(a.A + a.B))}}, nil
	})
	return s
}

// fakeNexus is a program named nexus, a link to this test binary, which
// answers `nexus testserver` as TestMain says: its folder on PATH stands
// in for an installed nexus, without building one.
func fakeNexus(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "nexus")
	if err := os.Symlink(exe, p); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestEmbedProgram builds the example and runs it against the test
// server, found on PATH as the default config expects.
func TestEmbedProgram(t *testing.T) {
	nexus := fakeNexus(t)
	bin := filepath.Join(t.TempDir(), "embed")
	build := exec.Command("go", "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	path := filepath.Dir(nexus) + string(os.PathListSeparator) + os.Getenv("PATH")

	run := func(args ...string) (string, error) {
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), "PATH="+path)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		return out.String() + errb.String(), err
	}

	out, err := run()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{"tools for agent \"embed\"", "mcp_testserver_echo", "testserver.echo", "mcp_testserver_add", "result of mcp_testserver_echo", "hello from an embedded Nexus"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	out, err = run("-tool", "testserver.add", "-args", `{"a": 2, "b": 40}`)
	if err != nil || !strings.Contains(out, "42") {
		t.Fatalf("add: %v\n%s", err, out)
	}

	// Arguments that fail the schema never reach the server.
	out, err = run("-args", `{"message": 7}`)
	if err == nil || !strings.Contains(out, "refused before reaching the server") || !strings.Contains(out, "/message") {
		t.Fatalf("bad arguments: %v\n%s", err, out)
	}

	// A config file, and an agent it does not grant anything.
	cfg := filepath.Join(t.TempDir(), "mcp.json")
	argv, _ := json.Marshal([]string{nexus, "testserver"})
	os.WriteFile(cfg, []byte(`{"mcpServers": {"ts": {"command": `+string(argv)+`}}, "agents": {"me": {"permission": "yolo"}}}`), 0o600)
	out, err = run("-config", cfg, "-agent", "me", "-tool", "ts.echo", "-args", `{"message": "from a file"}`)
	if err != nil || !strings.Contains(out, "from a file") {
		t.Fatalf("-config: %v\n%s", err, out)
	}
	out, err = run("-config", cfg, "-agent", "stranger", "-tool", "ts.echo")
	if err == nil || !strings.Contains(out, `agent "stranger"`) || !strings.Contains(out, "permission") {
		t.Fatalf("an agent with no permission: %v\n%s", err, out)
	}
}

// TestRun runs the example in-process, so `go test -race` covers it.
func TestRun(t *testing.T) {
	nexus := fakeNexus(t)
	cfg := filepath.Join(t.TempDir(), "mcp.json")
	argv, _ := json.Marshal([]string{nexus, "testserver"})
	os.WriteFile(cfg, []byte(`{"mcpServers": {"ts": {"command": `+string(argv)+`}, "broken": {"command": "nexus-no-such-binary"}}, "agents": {"me": {"permission": "yolo"}}}`), 0o600)
	var out bytes.Buffer
	err := run(context.Background(), &out, cfg, "me", "mcp_ts_echo", json.RawMessage(`{"message":"in process"}`))
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, want := range []string{"server broken did not connect", "nexus-no-such-binary", "mcp_ts_echo", "in process"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
