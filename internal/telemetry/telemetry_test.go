package telemetry

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

const parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

// A request's span continues the traceparent it came with, each link is a
// child with its own times, and the context passed upstream names the
// request's span.
func TestSpans(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tel, err := New(context.Background(), Options{Exporter: exp, Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, sp := tel.Start(context.Background(), "tools/call", map[string]string{"traceparent": parent})
	start := time.Now()
	tel.Steps(ctx, []Step{{Link: "permission", Action: "allow", Start: start, Duration: time.Microsecond},
		{Link: "no-delete", Source: "nexus.hcl:3", Action: "deny", Start: start.Add(time.Microsecond), Duration: 2 * time.Microsecond}})
	up := map[string]string{}
	tel.Inject(ctx, up)
	End(sp, Request{Method: "tools/call", Tool: "echo", Session: "s1", Decision: "deny", Server: "github"}, nil)
	tel.tp.ForceFlush(context.Background()) // Shutdown would empty the in-memory exporter
	spans := exp.GetSpans()
	if len(spans) != 3 {
		t.Fatalf("%d spans", len(spans))
	}
	root := spans[2]
	if root.Name != "tools/call echo" || root.SpanContext.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" || root.Parent.SpanID().String() != "00f067aa0ba902b7" {
		t.Errorf("root %s trace %s parent %s", root.Name, root.SpanContext.TraceID(), root.Parent.SpanID())
	}
	for _, c := range spans[:2] {
		if c.Parent.SpanID() != root.SpanContext.SpanID() || c.Parent.TraceID() != root.SpanContext.TraceID() {
			t.Errorf("%s is not a child of the request's span", c.Name)
		}
	}
	if spans[1].Name != "nexus.link no-delete" || spans[1].EndTime.Sub(spans[1].StartTime) != 2*time.Microsecond {
		t.Errorf("link span %s %v", spans[1].Name, spans[1].EndTime.Sub(spans[1].StartTime))
	}
	if !strings.Contains(up["traceparent"], "4bf92f3577b34da6a3ce929d0e0e4736-"+root.SpanContext.SpanID().String()) {
		t.Errorf("upstream traceparent %q", up["traceparent"])
	}
	var attrs []string
	for _, a := range root.Attributes {
		attrs = append(attrs, string(a.Key)+"="+a.Value.String())
	}
	got := strings.Join(attrs, " ")
	for _, want := range []string{"mcp.method.name=tools/call", "gen_ai.tool.name=echo", "gen_ai.operation.name=execute_tool", "mcp.session.id=s1", "nexus.decision=deny"} {
		if !strings.Contains(got, want) {
			t.Errorf("attributes %s lack %s", got, want)
		}
	}
}

// Without an exporter, tracing is off and Start hands back a span that
// records nothing.
func TestOff(t *testing.T) {
	tel, err := New(context.Background(), Options{Getenv: func(string) string { return "" }})
	if err != nil || tel.Tracing() || tel.Metrics() != nil {
		t.Fatal(err)
	}
	_, sp := tel.Start(context.Background(), "x", nil)
	if sp.IsRecording() {
		t.Error("a span records with tracing off")
	}
	var none *Telemetry
	if none.Tracing() || none.Metrics() != nil {
		t.Error("nil telemetry")
	}
	if _, err := New(context.Background(), Options{Tracing: true, Protocol: "carrier-pigeon"}); err == nil || !strings.Contains(err.Error(), `"http/protobuf" or "grpc"`) {
		t.Errorf("a bad protocol: %v", err)
	}
}

// The real OTLP/HTTP exporter reaches an in-process receiver, configured
// by the standard environment variable.
func TestOTLPHTTP(t *testing.T) {
	var mu sync.Mutex
	var got []*collectortrace.ExportTraceServiceRequest
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		req := &collectortrace.ExportTraceServiceRequest{}
		if err := proto.Unmarshal(b, req); err != nil {
			t.Errorf("%s: %v", r.URL.Path, err)
		}
		mu.Lock()
		got = append(got, req)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		b, _ = proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
		w.Write(b)
	}))
	defer srv.Close()
	env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL, "OTEL_SERVICE_NAME": "nexus-test"}
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL) // the exporter reads it itself
	tel, err := New(context.Background(), Options{Getenv: func(k string) string { return env[k] }})
	if err != nil || !tel.Tracing() {
		t.Fatal(err)
	}
	ctx, sp := tel.Start(context.Background(), "tools/call", map[string]string{"traceparent": parent})
	tel.Steps(ctx, []Step{{Link: "schema", Action: "allow", Start: time.Now(), Duration: time.Microsecond}})
	End(sp, Request{Method: "tools/call", Decision: "allow", Server: "github"}, nil)
	sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := tel.Shutdown(sctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	n := 0
	for _, req := range got {
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					n++
					if string(s.TraceId) != string([]byte{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36}) {
						t.Errorf("span %s in another trace", s.Name)
					}
				}
			}
		}
	}
	if n != 2 {
		t.Errorf("%d spans received", n)
	}
}

// The metrics scrape parses as Prometheus text and counts what happened.
func TestMetrics(t *testing.T) {
	m := NewMetrics()
	m.Request("tools/call", "github", "get_issue", "allow", []Step{{Link: "permission", Action: "allow", Duration: 3 * time.Microsecond}})
	m.Request("tools/call", "github", "delete_repo", "deny", []Step{{Link: "no-delete", Action: "deny", Duration: time.Microsecond}})
	m.Request("tools/call", "github", "get_issue", "allow", []Step{{Link: "flaky", Action: "error", Duration: time.Millisecond}})
	m.Upstream("github", true)
	m.Upstream("github", false)
	m.Upstream("github", true)
	m.Sessions(2)
	m.Sessions(-1)
	m.AuditDropped(func() uint64 { return 7 })
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(rec.Body)
	if err != nil {
		t.Fatal(err)
	}
	value := func(name string, labels map[string]string) float64 {
		f := fams[name]
		if f == nil {
			t.Fatalf("no %s", name)
		}
	next:
		for _, mm := range f.Metric {
			for _, l := range mm.Label {
				if v, ok := labels[l.GetName()]; ok && v != l.GetValue() {
					continue next
				}
			}
			switch {
			case mm.Counter != nil:
				return mm.Counter.GetValue()
			case mm.Gauge != nil:
				return mm.Gauge.GetValue()
			case mm.Histogram != nil:
				return float64(mm.Histogram.GetSampleCount())
			}
		}
		return -1
	}
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"nexus_requests_total", map[string]string{"tool": "get_issue", "decision": "allow"}, 2},
		{"nexus_requests_total", map[string]string{"tool": "delete_repo", "decision": "deny"}, 1},
		{"nexus_link_duration_seconds", map[string]string{"link": "permission"}, 1},
		{"nexus_link_errors_total", map[string]string{"link": "flaky"}, 1},
		{"nexus_upstream_up", map[string]string{"server": "github"}, 1},
		{"nexus_upstream_restarts_total", map[string]string{"server": "github"}, 1},
		{"nexus_downstream_sessions", nil, 1},
		{"nexus_audit_dropped_records", nil, 7},
	} {
		if got := value(c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
}
