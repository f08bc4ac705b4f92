package host_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/trace"

	"github.com/nexus-mcp/nexus/host"
	"github.com/nexus-mcp/nexus/host/audit"
	"github.com/nexus-mcp/nexus/host/telemetry"
	"github.com/nexus-mcp/nexus/host/testserver"
)

// discard is a span exporter that drops what it gets: an in-process sink,
// so the benchmark measures the host's tracing, not a collector.
type discard struct{}

func (discard) ExportSpans(context.Context, []trace.ReadOnlySpan) error { return nil }
func (discard) Shutdown(context.Context) error                          { return nil }

// BenchmarkObserved: host.CallTool on the in-process test server with the
// audit log (a file), Prometheus metrics and tracing (an exporter that
// drops the spans) all on, each of them alone, and telemetry set up with
// no exporter, against the same call with none of them, interleaved block
// by block. It reports what each adds per call: observed-µs and observed-B
// for all three (targets 5 µs and 1 KB), audit-, metrics- and tracing-
// alone, and idle-µs (target: nothing measurable).
func BenchmarkObserved(b *testing.B) {
	w := newWorld()
	w.mu.Lock()
	w.servers["ts"] = testserver.New(testserver.Options{})
	w.mu.Unlock()
	aw, err := audit.Open(audit.Options{Path: filepath.Join(b.TempDir(), "audit.jsonl"), Buffer: 1 << 16})
	if err != nil {
		b.Fatal(err)
	}
	defer aw.Close()
	full, err := telemetry.New(context.Background(), telemetry.Options{Exporter: discard{}, Metrics: true, Getenv: func(string) string { return "" }})
	if err != nil {
		b.Fatal(err)
	}
	defer full.Shutdown(context.Background())
	idle, _ := telemetry.New(context.Background(), telemetry.Options{Getenv: func(string) string { return "" }})
	tracing, _ := telemetry.New(context.Background(), telemetry.Options{Exporter: discard{}, Getenv: func(string) string { return "" }})
	defer tracing.Shutdown(context.Background())
	metrics, _ := telemetry.New(context.Background(), telemetry.Options{Metrics: true, Getenv: func(string) string { return "" }})
	aw2, err := audit.Open(audit.Options{Path: filepath.Join(b.TempDir(), "audit2.jsonl"), Buffer: 1 << 16})
	if err != nil {
		b.Fatal(err)
	}
	defer aw2.Close()
	plain := w.host(b, benchAgent, host.Options{})
	observed := w.host(b, benchAgent, host.Options{Audit: aw, Telemetry: full})
	quiet := w.host(b, benchAgent, host.Options{Telemetry: idle})
	audited := w.host(b, benchAgent, host.Options{Audit: aw2})
	counted := w.host(b, benchAgent, host.Options{Telemetry: metrics})
	traced := w.host(b, benchAgent, host.Options{Telemetry: tracing})
	args := json.RawMessage(`{"message":"hello"}`)
	call := func(h *host.Host) func() {
		return func() {
			if res, err := h.CallTool(ctx, "bench", "mcp_ts_echo", args, nil); err != nil || res.IsError {
				b.Fatal(err, res)
			}
		}
	}
	fs := []func(){call(plain), call(observed), call(quiet), call(audited), call(counted), call(traced)}
	for range 300 {
		for _, f := range fs {
			f()
		}
	}
	type sample struct {
		wall  time.Duration
		alloc uint64
	}
	measure := func(f func(), n int) sample {
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		t0 := time.Now()
		for range n {
			f()
		}
		d := time.Since(t0)
		runtime.ReadMemStats(&m1)
		return sample{d / time.Duration(n), (m1.TotalAlloc - m0.TotalAlloc) / uint64(n)}
	}
	var s [6][]sample
	b.ResetTimer()
	for done := 0; done < b.N; {
		n := min(200, b.N-done)
		for i, f := range fs {
			s[i] = append(s[i], measure(f, n))
		}
		done += n
	}
	b.StopTimer()
	med := func(f func(i int) float64) float64 {
		v := make([]float64, len(s[0]))
		for i := range v {
			v[i] = f(i)
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1000 }
	b.ReportMetric(med(func(i int) float64 { return us(s[0][i].wall) }), "plain-µs")
	b.ReportMetric(med(func(i int) float64 { return us(s[1][i].wall - s[0][i].wall) }), "observed-µs")
	b.ReportMetric(med(func(i int) float64 { return float64(s[1][i].alloc) - float64(s[0][i].alloc) }), "observed-B")
	b.ReportMetric(med(func(i int) float64 { return us(s[2][i].wall - s[0][i].wall) }), "idle-µs")
	b.ReportMetric(med(func(i int) float64 { return float64(s[2][i].alloc) - float64(s[0][i].alloc) }), "idle-B")
	for k, name := range map[int]string{3: "audit", 4: "metrics", 5: "tracing"} {
		b.ReportMetric(med(func(i int) float64 { return us(s[k][i].wall - s[0][i].wall) }), name+"-µs")
		b.ReportMetric(med(func(i int) float64 { return float64(s[k][i].alloc) - float64(s[0][i].alloc) }), name+"-B")
	}
}
