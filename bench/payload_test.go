package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nexus-mcp/nexus/host"
)

// BenchmarkPayload: a tools/call echoing a message of 64 B, 2 KB, 64 KB
// and 1 MB, through host.CallTool over stdio (the whole host: permission,
// schema check, sanitizing), against a raw pipe moving the same request
// and response bytes, and against go-sdk and mcp-go making the same call
// to the same server. The server is the echo tool on Nexus's own server
// role, which decodes and encodes the message; Nexus also calls
// minimalecho, which copies it as bytes, so that ratio is the client's
// alone (the raw pipe's other end copies bytes too). Contenders take turns
// in blocks, so drift hits all alike. It reports the p50 ratios (targets:
// Nexus ≤ 1.3x the raw pipe up to 2 KB; go-sdk and mcp-go ≥ 2x Nexus at
// every size) and how fast the Nexus side handles the payload on its own
// CPU: the bytes sent and received over this process's CPU time per call
// (the server is another process; target ≥ 1 GB/s at 64 KB and 1 MB),
// against both servers: on 2 cores a server that works on the message
// competes with the client for the cores and their caches, so the client
// spends more CPU on the same bytes than against one that copies them.
// The raw pipe's own figure (rawpipe-MB/s-cpu: writing the request and
// reading the reply, nothing else) is the floor any client pays here.
func BenchmarkPayload(b *testing.B) {
	for _, size := range []struct {
		name string
		n    int
		text bool // lines of text (escaped line breaks), not one letter repeated
	}{{"64B", 64, false}, {"2KB", 2 << 10, false}, {"64KB", 64 << 10, false}, {"1MB", 1 << 20, false}, {"64KB-text", 64 << 10, true}} {
		b.Run(size.name, func(b *testing.B) {
			msg := strings.Repeat("a", size.n)
			if size.text {
				msg = logText(size.n)
			}
			cs := []caller{newRawPayload(b, msg), newHostPayload(b, msg), newSDKPayload(b, msg), newMCPGoPayload(b, msg),
				newHostPayloadTo(b, bins.minimal, msg)}
			for _, c := range cs {
				defer c.close()
				warm(b, c)
			}
			block := max(1, min(200, (2<<20)/size.n)) // calls per turn: about 2 MB moved
			// Small calls are noisy one by one (a wake-up more or less is
			// their whole cost): each size makes at least the calls that
			// move what b.N calls of 64 KB would, so its p50 has samples
			// from many turns.
			calls := b.N * max(1, (64<<10)/size.n)
			lat := make([][]time.Duration, len(cs))
			var rawCPU, nexusCPU, minimalCPU []time.Duration // per call, per block
			ctx := context.Background()
			b.ResetTimer()
			for done := 0; done < calls; done += block {
				for i, c := range cs {
					// Each block pays only for its own garbage, not for
					// the collection the one before it left running.
					runtime.GC()
					c0 := cpuSelf()
					for range block {
						t0 := time.Now()
						if err := c.call(ctx); err != nil {
							b.Fatal(err)
						}
						lat[i] = append(lat[i], time.Since(t0))
					}
					switch i {
					case 0:
						rawCPU = append(rawCPU, (cpuSelf()-c0)/time.Duration(block))
					case 1:
						nexusCPU = append(nexusCPU, (cpuSelf()-c0)/time.Duration(block))
					case 4:
						minimalCPU = append(minimalCPU, (cpuSelf()-c0)/time.Duration(block))
					}
				}
			}
			b.StopTimer()
			p50 := make([]float64, len(cs))
			for i := range cs {
				p50[i] = us(percentile(lat[i], 0.5))
			}
			b.ReportMetric(p50[1], "nexus-p50-µs")
			b.ReportMetric(p50[1]/p50[0], "nexus/rawpipe")
			b.ReportMetric(p50[4]/p50[0], "nexus-minimal/rawpipe")
			b.ReportMetric(p50[2]/p50[1], "go-sdk/nexus")
			b.ReportMetric(p50[3]/p50[1], "mcp-go/nexus")
			b.ReportMetric(float64(2*size.n)/percentile(nexusCPU, 0.5).Seconds()/1e6, "nexus-MB/s-cpu")
			b.ReportMetric(float64(2*size.n)/percentile(minimalCPU, 0.5).Seconds()/1e6, "nexus-minimal-MB/s-cpu")
			b.ReportMetric(float64(2*size.n)/percentile(rawCPU, 0.5).Seconds()/1e6, "rawpipe-MB/s-cpu")
		})
	}
}

func cpuSelf() time.Duration {
	var r syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &r)
	return time.Duration(r.Utime.Nano() + r.Stime.Nano())
}

// rawPayload is the raw pipe carrying a tools/call request with the
// message and a response of the same size.
type rawPayload struct {
	*rawPipe
	line string
}

func newRawPayload(tb testing.TB, msg string) *rawPayload {
	q, _ := json.Marshal(msg)
	line := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":` + string(q) + `}}}` + "\n"
	return &rawPayload{newRawPipe(tb), line}
}

// logText is n bytes of log lines: what files, logs and command output
// look like to a tool, a line break (an escape in JSON) every 50 bytes.
func logText(n int) string {
	const line = "2026-11-25T08:00:00Z INFO request served in 12ms\n"
	return strings.Repeat(line, n/len(line)+1)[:n]
}

func (r *rawPayload) call(context.Context) error {
	// A line longer than the pipe's buffer is written while the echo is
	// read, as any client does; a short one fits in the pipe at once.
	var wrote chan error
	if len(r.line) > 32<<10 {
		wrote = make(chan error, 1)
		go func() {
			_, err := io.WriteString(r.in, r.line)
			wrote <- err
		}()
	} else if _, err := io.WriteString(r.in, r.line); err != nil {
		return err
	}
	for { // pipeecho writes long lines in pieces
		_, err := r.out.ReadSlice('\n')
		if err == nil {
			break
		}
		if err != bufio.ErrBufferFull {
			return err
		}
	}
	if wrote != nil {
		return <-wrote
	}
	return nil
}

// hostPayload is host.CallTool on the echo server over stdio.
type hostPayload struct {
	h    *host.Host
	args json.RawMessage
	n    int
}

func newHostPayload(tb testing.TB, msg string) *hostPayload {
	return newHostPayloadTo(tb, bins.echoserver, msg)
}

func newHostPayloadTo(tb testing.TB, server, msg string) *hostPayload {
	argv, _ := json.Marshal([]string{server})
	doc := fmt.Sprintf(`{"mcpServers": {"echo": {"command": %s}}, "agents": {"bench": {"permission": "yolo", "servers": ["echo"]}}}`, argv)
	cfg, err := host.ParseConfig([]byte(doc), "bench.json")
	if err != nil {
		tb.Fatal(err)
	}
	args, _ := json.Marshal(map[string]string{"message": msg})
	return &hostPayload{h: host.New(cfg, host.Options{}), args: args, n: len(msg)}
}

func (p *hostPayload) call(ctx context.Context) error {
	res, err := p.h.CallTool(ctx, "bench", "echo.echo", p.args, nil)
	if err != nil {
		return err
	}
	if len(res.Content) != 1 || len(res.Content[0].Text) != p.n {
		return fmt.Errorf("unexpected result: %d blocks", len(res.Content))
	}
	return nil
}

func (p *hostPayload) close() { p.h.Close() }

func newSDKPayload(tb testing.TB, msg string) *sdkClient {
	c := newSDK(tb)
	c.args = map[string]any{"message": msg}
	return c
}

func newMCPGoPayload(tb testing.TB, msg string) *mcpgoClient {
	c := newMCPGo(tb)
	c.args = map[string]any{"message": msg}
	return c
}

// TestPayloadPeersAgree: every contender of BenchmarkPayload completes a
// call at every size, so the benchmark never measures a broken client.
func TestPayloadPeersAgree(t *testing.T) {
	ctx := context.Background()
	for _, msg := range []string{strings.Repeat("a", 64), strings.Repeat("a", 64<<10), strings.Repeat("a", 1<<20), logText(64 << 10)} {
		n := len(msg)
		for _, c := range []caller{newRawPayload(t, msg), newHostPayload(t, msg), newSDKPayload(t, msg), newMCPGoPayload(t, msg)} {
			for range 3 {
				if err := c.call(ctx); err != nil {
					t.Fatalf("%d bytes, %T: %v", n, c, err)
				}
			}
			c.close()
		}
	}
}
