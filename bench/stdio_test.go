package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	mcpgoclient "github.com/mark3labs/mcp-go/client"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/transport/stdio"
)

var bins struct {
	dir, pipeecho, echoserver, minimal, relay, httprelay, postecho, nexus string
}

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "nexus-bench-")
	if err != nil {
		panic(err)
	}
	bins.dir = dir
	bins.pipeecho = filepath.Join(dir, "pipeecho")
	bins.echoserver = filepath.Join(dir, "echoserver")
	bins.minimal = filepath.Join(dir, "minimalecho")
	bins.relay = filepath.Join(dir, "relay")
	bins.httprelay = filepath.Join(dir, "httprelay")
	bins.postecho = filepath.Join(dir, "postecho")
	bins.nexus = filepath.Join(dir, "nexus")
	for out, pkg := range map[string]string{bins.pipeecho: "./cmd/pipeecho", bins.echoserver: "./cmd/echoserver", bins.minimal: "./cmd/minimalecho", bins.relay: "./cmd/relay", bins.httprelay: "./cmd/httprelay", bins.postecho: "./cmd/postecho",
		bins.nexus: "github.com/nexus-mcp/nexus/cmd/nexus"} {
		// Static and -trimpath, as make build and the release build theirs:
		// the packages they compiled serve these too.
		cmd := exec.Command("go", "build", "-trimpath", "-o", out, pkg)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if b, err := cmd.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "go build %s: %v\n%s", pkg, err, b)
			os.RemoveAll(dir)
			os.Exit(2)
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// request is what the raw pipe carries: the same bytes as a tools/call.
const request = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hello"}}}` + "\n"

// A caller makes one round trip; it is what every contender implements.
type caller interface {
	call(ctx context.Context) error
	close()
}

type rawPipe struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

func newRawPipe(tb testing.TB) *rawPipe {
	cmd := exec.Command(bins.pipeecho)
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	return &rawPipe{cmd: cmd, in: in, out: bufio.NewReaderSize(out, 64<<10)}
}

func (r *rawPipe) call(context.Context) error {
	if _, err := io.WriteString(r.in, request); err != nil {
		return err
	}
	_, err := r.out.ReadSlice('\n')
	return err
}

func (r *rawPipe) close() { r.in.Close(); r.cmd.Wait() }

type nexusClient struct {
	c    *mcp.Client
	tool string          // "" is echo
	args json.RawMessage // nil is echoArgs
	want string          // the text echoed back; "" is "hello"
}

// echoing makes c, a Nexus client or one with a cleanup, echo msg instead
// of "hello".
func echoing(c caller, msg string) caller {
	n, ok := c.(*nexusClient)
	if cl, isCloser := c.(closer); isCloser {
		n, ok = cl.caller.(*nexusClient)
	}
	if !ok {
		panic(fmt.Sprintf("echoing: %T is not a Nexus client", c))
	}
	n.args, _ = json.Marshal(map[string]string{"message": msg})
	n.want = msg
	return c
}

func newNexus(tb testing.TB) *nexusClient { return newNexusTo(tb, bins.echoserver) }

func newNexusTo(tb testing.TB, server string) *nexusClient {
	ctx := context.Background()
	conn, err := stdio.Start(ctx, stdio.Config{Server: "echo", Command: []string{server}})
	if err != nil {
		tb.Fatal(err)
	}
	c, err := mcp.Connect(ctx, conn, mcp.ClientOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	return &nexusClient{c: c}
}

var echoArgs = map[string]any{"message": "hello"}

func (n *nexusClient) call(ctx context.Context) error {
	tool := n.tool
	if tool == "" {
		tool = "echo"
	}
	var args any = echoArgs
	want := "hello"
	if n.args != nil {
		args, want = n.args, n.want
	}
	res, err := n.c.CallTool(ctx, tool, args, nil)
	if err != nil {
		return err
	}
	if len(res.Content) != 1 || res.Content[0].Text != want {
		return fmt.Errorf("unexpected result: %d blocks", len(res.Content))
	}
	return nil
}

func (n *nexusClient) close() { n.c.Close() }

type sdkClient struct {
	s    *sdk.ClientSession
	args map[string]any // nil is echoArgs
}

func newSDK(tb testing.TB) *sdkClient {
	client := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "1"}, nil)
	s, err := client.Connect(context.Background(), &sdk.CommandTransport{Command: exec.Command(bins.echoserver)}, nil)
	if err != nil {
		tb.Fatal(err)
	}
	return &sdkClient{s: s}
}

func (c *sdkClient) call(ctx context.Context) error {
	args := c.args
	if args == nil {
		args = echoArgs
	}
	res, err := c.s.CallTool(ctx, &sdk.CallToolParams{Name: "echo", Arguments: args})
	if err != nil {
		return err
	}
	if len(res.Content) != 1 {
		return fmt.Errorf("unexpected result %+v", res)
	}
	return nil
}

func (c *sdkClient) close() { c.s.Close() }

type mcpgoClient struct {
	c    *mcpgoclient.Client
	args map[string]any // nil is echoArgs
}

func newMCPGo(tb testing.TB) *mcpgoClient {
	c, err := mcpgoclient.NewStdioMCPClient(bins.echoserver, nil)
	if err != nil {
		tb.Fatal(err)
	}
	var init mcpgo.InitializeRequest
	init.Params.ProtocolVersion = mcpgo.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcpgo.Implementation{Name: "bench", Version: "1"}
	if _, err := c.Initialize(context.Background(), init); err != nil {
		tb.Fatal(err)
	}
	return &mcpgoClient{c: c}
}

func (c *mcpgoClient) call(ctx context.Context) error {
	var req mcpgo.CallToolRequest
	req.Params.Name = "echo"
	req.Params.Arguments = echoArgs
	if c.args != nil {
		req.Params.Arguments = c.args
	}
	res, err := c.c.CallTool(ctx, req)
	if err != nil {
		return err
	}
	if len(res.Content) != 1 {
		return fmt.Errorf("unexpected result %+v", res)
	}
	return nil
}

func (c *mcpgoClient) close() { c.c.Close() }

// contenders are made fresh for each benchmark.
var contenders = []contender{
	{"rawpipe", func(tb testing.TB) caller { return newRawPipe(tb) }},
	{"nexus", func(tb testing.TB) caller { return newNexus(tb) }},
	{"go-sdk", func(tb testing.TB) caller { return newSDK(tb) }},
	{"mcp-go", func(tb testing.TB) caller { return newMCPGo(tb) }},
}

func percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, int(float64(len(s))*p))]
}

func us(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }

// BenchmarkStdioRoundTrip measures one sequential tools/call round trip per
// contender (the raw pipe echoes the same bytes).
func BenchmarkStdioRoundTrip(b *testing.B) { roundTrips(b, contenders) }

// rawMCP speaks to the echo server with hand-written frames and no client
// library: the server's share of a round trip.
type rawMCP struct{ *rawPipe }

func newRawMCP(tb testing.TB) *rawMCP {
	cmd := exec.Command(bins.echoserver)
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	r := &rawMCP{&rawPipe{cmd: cmd, in: in, out: bufio.NewReaderSize(out, 64<<10)}}
	io.WriteString(in, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`+"\n")
	if _, err := r.out.ReadSlice('\n'); err != nil {
		tb.Fatal(err)
	}
	io.WriteString(in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
	return r
}

// BenchmarkSplit separates the two sides of a round trip: the Nexus client
// against the minimal echo server (cmd/minimalecho: no framework, the
// least work a server can do; client cost), and hand-written frames
// against the echo server built on Nexus's server role (server cost).
func BenchmarkSplit(b *testing.B) {
	roundTrips(b, []contender{
		{"client-only", func(tb testing.TB) caller { return newNexusTo(tb, bins.minimal) }},
		{"server-only", func(tb testing.TB) caller { return newRawMCP(tb) }},
	})
}

// BenchmarkStdioRatio interleaves the raw pipe and the Nexus client call
// by call and reports the Nexus p50 over the raw pipe's: nexus-minimal is
// the client against the minimal echo server (the issue's "minimal echo
// server"), nexus the client against the echo server built on Nexus's
// server role; with ppollPipe, nexus-minimal over a raw pipe that waits
// the way Nexus does. The SDKs are measured apart (BenchmarkPeerRatio): the
// garbage they make would be collected on the time of whoever runs next.
func BenchmarkStdioRatio(b *testing.B) {
	cs := []contender{
		contenders[0],
		{"nexus-minimal", func(tb testing.TB) caller { return newNexusTo(tb, bins.minimal) }},
		contenders[1],
	}
	if ppollPipe != nil {
		cs = append(cs, *ppollPipe)
	}
	p50 := interleaved(b, cs)
	b.ReportMetric(p50[1]/p50[0], "nexus-minimal/rawpipe")
	b.ReportMetric(p50[2]/p50[0], "nexus/rawpipe")
	if ppollPipe != nil {
		b.ReportMetric(p50[1]/p50[3], "nexus-minimal/rawpipe-ppoll")
	}
}

// ppollPipe, where the platform has ppoll(2), is the raw pipe read the way
// Nexus's stdio transport waits for a reply (ppoll_linux_test.go).
var ppollPipe *contender

// BenchmarkPeerRatio interleaves Nexus and the two SDK clients against
// the same echo server and reports each SDK's p50 over Nexus's: call by
// call, where waking the server's process is much of every client's time,
// and in blocks of 100, where the clients' own work shows.
func BenchmarkPeerRatio(b *testing.B) {
	byTurns(b, contenders[1:], func(b *testing.B, p50 []float64) {
		b.ReportMetric(p50[1]/p50[0], "go-sdk/nexus")
		b.ReportMetric(p50[2]/p50[0], "mcp-go/nexus")
	})
}

// TestMinimalEcho: the minimal echo server really echoes, escapes and all,
// so the client does the same work against it as against a real server.
func TestMinimalEcho(t *testing.T) {
	n := newNexusTo(t, bins.minimal)
	defer n.close()
	for _, msg := range []string{"hello", `quote " and \ backslash`, "line\nbreak é 🙂", ""} {
		res, err := n.c.CallTool(context.Background(), "echo", map[string]any{"message": msg}, nil)
		if err != nil || len(res.Content) != 1 || res.Content[0].Text != msg {
			t.Fatalf("%q: %v %+v", msg, err, res)
		}
	}
}

// BenchmarkConcurrent32 compares 32 concurrent callers on one session with
// one sequential caller over the same number of calls, and reports the
// throughput ratio.
func BenchmarkConcurrent32(b *testing.B) {
	n := newNexus(b)
	defer n.close()
	ctx := context.Background()
	const calls = 2000
	var seq, par time.Duration
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		for range calls {
			if err := n.call(ctx); err != nil {
				b.Fatal(err)
			}
		}
		seq += time.Since(t0)

		t0 = time.Now()
		var wg sync.WaitGroup
		errs := make(chan error, 32)
		for w := range 32 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := w; i < calls; i += 32 {
					if err := n.call(ctx); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		wg.Wait()
		par += time.Since(t0)
		close(errs)
		for err := range errs {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(calls*b.N)/par.Seconds(), "calls/s-32")
	b.ReportMetric(float64(calls*b.N)/seq.Seconds(), "calls/s-1")
	b.ReportMetric(seq.Seconds()/par.Seconds(), "speedup")
}

// TestNexusAllocBudget holds the client to at most 8 KB allocated per small
// echo call (measured in this process; the server runs apart).
func TestNexusAllocBudget(t *testing.T) {
	n := newNexus(t)
	defer n.close()
	ctx := context.Background()
	res := testing.Benchmark(func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			if err := n.call(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
	perCall := res.AllocedBytesPerOp()
	t.Logf("nexus client: %d B/call, %d allocs/call", perCall, res.AllocsPerOp())
	if perCall > 8<<10 {
		t.Fatalf("client allocates %d bytes per call, over the 8 KB budget", perCall)
	}
}

// TestPeersAgree makes sure every contender really completes calls against
// the shared server, so a benchmark never measures a broken client.
func TestPeersAgree(t *testing.T) { peersAgree(t, contenders) }
