package engine_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/nexus-mcp/nexus/internal/audit"
	"github.com/nexus-mcp/nexus/internal/engine"
	"github.com/nexus-mcp/nexus/internal/telemetry"
)

// discard is a span exporter that drops what it gets: an in-process sink,
// so the benchmark measures the host's tracing, not a collector.
type discard struct{}

func (discard) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discard) Shutdown(context.Context) error                             { return nil }

// BenchmarkObserved: engine.CallTool on the in-process test server with the
// audit log (a file), Prometheus metrics and tracing (an exporter that
// drops the spans) all on, each of them alone, and telemetry set up with
// no exporter, against the same call with none of them, interleaved block
// by block. It reports what each adds per call: observed-µs and observed-B
// for all three (targets 5 µs and 1 KB), audit-, metrics- and tracing-
// alone, untraced for audit and metrics together, and idle-µs (target:
// nothing measurable). sdk-floor is the
// official SDK's own share of tracing, measured beside it: the plain call
// plus as many bare spans (no attributes, nothing but Start and End) as a
// traced call makes, on a provider set up as tracing's is; tracing-spans
// is how many that is.
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
	aw3, err := audit.Open(audit.Options{Path: filepath.Join(b.TempDir(), "audit3.jsonl"), Buffer: 1 << 16})
	if err != nil {
		b.Fatal(err)
	}
	defer aw3.Close()
	metrics2, _ := telemetry.New(context.Background(), telemetry.Options{Metrics: true, Getenv: func(string) string { return "" }})
	plain := w.host(b, benchAgent, engine.Options{})
	observed := w.host(b, benchAgent, engine.Options{Audit: aw, Telemetry: full})
	quiet := w.host(b, benchAgent, engine.Options{Telemetry: idle})
	audited := w.host(b, benchAgent, engine.Options{Audit: aw2})
	counted := w.host(b, benchAgent, engine.Options{Telemetry: metrics})
	traced := w.host(b, benchAgent, engine.Options{Telemetry: tracing})
	untraced := w.host(b, benchAgent, engine.Options{Audit: aw3, Telemetry: metrics2})
	args := json.RawMessage(`{"message":"hello"}`)
	call := func(h *engine.Host) func() {
		return func() {
			if res, err := h.CallTool(ctx, "bench", "mcp_ts_echo", args, nil); err != nil || res.IsError {
				b.Fatal(err, res)
			}
		}
	}
	spans := spansPerCall(b, w, args)
	floor := sdktrace.NewTracerProvider(sdktrace.WithBatcher(discard{}))
	defer floor.Shutdown(context.Background())
	tracer := floor.Tracer("floor")
	bare := func() {
		call(plain)()
		for range spans {
			_, sp := tracer.Start(ctx, "span")
			sp.End()
		}
	}
	s := interleaved(b, []func(){call(plain), call(observed), call(quiet), call(audited), call(counted), call(traced), bare, call(untraced)})
	plainMicros(b, s)
	b.ReportMetric(float64(spans), "tracing-spans")
	for k, name := range map[int]string{1: "observed", 2: "idle", 3: "audit", 4: "metrics", 5: "tracing", 6: "sdk-floor", 7: "untraced"} {
		added(b, s, k, name)
	}
}

// spansPerCall is how many spans one traced call of the benchmark makes.
func spansPerCall(b *testing.B, w *world, args json.RawMessage) int {
	return spansPerCallWith(b, w, args, false)
}

// spansPerCallWith is spansPerCall, with a child span per link when
// linkSpans.
func spansPerCallWith(b *testing.B, w *world, args json.RawMessage, linkSpans bool) int {
	exp := tracetest.NewInMemoryExporter()
	tel, err := telemetry.New(context.Background(), telemetry.Options{Exporter: exp, LinkSpans: linkSpans, Getenv: func(string) string { return "" }})
	if err != nil {
		b.Fatal(err)
	}
	defer tel.Shutdown(context.Background())
	h := w.host(b, benchAgent, engine.Options{Telemetry: tel})
	if _, err := h.CallTool(ctx, "bench", "mcp_ts_echo", args, nil); err != nil {
		b.Fatal(err)
	}
	if err := tel.Flush(context.Background()); err != nil {
		b.Fatal(err)
	}
	return len(exp.GetSpans())
}
