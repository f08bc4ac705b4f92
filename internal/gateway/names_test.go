package gateway_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/nexus-mcp/nexus/host/mcp"
)

// A mistyped tool gets suggestions by the names the client sees, not by
// the command line's server.tool (issue 42).
func TestUnknownToolSuggestsExposedNames(t *testing.T) {
	e := newEnv(t, nil)
	c := e.connect("claude", mcp.ClientOptions{})
	_, err := c.CallTool(ctxT(t), "testserver.ad", json.RawMessage(`{"a":1,"b":2}`), nil)
	if err == nil || !strings.Contains(err.Error(), "mcp_testserver_add") || strings.Contains(err.Error(), "testserver.add") {
		t.Fatalf("a mistyped tool: %v", err)
	}
}
