package gateway_test

import (
	"context"
	"testing"

	"github.com/nexus-mcp/nexus/host/mcp"
)

// BenchmarkHop is the gateway's own work per tools/call, in process: the
// client and the upstream talk to it over in-memory pipes, so what is
// measured is the two protocol hops and the host's chain, not I/O. The
// baseline is the same client calling the same upstream directly.
func BenchmarkHop(b *testing.B) {
	e := newEnv(b, nil)
	ctx := context.Background()
	args := map[string]any{"message": "hello"}

	b.Run("direct", func(b *testing.B) {
		c, err := e.h.Client(ctx, "claude", "testserver")
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for range b.N {
			if _, err := c.CallTool(ctx, "echo", args, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("gateway", func(b *testing.B) {
		down, up := mcp.Pipe()
		go e.g.Serve(ctx, up, "claude")
		c, err := mcp.Connect(ctx, down, mcp.ClientOptions{})
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			if _, err := c.CallTool(ctx, "mcp_testserver_echo", args, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
}
