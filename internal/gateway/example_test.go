package gateway_test

import (
	"context"
	"fmt"

	"github.com/nexus-mcp/nexus/host"
	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/config"
	"github.com/nexus-mcp/nexus/internal/diag"
	"github.com/nexus-mcp/nexus/internal/gateway"
	"github.com/nexus-mcp/nexus/internal/testserver"
)

// A gateway serves a host's servers, behind its chain, to any MCP client:
// here one session over an in-process pipe, acting as agent "bot", whose
// client sees the one tool the agent may use under its exposed name.
// `nexus serve` does the same over stdin and stdout, and HTTP serves a
// session per client (Gateway.HTTP).
func ExampleGateway_Serve() {
	cfg, err := config.Parse([]byte(`{
	  "mcpServers": {"ts": {"command": "nexus", "args": ["testserver"]}},
	  "agents": {"bot": {"permission": "yolo", "allow": ["ts.echo"]}}
	}`), diag.Source{File: "example.json"})
	if err != nil {
		fmt.Println(err)
		return
	}
	// Dial runs the test server in this process; leave it nil to start
	// servers as the config says.
	h := host.New(cfg, host.Options{Dial: func(ctx context.Context, _ *config.Server) (*mcp.Client, error) {
		client, server := mcp.Pipe()
		go testserver.New(testserver.Options{}).Serve(context.Background(), server)
		return mcp.Connect(ctx, client, mcp.ClientOptions{})
	}})
	defer h.Close()
	g := gateway.New(h, gateway.Options{})
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
