package engine_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nexus-mcp/nexus/internal/config"
	"github.com/nexus-mcp/nexus/internal/engine"
	"github.com/nexus-mcp/nexus/internal/policy"
	"github.com/nexus-mcp/nexus/internal/testserver"
	"github.com/nexus-mcp/nexus/sdk/plugin/plugintest"
)

func sum(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// TestPluginsFromConfig runs the first-party plugins the way a user
// configures them: a server reached through the WebSocket transport plugin,
// and a rate-limit policy plugin in the chain, all from one nexus.hcl.
func TestPluginsFromConfig(t *testing.T) {
	ws := plugintest.Build(t, "../../plugins/transport-websocket")
	rl := plugintest.Build(t, "../../plugins/policy-ratelimit")

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go testserver.ServeWSListener(ctx, testserver.Options{}, ln)

	cfgText := fmt.Sprintf(`
plugin "websocket" {
  path   = %q
  sha256 = %q
}
plugin "ratelimit" {
  path   = %q
  sha256 = %q
}
server "remote" {
  plugin {
    name   = "websocket"
    config = { url = "ws://%s/mcp" }
  }
}
filter "limits" {
  kind   = "policy"
  plugin = "ratelimit"
  config = { per_tool = { rate = "2/h" } }
}
agent "bot" {
  permission = "yolo"
}
`, ws, sum(t, ws), rl, sum(t, rl), ln.Addr())
	path := filepath.Join(t.TempDir(), "nexus.hcl")
	if err := os.WriteFile(path, []byte(cfgText), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(config.Options{Files: []string{path}})
	if err != nil {
		t.Fatal(err)
	}
	h := engine.New(cfg, engine.Options{})
	defer h.Close()

	for i := 0; i < 2; i++ {
		res, err := h.CallTool(ctx, "bot", "remote.echo", map[string]string{"message": "over ws"}, nil)
		if err != nil || res.Content[0].Text != "over ws" {
			t.Fatalf("call %d through the websocket plugin: %v %+v", i, err, res)
		}
	}
	_, err = h.CallTool(ctx, "bot", "remote.echo", map[string]string{"message": "third"}, nil)
	var de *policy.DeniedError
	if !errors.As(err, &de) || de.Link != "limits" {
		t.Fatalf("the third call within the hour must be denied by the rate limit, got %v", err)
	}
	if !strings.Contains(err.Error(), "limits") {
		t.Fatalf("denial does not name the filter: %v", err)
	}
}
