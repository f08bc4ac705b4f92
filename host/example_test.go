package host_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nexus-mcp/nexus/host"
	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/config"
	"github.com/nexus-mcp/nexus/internal/diag"
	"github.com/nexus-mcp/nexus/internal/policy"
	"github.com/nexus-mcp/nexus/internal/testserver"
)

// inProcess connects every server to the built-in test server in this
// process, so the examples need no binary. A real embedder leaves Dial
// nil: each server runs as its config says (a stdio command, an HTTP URL).
func inProcess(ctx context.Context, srv *config.Server) (*mcp.Client, error) {
	client, server := mcp.Pipe()
	go testserver.New(testserver.Options{}).Serve(context.Background(), server)
	return mcp.Connect(ctx, client, mcp.ClientOptions{})
}

// The life of an embedded host: load a config (any mcpServers JSON, or
// nexus.hcl), make the host, start its servers, list what an agent may
// use and call a tool through the chain, then close it, which stops every
// server it started.
func Example() {
	cfg, err := config.Parse([]byte(`{
	  "mcpServers": {"ts": {"command": "nexus", "args": ["testserver"]}},
	  "agents": {"bot": {"permission": "yolo", "allow": ["ts.echo", "ts.add"]}}
	}`), diag.Source{File: "example.json"})
	if err != nil {
		fmt.Println(err) // a diag.Report: file, line, problem, fix
		return
	}
	h := host.New(cfg, host.Options{Timeout: 10 * time.Second, Dial: inProcess})
	defer h.Close()

	ctx := context.Background()
	h.Start(ctx) // connects every enabled server at once
	tools, err := h.Tools(ctx, "bot")
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, t := range tools {
		fmt.Println(t.Name)
	}
	res, err := h.CallTool(ctx, "bot", "mcp_ts_echo", map[string]any{"message": "hello"}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Content[0].Text)
	// Output:
	// mcp_ts_add
	// mcp_ts_echo
	// hello
}

// A call the agent's rules do not allow is refused before it reaches the
// server, with the link that refused it.
func ExampleHost_CallTool_denied() {
	cfg, err := config.Parse([]byte(`{
	  "mcpServers": {"ts": {"command": "nexus", "args": ["testserver"]}},
	  "agents": {"bot": {"permission": "yolo", "allow": ["ts.echo"]}}
	}`), diag.Source{File: "example.json"})
	if err != nil {
		fmt.Println(err)
		return
	}
	h := host.New(cfg, host.Options{Dial: inProcess})
	defer h.Close()

	_, err = h.CallTool(context.Background(), "bot", "ts.add", map[string]any{"a": 1, "b": 2}, nil)
	var denied *policy.DeniedError
	fmt.Println(errors.As(err, &denied), denied.Link)
	fmt.Println(err)
	// Output:
	// true rules
	// ts.add denied by policy "rules": ts.add is not allowed for agent "bot": no pattern of its allow list ["ts.echo"] matches it (agent defined in example.json, line 3, column 15)
}
