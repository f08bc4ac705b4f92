package host_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nexus-mcp/nexus/host"
	"github.com/nexus-mcp/nexus/host/mcp"
)

// inProcess connects every server to a small MCP server in this process,
// built with host/mcp, so the examples need no binary and no package from
// outside the public API: they build as they are in another module. A
// real embedder leaves Dial nil: each server runs as its config says (a
// stdio command, an HTTP URL).
func inProcess(ctx context.Context, srv *host.Server) (*mcp.Client, error) {
	client, server := mcp.Pipe()
	go exampleServer().Serve(context.Background(), server)
	return mcp.Connect(ctx, client, mcp.ClientOptions{})
}

// exampleServer has two tools, echo and add, as `nexus testserver` does.
func exampleServer() *mcp.Server {
	s := mcp.NewServer(mcp.Implementation{Name: "example", Version: "1.0.0"}, mcp.ServerOptions{})
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
		return &mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent(strconv.FormatFloat(a.A+a.B, 'g', -1, 64))}}, nil
	})
	return s
}

// The life of an embedded host: load a config (any mcpServers JSON, or
// nexus.hcl), make the host, start its servers, list what an agent may
// use and call a tool through the chain, then close it, which stops every
// server it started.
func Example() {
	cfg, err := host.ParseConfig([]byte(`{
	  "mcpServers": {"ts": {"command": "nexus", "args": ["testserver"]}},
	  "agents": {"bot": {"permission": "yolo", "allow": ["ts.echo", "ts.add"]}}
	}`), "example.json")
	if err != nil {
		fmt.Println(err) // a *host.Report: file, line, problem, fix
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
	cfg, err := host.ParseConfig([]byte(`{
	  "mcpServers": {"ts": {"command": "nexus", "args": ["testserver"]}},
	  "agents": {"bot": {"permission": "yolo", "allow": ["ts.echo"]}}
	}`), "example.json")
	if err != nil {
		fmt.Println(err)
		return
	}
	h := host.New(cfg, host.Options{Dial: inProcess})
	defer h.Close()

	_, err = h.CallTool(context.Background(), "bot", "ts.add", map[string]any{"a": 1, "b": 2}, nil)
	var denied *host.DeniedError
	fmt.Println(errors.As(err, &denied), denied.Link)
	fmt.Println(err)
	// Output:
	// true rules
	// ts.add denied by policy "rules": ts.add is not allowed for agent "bot": no pattern of its allow list ["ts.echo"] matches it (agent defined in example.json, line 3, column 15)
}

// A gateway serves a host's servers, behind its chain, to any MCP client:
// here one session over an in-process pipe, acting as agent "bot", whose
// client sees the one tool the agent may use under its exposed name.
// `nexus serve` does the same over stdin and stdout (mcp.StdioConn), and
// Gateway.HTTP serves a session per client over streamable HTTP.
func ExampleNewGateway() {
	cfg, err := host.ParseConfig([]byte(`{
	  "mcpServers": {"ts": {"command": "nexus", "args": ["testserver"]}},
	  "agents": {"bot": {"permission": "yolo", "allow": ["ts.echo"]}}
	}`), "example.json")
	if err != nil {
		fmt.Println(err)
		return
	}
	h := host.New(cfg, host.Options{Dial: inProcess})
	defer h.Close()
	g, err := host.NewGateway(h, host.GatewayOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer g.Close()

	ctx := context.Background()
	downstream, conn := mcp.Pipe()
	go g.Serve(ctx, conn, "bot")
	client, err := mcp.Connect(ctx, downstream, mcp.ClientOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()
	tools, err := client.ListTools(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, t := range tools {
		fmt.Println(t.Name)
	}
	res, err := client.CallTool(ctx, "mcp_ts_echo", map[string]any{"message": "through the gateway"}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Content[0].Text)
	// Output:
	// mcp_ts_echo
	// through the gateway
}

// A gateway serves what the config's gateway block says: here streamable
// HTTP on a loopback port, where each request acts as the agent its
// bearer token names. Run serves until ctx ends; Ready tells where. The
// client is another host, which reaches the gateway as one more server
// and calls its tool by the name the gateway exposes it under.
func ExampleGateway_Run() {
	cfg, err := host.ParseConfig([]byte(`
server "ts" {
  stdio {
    command = "nexus"
    args    = ["testserver"]
  }
}
agent "bot" {
  permission = "yolo"
  allow      = ["ts.echo"]
  tokens     = ["bot-token-0123456789abcdef"]
}
gateway {
  listen = "127.0.0.1:0"
}
`), "nexus.hcl")
	if err != nil {
		fmt.Println(err)
		return
	}
	h := host.New(cfg, host.Options{Dial: inProcess})
	defer h.Close()
	ready := make(chan string, 1)
	g, err := host.NewGateway(h, host.GatewayOptions{Ready: func(what, url string) { ready <- url }})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer g.Close()
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- g.Run(ctx) }()
	defer func() { stop(); <-served }()
	var url string
	select {
	case url = <-ready:
	case err := <-served:
		fmt.Println(err) // the listener's error: the port is taken, say
		return
	}

	client, err := host.ParseConfig(fmt.Appendf(nil, `{
	  "mcpServers": {"gw": {"url": %q, "headers": {"Authorization": "Bearer bot-token-0123456789abcdef"}}},
	  "agents": {"me": {"permission": "yolo"}}
	}`, url), "client.json")
	if err != nil {
		fmt.Println(err)
		return
	}
	c := host.New(client, host.Options{})
	defer c.Close()
	res, err := c.CallTool(ctx, "me", "gw.mcp_ts_echo", map[string]any{"message": "over HTTP"}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Content[0].Text)
	// Output:
	// over HTTP
}

// Configuration comes as nexus.hcl or any mcpServers JSON; a mistake is a
// *host.Report that says where it is and how to fix it.
func ExampleParseConfig() {
	cfg, err := host.ParseConfig([]byte(`
server "files" {
  stdio {
    command = "npx"
    args    = ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"]
  }
}
agent "bot" {
  permission = "trusted"
  allow      = ["files.read_*"]
}
`), "nexus.hcl")
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, s := range cfg.Servers() {
		fmt.Println(s.Name, s.Type, s.Command[0])
	}

	_, err = host.ParseConfig([]byte(`{"mcpServers": {"files": {"command": 42}}}`), "claude.json")
	var rep *host.Report
	if errors.As(err, &rep) {
		fmt.Println(rep.Source.File, rep.Source.Line)
	}
	// Output:
	// files stdio npx
	// claude.json 1
}

// Describe explains an error a call returned to a person: here a tool
// name with a typo, with the nearest names and where the server was
// configured. A program prints what it returns; the nexus command line
// gives it Hints that name its own commands in the fixes.
func ExampleDescribe() {
	cfg, err := host.ParseConfig([]byte(`{
	  "mcpServers": {"ts": {"command": "nexus", "args": ["testserver"]}},
	  "agents": {"bot": {"permission": "yolo"}}
	}`), "example.json")
	if err != nil {
		fmt.Println(err)
		return
	}
	h := host.New(cfg, host.Options{Dial: inProcess})
	defer h.Close()

	_, err = h.CallTool(context.Background(), "bot", "ts.ehco", map[string]any{"message": "hi"}, nil)
	fmt.Println(host.Describe(cfg, err, host.DescribeOptions{Agent: "bot"}))
	// Output:
	// Unknown MCP Tool
	// ━━━━━━━━━━━━━━━━
	//
	// Server: "ts"
	// Source: example.json, line 2, column 19
	// Command: ["nexus", "testserver"]
	//
	// Problem: There is no tool "ehco" on server "ts"
	//
	// Did you mean:
	//   ts.echo
	//
	// Fix:
	//   • Check the name against the tools the agent may use
}
