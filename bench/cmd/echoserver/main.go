// Command echoserver is a minimal MCP server over stdio with one tool, echo,
// built on Nexus's own server role. Every client in the benchmarks talks to
// this same server, so differences are the clients'.
package main

import (
	"context"
	"encoding/json"
	"os"

	"github.com/nexus-mcp/nexus/host/mcp"
)

func main() {
	s := mcp.NewServer(mcp.Implementation{Name: "echoserver", Version: "1.0.0"}, mcp.ServerOptions{MaxHandlers: 64})
	s.AddTool(mcp.Tool{
		Name:        "echo",
		Description: "Echo back a message",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"message":{"type":"string"}},"required":["message"]}`),
	}, func(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var a struct {
			Message string `json:"message"`
		}
		if err := json.Unmarshal(r.Arguments, &a); err != nil {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{mcp.TextContent(err.Error())}}, nil
		}
		return &mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent(a.Message)}}, nil
	})
	if err := s.Serve(context.Background(), mcp.StdioConn()); err != nil && err.Error() != "EOF" {
		os.Exit(1)
	}
}
