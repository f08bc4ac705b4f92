package echo

import (
	"context"
	"encoding/json"

	"github.com/nexus-mcp/nexus/host/mcp"
)

// Server returns a new echo server.
func Server() *mcp.Server {
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
	return s
}
