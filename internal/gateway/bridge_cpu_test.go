package gateway_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
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
// counted, and the other builds on the machine are not either. The
// gateway is built with the nexusbench tag (bench.go: the floor below,
// and the profile), the same code as a release but for that. Four
// batches interleave in chunks:
//   - two plain calls (echo): the agent's own two round trips, the base;
//   - an MRTR round: elicit asks for an elicitation (input_required), the
//     retry answers it and the call completes;
//   - the floor: two plain calls, the second of which the gateway (only
//     in this build) also seals a requestState for and opens, and whose
//     upstream answer it hands across one goroutine more (bench.go): what
//     any bridge pays beyond the agent's two round trips, since a round
//     has no more upstream exchanges than they do (the elicitation and its
//     answer take the second call's request and result's place);
//   - a plain call and a call whose server asks roots/list, which the
//     gateway answers itself from the config (the agent declared no
//     roots): one more upstream exchange inside one call, for
//     comparison (not a floor: a round has none).
//
// added-us is the round's gateway CPU over the two calls', against the
// issue's 100 µs (budget-ratio); floor-us is the floor batch's over the
// two calls', x-floor the round's added CPU against it (a floor under
// 1 µs, within the noise of a difference of batches, counts as 1); exchange-us is
// the exchange batch's over the two calls'; x-two-calls is the round
// against the two calls. sleeps/… count how often the gateway's threads
// went to sleep (PidSleeps: each a wake-up to come) per op of each batch.
//
// Goroutine hand-offs in the gateway, counted along the code: a plain
// call has three (the agent's request to a bridge runner, its outcome
// back, the agent session's reading handed on by its idle timer while
// the call waits upstream), two calls six; a round seven, as the floor
// (the runner; the server's question, read by the runner, to a spare
// worker; its kick to the waiting request; the reading handed on; the
// retry's answers to the spare worker; the outcome to the retry; the
// reading handed on).
//
// NEXUS_BENCH_CPUPROFILE=FILE writes a CPU profile of the gateway's
// process over the timed loop to FILE (`go tool pprof FILE`; with
// -diff_base, one batch's profile against another's);
// NEXUS_BENCH_TRACE=FILE an execution trace instead (`go tool trace
// FILE`, or -d=parsed for its events: which goroutine woke which, and
// on which thread). NEXUS_BENCH_BATCHES=two,round runs only the named
// batches (two, round, floor, exchange), to profile one alone.
func BenchmarkBridgeRoundGateway(b *testing.B) {
	bin, err := testenv.Build(testenv.Root(b), "./cmd/nexus", "nexus", []string{"-trimpath", "-tags", "nexusbench"}, []string{"CGO_ENABLED=0"})
	if err != nil {
		b.Fatal(err)
	}
	up := testenv.Nexus(b) // the upstream: a release build
	dir := b.TempDir()
	cfg := filepath.Join(dir, "nexus.hcl")
	hcl := "server \"legacy\" {\n  prefix = \"\"\n  stdio {\n    command = " + strconv.Quote(up) + "\n    args    = [\"testserver\", \"--legacy-only\"]\n  }\n}\n" +
		"agent \"claude\" { permission = \"yolo\" }\n"
	if err := os.WriteFile(cfg, []byte(hcl), 0o600); err != nil {
		b.Fatal(err)
	}
	prof, what := os.Getenv("NEXUS_BENCH_CPUPROFILE"), "NEXUS_BENCH_CPUPROFILE"
	if t := os.Getenv("NEXUS_BENCH_TRACE"); t != "" {
		prof, what = t, "NEXUS_BENCH_TRACE"
	}
	if prof != "" {
		if prof, err = filepath.Abs(prof); err != nil {
			b.Fatal(err)
		}
		os.Remove(prof + ".done")
	}
	conn, err := stdio.Start(context.Background(), stdio.Config{Server: "nexus serve", Command: []string{bin, "serve", "--config", cfg, "--agent", "claude"},
		Options:     stdio.Options{Env: map[string]string{what: prof}},
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
	sleeps := func() int64 {
		n, err := gateway.PidSleeps(conn.PID())
		if err != nil {
			b.Fatal(err)
		}
		return n
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
	echo := func(msg string) {
		if raw := call("echo", map[string]any{"arguments": map[string]any{"message": msg}}); !strings.Contains(string(raw), msg) {
			b.Fatalf("echo: %s", raw)
		}
	}
	plain := func() { echo("hi") }
	two := func() { plain(); plain() }
	floor := func() { plain(); echo("floor") } // bench.go's floorArgs
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
	floor()
	exchange()
	batches := []func(){two, round, floor, exchange}
	run := [4]bool{true, true, true, true}
	if only := os.Getenv("NEXUS_BENCH_BATCHES"); only != "" {
		names := strings.Split(only, ",")
		for i, name := range []string{"two", "round", "floor", "exchange"} {
			run[i] = slices.Contains(names, name)
		}
	}
	var used [4]time.Duration
	var slept [4]int64
	signal := func() {
		if prof != "" {
			if err := gateway.SignalProfile(conn.PID()); err != nil {
				b.Fatal(err)
			}
		}
	}
	signal() // the profile starts
	const chunk = 20
	b.ResetTimer()
	for done, k := 0, 0; done < b.N; done, k = done+chunk, k+1 {
		n := min(chunk, b.N-done)
		for j := range batches {
			// Each chunk starts with the next batch: what a batch leaves
			// behind (idle workers, a reader's role, warm stacks) helps or
			// costs each of the others alike.
			i := (j + k) % len(batches)
			if !run[i] {
				continue
			}
			f := batches[i]
			c0, s0 := cpu(), sleeps()
			for range n {
				f()
			}
			used[i] += cpu() - c0
			slept[i] += sleeps() - s0
		}
	}
	b.StopTimer()
	if prof != "" {
		signal() // and ends
		deadline := time.Now().Add(30 * time.Second)
		for {
			if _, err := os.Stat(prof + ".done"); err == nil {
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("nexus serve (pid %d) wrote no %s file to %s within 30 s of being asked (SIGUSR1)", conn.PID(), what, prof)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	per := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 / float64(b.N) }
	base, bridged, floored, exchanged := used[0], used[1], used[2], used[3]
	added, fl := per(bridged-base), per(floored-base)
	b.ReportMetric(per(base), "cpu-us/two-calls")
	b.ReportMetric(per(bridged), "cpu-us/round")
	b.ReportMetric(added, "added-us")
	b.ReportMetric(added/100, "budget-ratio")
	b.ReportMetric(float64(bridged)/float64(max(base, 1)), "x-two-calls")
	if run[2] {
		b.ReportMetric(fl, "floor-us")
		b.ReportMetric(added/max(fl, 1), "x-floor")
	}
	if run[3] {
		b.ReportMetric(per(exchanged-base), "exchange-us")
	}
	for i, name := range []string{"two-calls", "round", "floor"} {
		if !run[i] {
			continue
		}
		b.ReportMetric(float64(slept[i])/float64(b.N), "sleeps/"+name)
	}
}
