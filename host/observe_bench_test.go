package host_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"go.opentelemetry.io/otel/sdk/trace"

	"github.com/nexus-mcp/nexus/host"
	"github.com/nexus-mcp/nexus/internal/audit"
	"github.com/nexus-mcp/nexus/internal/telemetry"
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
	w := tsWorld()
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
	s := interleaved(b, []func(){call(plain), call(observed), call(quiet), call(audited), call(counted), call(traced)})
	plainMicros(b, s)
	for k, name := range map[int]string{1: "observed", 2: "idle", 3: "audit", 4: "metrics", 5: "tracing"} {
		added(b, s, k, name)
	}
}
