package gateway_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/gateway"
	"github.com/nexus-mcp/nexus/internal/testenv"
	"github.com/nexus-mcp/nexus/internal/transport/stdio"
)

// BenchmarkBridgeRoundGateway measures what issue 38's target names: the
// gateway's own CPU for an MRTR round. The gateway is `nexus serve` in a
// process of its own, serving this process (the modern agent) on stdio,
// with `nexus testserver --legacy-only` as its stdio upstream; its CPU is
// read from its process CPU clock (PidCPU: every thread's, to the
// nanosecond) around each batch, so neither the agent nor the upstream is
// counted, and the other builds on the machine are not either. Three
// batches interleave in chunks:
//   - two plain calls (echo): the agent's own two round trips, the base;
//   - an MRTR round: elicit asks for an elicitation (input_required), the
//     retry answers it and the call completes;
//   - a plain call and a call whose server asks roots/list, which the
//     gateway answers itself from the config (the agent declared no
//     roots): one more upstream exchange inside one call, for
//     comparison. It is not a floor: a round has no more upstream exchanges
//     than two plain calls (the elicitation and its answer take the
//     second call's place), so a bridge may beat it; what any bridge
//     must pay is the state's seal and open and the hand-offs of the
//     upstream call held across the agent's two requests (README).
//
// added-us is the round's gateway CPU over the two calls', against the
// issue's 100 µs (budget-ratio); exchange-us is the exchange batch's over the
// two calls'; x-two-calls is the round against the two calls.
func BenchmarkBridgeRoundGateway(b *testing.B) {
	bin := testenv.Nexus(b)
	dir := b.TempDir()
	cfg := filepath.Join(dir, "nexus.hcl")
	hcl := "server \"legacy\" {\n  prefix = \"\"\n  stdio {\n    command = " + strconv.Quote(bin) + "\n    args    = [\"testserver\", \"--legacy-only\"]\n  }\n}\n" +
		"agent \"claude\" { permission = \"yolo\" }\n"
	if err := os.WriteFile(cfg, []byte(hcl), 0o600); err != nil {
		b.Fatal(err)
	}
	conn, err := stdio.Start(context.Background(), stdio.Config{Server: "nexus serve", Command: []string{bin, "serve", "--config", cfg, "--agent", "claude"},
		HostEnviron: func() []string { return []string{"PATH=/usr/bin:/bin", "HOME=" + dir} }})
	if err != nil {
		b.Fatal(err)
	}
	m := &modernAgent{t: b, notes: make(chan note, 256), caps: elicitCaps()}
	m.peer = mcp.NewPeer(conn, mcp.PeerOptions{Handler: m})
	m.peer.Start()
	b.Cleanup(func() {
		m.peer.Close()
		conn.Close()
		select {
		case <-conn.Exited():
		case <-time.After(30 * time.Second):
			b.Errorf("nexus serve (pid %d) did not exit within 30 s of its stdin closing", conn.PID())
		}
	})
	cpu := func() time.Duration {
		d, err := gateway.PidCPU(conn.PID())
		if err != nil {
			b.Fatal(err)
		}
		return d
	}
	ctx := context.Background()
	call := func(name string, fields map[string]any) json.RawMessage {
		f := map[string]any{"name": name, "arguments": map[string]any{}}
		for k, v := range fields {
			f[k] = v
		}
		raw, err := m.call(ctx, mcp.MethodToolsCall, f)
		if err != nil {
			b.Fatalf("%s: %v (nexus serve's stderr: %q)", name, err, conn.Stderr())
		}
		return raw
	}
	plain := func() {
		if raw := call("echo", map[string]any{"arguments": map[string]any{"message": "hi"}}); !strings.Contains(string(raw), "hi") {
			b.Fatalf("echo: %s", raw)
		}
	}
	two := func() { plain(); plain() }
	round := func() {
		raw := call("elicit", nil)
		var r mcp.InputRequiredResult
		if json.Unmarshal(raw, &r) != nil || r.RequestState == "" || len(r.InputRequests) != 1 {
			b.Fatalf("round 1: %s", raw)
		}
		answers := map[string]json.RawMessage{}
		for k := range r.InputRequests {
			answers[k] = json.RawMessage(`{"action":"accept","content":{"name":"Ada"}}`)
		}
		if raw = call("elicit", map[string]any{"inputResponses": answers, "requestState": r.RequestState}); !strings.Contains(string(raw), "Ada") {
			b.Fatalf("round 2: %s", raw)
		}
	}
	exchange := func() {
		plain()
		if raw := call("roots", nil); !strings.Contains(string(raw), `"complete"`) || strings.Contains(string(raw), "isError") {
			b.Fatalf("roots: %s", raw)
		}
	}
	two()
	for range 10 { // past soloAfter: elicit's rounds are solo, as a server's that asks one question a call
		round()
	}
	exchange()
	const chunk = 20
	var base, bridged, exchanged time.Duration
	b.ResetTimer()
	for done := 0; done < b.N; done += chunk {
		n := min(chunk, b.N-done)
		t0 := cpu()
		for range n {
			two()
		}
		t1 := cpu()
		for range n {
			round()
		}
		t2 := cpu()
		for range n {
			exchange()
		}
		t3 := cpu()
		base += t1 - t0
		bridged += t2 - t1
		exchanged += t3 - t2
	}
	per := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 / float64(b.N) }
	added := per(bridged - base)
	b.ReportMetric(per(base), "cpu-us/two-calls")
	b.ReportMetric(per(bridged), "cpu-us/round")
	b.ReportMetric(added, "added-us")
	b.ReportMetric(per(exchanged-base), "exchange-us")
	b.ReportMetric(added/100, "budget-ratio")
	b.ReportMetric(float64(bridged)/float64(max(base, 1)), "x-two-calls")
}
