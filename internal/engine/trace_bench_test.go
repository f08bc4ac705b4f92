package engine_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/nexus-mcp/nexus/internal/engine"
	"github.com/nexus-mcp/nexus/internal/telemetry"
)

// BenchmarkTraceLinks: engine.CallTool on the in-process test server,
// continuing an incoming traceparent, tracestate and baggage, with each
// link of the chain an event on the request's one span (the default),
// with a child span per link (link_spans), and with tracing off,
// interleaved block by block. It reports what each adds to the call with
// tracing off (events-µs/-B, spans-µs/-B, and -cpu-µs), the medians of the
// per-block ratios (events-x and spans-x over off, spans-over-events-x),
// and the spans each traced call exports (events-spans, spans-spans).
// Run with -benchmem.
func BenchmarkTraceLinks(b *testing.B) {
	w := tsWorld()
	events, err := telemetry.New(context.Background(), telemetry.Options{Exporter: discard{}, Getenv: func(string) string { return "" }})
	if err != nil {
		b.Fatal(err)
	}
	defer events.Shutdown(context.Background())
	spans, err := telemetry.New(context.Background(), telemetry.Options{Exporter: discard{}, LinkSpans: true, Getenv: func(string) string { return "" }})
	if err != nil {
		b.Fatal(err)
	}
	defer spans.Shutdown(context.Background())
	off := w.host(b, benchAgent, engine.Options{})
	withEvents := w.host(b, benchAgent, engine.Options{Telemetry: events})
	withSpans := w.host(b, benchAgent, engine.Options{Telemetry: spans})
	tctx := engine.WithTraceContext(ctx, map[string]string{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		"tracestate": "vendor=abc", "baggage": "tenant=acme"})
	args := json.RawMessage(`{"message":"hello"}`)
	call := func(h *engine.Host) func() {
		return func() {
			if res, err := h.CallTool(tctx, "bench", "mcp_ts_echo", args, nil); err != nil || res.IsError {
				b.Fatal(err, res)
			}
		}
	}
	b.ReportAllocs()
	s := interleaved(b, []func(){call(off), call(withEvents), call(withSpans)})
	plainMicros(b, s)
	added(b, s, 1, "events")
	added(b, s, 2, "spans")
	ratio := func(k, base int) float64 {
		v := make([]float64, len(s[0]))
		for i := range v {
			v[i] = float64(s[k][i].wall) / float64(s[base][i].wall)
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	b.ReportMetric(ratio(1, 0), "events-x")
	b.ReportMetric(ratio(2, 0), "spans-x")
	b.ReportMetric(ratio(2, 1), "spans-over-events-x")
	b.ReportMetric(float64(spansPerCallWith(b, w, args, false)), "events-spans")
	b.ReportMetric(float64(spansPerCallWith(b, w, args, true)), "spans-spans")
}
