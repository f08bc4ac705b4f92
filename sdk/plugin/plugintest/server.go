package plugintest

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/testenv"
)

// EchoServer is an MCP server for a transport plugin's tests to reach
// through it: its one tool, echo, answers "echo: " and the message.
// Serve it on the connection the far end of the transport accepts
// (mcp.NewStreamConn over a pipe or a channel, say); each Serve is a
// session of its own.
func EchoServer() *mcp.Server {
	s := mcp.NewServer(mcp.Implementation{Name: "plugintest-echo", Version: "1.0.0"}, mcp.ServerOptions{})
	s.AddTool(mcp.Tool{
		Name:        "echo",
		Description: "Echo back a message.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"message":{"type":"string"}},"required":["message"]}`),
	}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var a struct{ Message string }
		if err := json.Unmarshal(req.Arguments, &a); err != nil {
			return nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent("echo: " + a.Message)}}, nil
	})
	return s
}

// RedisServer starts a redis-server (Redis 7 or Valkey, from the
// machine's packages) on a free loopback port, without persistence,
// stopped when the test ends, and returns its redis:// URL: for a plugin
// that keeps its state in Redis, shared by the replicas of a gateway.
// A machine without one fails the test with the command that installs it.
func RedisServer(t testing.TB) string {
	t.Helper()
	return testenv.RedisServer(t)
}
