package telemetry

import (
	"context"
	"errors"
	"fmt"
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

// A request's span continues the traceparent it came with, with
// LinkSpans each link is a child with its own times, and the context
// passed upstream names the request's span.
func TestSpans(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tel, err := New(context.Background(), Options{Exporter: exp, LinkSpans: true, Getenv: func(string) string { return "" }})
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
	if n != 1 { // the link is an event on the request's span
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

// By default a request is one span: each link is an event on it, with
// the link's name, decision and duration, at the time the link started.
func TestLinkEvents(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tel, err := New(context.Background(), Options{Exporter: exp, Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, sp := tel.Start(context.Background(), "tools/call", nil)
	start := time.Now()
	tel.Steps(ctx, []Step{{Link: "permission", Action: "allow", Start: start, Duration: time.Microsecond},
		{Link: "no-delete", Source: "nexus.hcl:3", Action: "deny", Start: start.Add(time.Microsecond), Duration: 2 * time.Microsecond}})
	End(sp, Request{Method: "tools/call", Tool: "echo", Decision: "deny", Server: "github"}, nil)
	tel.tp.ForceFlush(context.Background())
	spans := exp.GetSpans()
	if len(spans) != 1 {
		t.Fatalf("%d spans, want the request's alone", len(spans))
	}
	ev := spans[0].Events
	if len(ev) != 2 {
		t.Fatalf("%d events", len(ev))
	}
	e := ev[1]
	got := map[string]string{}
	for _, a := range e.Attributes {
		got[string(a.Key)] = a.Value.Emit()
	}
	if e.Name != "nexus.link no-delete" || !e.Time.Equal(start.Add(time.Microsecond)) || got["nexus.link"] != "no-delete" ||
		got["nexus.decision"] != "deny" || got["nexus.link.duration_ns"] != "2000" || got["nexus.link.source"] != "nexus.hcl:3" {
		t.Errorf("event %s at %v: %v", e.Name, e.Time.Sub(start), got)
	}
}

// traceparent, tracestate and baggage in a request's _meta are continued,
// and what goes upstream carries all three, the request's span as parent.
func TestContinue(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tel, err := New(context.Background(), Options{Exporter: exp, Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	in := map[string]string{"traceparent": parent, "tracestate": "vendor=abc,other=x1", "baggage": "tenant=acme,region=eu%20west"}
	ctx, sp := tel.Start(context.Background(), "tools/call", in)
	up := map[string]string{}
	tel.Inject(ctx, up)
	ts, bag := tel.Tracestate(ctx), tel.Baggage(ctx)
	End(sp, Request{Method: "tools/call"}, nil)
	if ts != in["tracestate"] || up["tracestate"] != in["tracestate"] {
		t.Errorf("tracestate %q, upstream %q", ts, up["tracestate"])
	}
	for _, m := range []string{"tenant=acme", "region=eu%20west"} {
		if !strings.Contains(bag, m) || !strings.Contains(up["baggage"], m) {
			t.Errorf("baggage %q, upstream %q: lacks %s", bag, up["baggage"], m)
		}
	}
	if !strings.HasPrefix(up["traceparent"], "00-4bf92f3577b34da6a3ce929d0e0e4736-") || strings.Contains(up["traceparent"], "00f067aa0ba902b7") {
		t.Errorf("upstream traceparent %q", up["traceparent"])
	}
	if got := string(tel.Traceparent(ctx)); got != `"`+up["traceparent"]+`"` {
		t.Errorf("Traceparent %s, Inject %s", got, up["traceparent"])
	}
}

// A malformed or oversized trace context is ignored, never an error: the
// request starts a trace of its own and carries nothing of it upstream.
func TestMalformed(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tel, err := New(context.Background(), Options{Exporter: exp, Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	many := func(n int, f string) string {
		m := make([]string, n)
		for i := range m {
			m[i] = fmt.Sprintf(f, i)
		}
		return strings.Join(m, ",")
	}
	for _, c := range []struct {
		name string
		in   map[string]string
		keep string // the trace id kept, "" for a new trace
	}{
		{"bad traceparent", map[string]string{"traceparent": "00-xyz-00f067aa0ba902b7-01", "tracestate": "a=b"}, ""},
		{"zero trace id", map[string]string{"traceparent": "00-00000000000000000000000000000000-00f067aa0ba902b7-01"}, ""},
		{"huge traceparent", map[string]string{"traceparent": parent + strings.Repeat("-x", 200)}, ""},
		{"tracestate of 33 members", map[string]string{"traceparent": parent, "tracestate": many(33, "k%d=v")}, "4bf92f3577b34da6a3ce929d0e0e4736"},
		{"tracestate over 512 bytes", map[string]string{"traceparent": parent, "tracestate": "k=" + strings.Repeat("v", 520)}, "4bf92f3577b34da6a3ce929d0e0e4736"},
		{"bad tracestate", map[string]string{"traceparent": parent, "tracestate": "==,,"}, "4bf92f3577b34da6a3ce929d0e0e4736"},
		{"baggage of 181 members", map[string]string{"traceparent": parent, "baggage": many(181, "k%d=v")}, "4bf92f3577b34da6a3ce929d0e0e4736"},
		{"baggage over 8192 bytes", map[string]string{"traceparent": parent, "baggage": "k=" + strings.Repeat("v", 8200)}, "4bf92f3577b34da6a3ce929d0e0e4736"},
		{"bad baggage", map[string]string{"traceparent": parent, "baggage": "=;;=="}, "4bf92f3577b34da6a3ce929d0e0e4736"},
	} {
		ctx, sp := tel.Start(context.Background(), "tools/call", c.in)
		sc := sp.SpanContext()
		up := map[string]string{}
		tel.Inject(ctx, up)
		End(sp, Request{Method: "tools/call"}, nil)
		if !sc.IsValid() {
			t.Errorf("%s: no span", c.name)
		}
		if c.keep == "" && sc.TraceID().String() == "4bf92f3577b34da6a3ce929d0e0e4736" || c.keep != "" && sc.TraceID().String() != c.keep {
			t.Errorf("%s: trace %s", c.name, sc.TraceID())
		}
		if up["tracestate"] != "" || up["baggage"] != "" {
			t.Errorf("%s: passed upstream: %v", c.name, up)
		}
	}
}

// The request's span carries the semantic conventions' attributes for
// MCP, and what they have no name for under nexus.*.
func TestSemconv(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tel, err := New(context.Background(), Options{Exporter: exp, Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	_, sp := tel.Start(context.Background(), "prompts/get", nil)
	End(sp, Request{Method: "prompts/get", Prompt: "review", Session: "s1", ProtocolVersion: "2026-07-28", RequestID: "7",
		Transport: "tcp", ErrorType: "-32602", Decision: "error", Server: "github"}, errors.New("no such prompt"))
	tel.tp.ForceFlush(context.Background())
	spans := exp.GetSpans()
	if len(spans) != 1 {
		t.Fatalf("%d spans", len(spans))
	}
	s := spans[0]
	got := map[string]string{}
	for _, a := range s.Attributes {
		got[string(a.Key)] = a.Value.Emit()
	}
	want := map[string]string{"mcp.method.name": "prompts/get", "gen_ai.prompt.name": "review", "mcp.session.id": "s1",
		"mcp.protocol.version": "2026-07-28", "jsonrpc.request.id": "7", "network.transport": "tcp", "error.type": "-32602",
		"nexus.decision": "error", "nexus.server": "github"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	if s.Name != "prompts/get review" || s.SpanKind.String() != "server" || s.Status.Code.String() != "Error" {
		t.Errorf("span %q kind %s status %s", s.Name, s.SpanKind, s.Status.Code)
	}
	_, sp = tel.Start(context.Background(), "tools/call", nil)
	End(sp, Request{Method: "tools/call", Tool: "echo"}, errors.New("boom"))
	tel.tp.ForceFlush(context.Background())
	for _, a := range exp.GetSpans()[1].Attributes {
		if a.Key == "error.type" && a.Value.Emit() != "_OTHER" {
			t.Errorf("error.type %s", a.Value.Emit())
		}
	}
}
