package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/nexus-mcp/nexus/host"
	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/testserver"
	"github.com/nexus-mcp/nexus/sdk/event"
)

// TestExitCodes: each exit code is told from host's error types alone,
// as host's functions return them (the engine's types under them are
// never looked at), and a wrapper around one keeps its code.
func TestExitCodes(t *testing.T) {
	ctx := context.Background()
	// call calls ts.echo through a host of a config whose filter block
	// and links are given: the error the command would get.
	call := func(t *testing.T, filter string, links ...host.Link) error {
		t.Helper()
		cfg, err := host.ParseConfig([]byte(`
server "ts" {
  stdio {
    command = "nexus"
    args    = ["testserver"]
  }
}
`+filter), "nexus.hcl")
		if err != nil {
			t.Fatal(err)
		}
		var entries []host.Entry
		for _, l := range links {
			entries = append(entries, host.Entry{Link: l, Kind: host.KindPolicy})
		}
		h := host.New(cfg, host.Options{Confirm: host.AllowAll{}, Links: entries, Dial: func(ctx context.Context, _ *host.Server) (*mcp.Client, error) {
			client, server := mcp.Pipe()
			go testserver.New(testserver.Options{}).Serve(context.Background(), server)
			return mcp.Connect(ctx, client, mcp.ClientOptions{})
		}})
		defer h.Close()
		_, err = h.CallTool(ctx, host.CLIAgent, "ts.echo", map[string]any{"message": "hi"}, nil)
		if err == nil {
			t.Fatal("the call went through")
		}
		return err
	}
	noServer := func(t *testing.T) error {
		cfg, err := host.ParseConfig([]byte(`{"mcpServers": {}}`), "mcp.json")
		if err != nil {
			t.Fatal(err)
		}
		h := host.New(cfg, host.Options{})
		defer h.Close()
		_, err = h.ReadResource(ctx, host.CLIAgent, "gh", "file:///x")
		return err
	}
	for _, c := range []struct {
		name string
		err  func(t *testing.T) error
		code int
	}{
		{"a command's own", func(*testing.T) error { return &exitError{exitToolError, errors.New("printed")} }, exitToolError},
		{"cobra's usage", func(*testing.T) error { return errors.New(`unknown flag: --nope`) }, exitUsage},
		{"unknown server", noServer, exitUsage},
		{"unknown server, wrapped", func(t *testing.T) error { return fmt.Errorf("listing: %w", noServer(t)) }, exitUsage},
		{"unknown tool", func(*testing.T) error { return &host.UnknownToolError{Name: "ehco", Server: "ts"} }, exitUsage},
		{"denied by a rule", func(*testing.T) error {
			return &host.DeniedError{Link: "rules", Reason: "no", Method: "tools/call", Server: "ts", Tool: "echo"}
		}, exitDenied},
		{"denied: a link failed closed", func(t *testing.T) error { return call(t, "", failing{}) }, exitDenied},
		{"a filter that does not load", func(t *testing.T) error {
			return call(t, fmt.Sprintf(`filter "gone" {
  kind = "policy"
  wasm = %q
}`, filepath.Join(t.TempDir(), "gone.wasm")))
		}, exitUsage},
		{"a plugin config refused", func(*testing.T) error {
			return &host.PluginConfigError{Plugin: "p", Kind: "transport", User: "ts", Problems: []string{"/url: missing property"}}
		}, exitUsage},
		{"arguments break the schema", func(*testing.T) error { return &host.SchemaError{Server: "ts", Tool: "echo", What: "arguments"} }, exitUsage},
		{"output breaks the schema", func(*testing.T) error {
			return &host.SchemaError{Server: "ts", Tool: "echo", What: "structured output"}
		}, exitConnection},
		{"the server said no", func(*testing.T) error { return &mcp.RPCError{Code: -32602, Message: "bad"} }, exitServerError},
		{"a server down", func(*testing.T) error { return &host.ServerError{Server: "ts", Err: errors.New("refused")} }, exitConnection},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.err(t)
			if code, _ := exitCode(err); code != c.code {
				t.Errorf("exit code %d, want %d: %T %v", code, c.code, err, err)
			}
		})
	}
}

// failing is a link that fails: the chain fails closed, a denial.
type failing struct{}

func (failing) Name() string { return "failing" }
func (failing) Handle(context.Context, *event.Event) (event.Decision, error) {
	return event.Decision{}, errors.New("the policy service is down")
}
