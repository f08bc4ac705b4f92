package telemetry

import (
	"context"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
)

// Options configure Telemetry.
type Options struct {
	// Tracing turns traces on whatever the environment says; the OTLP
	// exporter then takes its endpoint from Endpoint or the standard
	// OTEL_EXPORTER_OTLP_* variables.
	Tracing bool
	// Endpoint of the OTLP receiver ("http://127.0.0.1:4318"); "" leaves
	// it to OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT.
	Endpoint string
	// Protocol is "http/protobuf" (the default) or "grpc"; "" reads
	// OTEL_EXPORTER_OTLP_(TRACES_)PROTOCOL.
	Protocol string
	// ServiceName names the process in traces (default "nexus", or
	// OTEL_SERVICE_NAME).
	ServiceName string
	// Metrics keeps Prometheus metrics (Handler serves them).
	Metrics bool
	// LinkSpans makes each link of the chain a child span of the
	// request's span; by default a link is an event on it (one span per
	// traced call), which costs a fraction of a span.
	LinkSpans bool
	// Exporter replaces the OTLP exporter (tests: an in-memory one).
	Exporter sdktrace.SpanExporter
	// Getenv reads the environment (default os.Getenv).
	Getenv func(string) string
}

// Telemetry is the process's traces and metrics. A nil *Telemetry, or
// one with neither on, costs a call nothing but a nil check.
type Telemetry struct {
	tp        *sdktrace.TracerProvider
	tracer    trace.Tracer
	prop      propagation.TextMapPropagator
	metrics   *Metrics
	linkSpans bool
	names     sync.Map // link -> its span name
}

// New sets up what o and the environment ask for: tracing when
// o.Tracing, o.Exporter, OTEL_TRACES_EXPORTER=otlp or an OTLP endpoint
// variable says so (OTEL_TRACES_EXPORTER=none turns it off), metrics
// when o.Metrics.
func New(ctx context.Context, o Options) (*Telemetry, error) {
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	t := &Telemetry{prop: propagation.TraceContext{}, linkSpans: o.LinkSpans}
	if o.Metrics {
		t.metrics = NewMetrics()
	}
	if !tracingWanted(o, getenv) {
		return t, nil
	}
	exp := o.Exporter
	if exp == nil {
		var err error
		if exp, err = otlpExporter(ctx, o, getenv); err != nil {
			return nil, err
		}
	}
	name := o.ServiceName
	if name == "" {
		name = getenv("OTEL_SERVICE_NAME")
	}
	if name == "" {
		name = "nexus"
	}
	res := resource.NewWithAttributes(semconv.SchemaURL, semconv.ServiceName(name))
	t.tp = sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	t.tracer = t.tp.Tracer("github.com/nexus-mcp/nexus/host")
	return t, nil
}

func tracingWanted(o Options, getenv func(string) string) bool {
	switch strings.ToLower(strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER"))) {
	case "none":
		return false
	case "otlp":
		return true
	}
	return o.Tracing || o.Exporter != nil || o.Endpoint != "" ||
		getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// otlpExporter makes the OTLP exporter the options and environment ask
// for; the exporters read the rest of OTEL_EXPORTER_OTLP_* themselves.
func otlpExporter(ctx context.Context, o Options, getenv func(string) string) (sdktrace.SpanExporter, error) {
	proto := o.Protocol
	for _, k := range []string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
		if proto == "" {
			proto = strings.TrimSpace(getenv(k))
		}
	}
	switch proto {
	case "", "http/protobuf":
		var opts []otlptracehttp.Option
		if o.Endpoint != "" {
			opts = append(opts, otlptracehttp.WithEndpointURL(o.Endpoint))
		}
		return otlptracehttp.New(ctx, opts...)
	case "grpc":
		var opts []otlptracegrpc.Option
		if o.Endpoint != "" {
			opts = append(opts, otlptracegrpc.WithEndpointURL(o.Endpoint))
		}
		return otlptracegrpc.New(ctx, opts...)
	}
	return nil, fmt.Errorf("telemetry: OTLP protocol %q is not one this Nexus speaks; use \"http/protobuf\" or \"grpc\"", proto)
}

// Tracing reports whether spans are made.
func (t *Telemetry) Tracing() bool { return t != nil && t.tracer != nil }

// Metrics returns the metrics, or nil when they are off.
func (t *Telemetry) Metrics() *Metrics {
	if t == nil {
		return nil
	}
	return t.metrics
}

// Keys are the _meta keys of the trace context, in both eras (the
// 2026-07-28 revision reserves them for it, SEP-414): W3C Trace Context's
// traceparent and tracestate, and W3C Baggage.
var Keys = [...]string{"traceparent", "tracestate", "baggage"}

// The W3C limits on what a request may carry: a tracestate of at most 32
// list members in 512 bytes, a baggage of at most 180 members in 8192
// bytes; a traceparent is 55 bytes in version 00, and later versions may
// only append to it.
const (
	MaxTraceparent      = 256
	MaxTracestate       = 512
	MaxTracestateMember = 32
	MaxBaggage          = 8192
	MaxBaggageMembers   = 180
)

// Fits reports whether v is within the W3C limits for the trace context
// key k (one of Keys); a value over them is dropped, never an error: a
// request's trace context is advice, and a bad one must not fail a call.
func Fits(k, v string) bool {
	switch k {
	case "traceparent":
		return v != "" && len(v) <= MaxTraceparent
	case "tracestate":
		return v != "" && len(v) <= MaxTracestate && strings.Count(v, ",") < MaxTracestateMember
	case "baggage":
		return v != "" && len(v) <= MaxBaggage && strings.Count(v, ",") < MaxBaggageMembers
	}
	return false
}

// Start begins a request's span, continuing the W3C trace context carried
// in meta (a request's _meta: Keys) when it has one. Values over the W3C
// limits are left out; a malformed traceparent starts a new trace, a
// malformed tracestate is dropped, and of a baggage only its well-formed
// members are kept. Without tracing it returns ctx and a span that
// records nothing. The span's attributes are set once, by End, when the
// request's tool and decision are known: setting them twice doubles the
// SDK's copies.
func (t *Telemetry) Start(ctx context.Context, name string, meta map[string]string) (context.Context, trace.Span) {
	if !t.Tracing() {
		return ctx, trace.SpanFromContext(context.Background())
	}
	if len(meta) > 0 {
		ctx = t.prop.Extract(ctx, bounded(meta))
		// Baggage is parsed here rather than by its propagator, which
		// logs each malformed member through the global error handler: a
		// client could fill the log with them.
		if v := meta["baggage"]; Fits("baggage", v) {
			if b, _ := baggage.Parse(v); b.Len() > 0 {
				ctx = baggage.ContextWithBaggage(ctx, b)
			}
		}
	}
	return t.tracer.Start(ctx, name, serverKind)
}

// bounded is a carrier of meta's trace context within the W3C limits.
type bounded map[string]string

func (m bounded) Get(k string) string {
	if v := m[k]; Fits(k, v) {
		return v
	}
	return ""
}
func (m bounded) Set(k, v string) {}
func (m bounded) Keys() []string  { return Keys[:] }

// serverKind is made once: an option is an interface, and making it per
// request is an allocation.
var serverKind = trace.WithSpanKind(trace.SpanKindServer)

// Traceparent is ctx's span as a W3C traceparent value in a JSON string,
// or nil without tracing: what an upstream request's _meta carries (with
// Tracestate and Baggage when the trace has them).
func (t *Telemetry) Traceparent(ctx context.Context) []byte {
	if !t.Tracing() {
		return nil
	}
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return nil
	}
	tid, sid := sc.TraceID(), sc.SpanID()
	b := make([]byte, 0, 57)
	b = append(b, `"00-`...)
	b = hex.AppendEncode(b, tid[:])
	b = append(b, '-')
	b = hex.AppendEncode(b, sid[:])
	if sc.IsSampled() {
		return append(b, `-01"`...)
	}
	return append(b, `-00"`...)
}

// Tracestate is ctx's span's W3C tracestate, "" when it has none or
// without tracing.
func (t *Telemetry) Tracestate(ctx context.Context) string {
	if !t.Tracing() {
		return ""
	}
	return trace.SpanContextFromContext(ctx).TraceState().String()
}

// Baggage is ctx's W3C baggage (what the request brought), "" when it
// has none or without tracing.
func (t *Telemetry) Baggage(ctx context.Context) string {
	if !t.Tracing() {
		return ""
	}
	return baggage.FromContext(ctx).String()
}

// Inject writes ctx's trace context (Keys) into meta, for an upstream
// request's _meta; it does nothing without tracing.
func (t *Telemetry) Inject(ctx context.Context, meta map[string]string) {
	if t.Tracing() {
		t.prop.Inject(ctx, propagation.MapCarrier(meta))
		if b := t.Baggage(ctx); b != "" {
			meta["baggage"] = b
		}
	}
}

// Step is one link of the chain: it ran from Start for Duration and
// ended with Action.
type Step struct {
	Link, Source, Action string
	Method               string // what the link decided on (a call's review of the tool's listing is tools/list)
	Start                time.Time
	Duration             time.Duration
}

// Steps records the chain's steps on the request's span (which ctx
// carries): by default each as an event named for the link, with its
// decision and duration, at the time it started; with
// Options.LinkSpans each as a child span with its own times.
func (t *Telemetry) Steps(ctx context.Context, steps []Step) {
	if !t.Tracing() {
		return
	}
	if !t.linkSpans {
		t.events(trace.SpanFromContext(ctx), steps)
		return
	}
	kv := attrBufs.Get().(*attrBuf)
	defer kv.put()
	for _, s := range steps {
		if s.Start.IsZero() {
			continue
		}
		// Attributes set after Start are copied once; given to Start as
		// an option, the SDK copies them twice.
		_, sp := t.tracer.Start(ctx, t.linkName(s.Link), trace.WithTimestamp(s.Start))
		kv[0], kv[1] = attribute.String("nexus.link", s.Link), attribute.String("nexus.decision", s.Action)
		kv[2], kv[3] = attribute.String("nexus.link.source", s.Source), attribute.String("nexus.link.method", s.Method)
		sp.SetAttributes(kv[:4]...)
		if s.Action == "deny" || s.Action == "error" {
			sp.SetStatus(codes.Error, s.Action)
		}
		sp.End(trace.WithTimestamp(s.Start.Add(s.Duration)))
	}
}

// events adds the steps to sp as events, each named for its link
// ("nexus.link permission", as a link's child span is) with the link, its
// decision and its duration in nanoseconds, and where the link is
// defined when it did more than allow. Few attributes: the SDK copies
// each event's twice. One buffer serves them all.
func (t *Telemetry) events(sp trace.Span, steps []Step) {
	if !sp.IsRecording() {
		return
	}
	kv := attrBufs.Get().(*attrBuf)
	defer kv.put()
	for _, s := range steps {
		if s.Start.IsZero() {
			continue
		}
		a := append(kv[:0], attribute.String("nexus.link", s.Link), attribute.String("nexus.decision", s.Action),
			attribute.Int64("nexus.link.duration_ns", s.Duration.Nanoseconds()))
		if s.Source != "" && s.Action != "allow" {
			a = append(a, attribute.String("nexus.link.source", s.Source))
		}
		sp.AddEvent(t.linkName(s.Link), trace.WithTimestamp(s.Start), trace.WithAttributes(a...))
	}
}

// attrBuf holds the attributes handed to SetAttributes, which copies
// them: a slice passed through the Span interface would otherwise be
// allocated for every span.
type attrBuf [12]attribute.KeyValue

var attrBufs = sync.Pool{New: func() any { return new(attrBuf) }}

func (b *attrBuf) put() {
	clear(b[:]) // strings of a past request are not kept alive
	attrBufs.Put(b)
}

// linkName is a link's span name, made once per link rather than per
// request.
func (t *Telemetry) linkName(link string) string {
	if v, ok := t.names.Load(link); ok {
		return v.(string)
	}
	name := "nexus.link " + link
	t.names.Store(link, name)
	return name
}

// Request is what a request's span says once it is over.
type Request struct {
	Method string
	// Tool or Prompt, with the method, names the span ("tools/call
	// get_issue"), as the conventions ask: {mcp.method.name} {target}.
	Tool, Prompt string
	URI, Session string
	// ProtocolVersion is the MCP version the request came in on.
	ProtocolVersion string
	// RequestID is the JSON-RPC id of the request served, as its JSON
	// text ("7", "\"a\"").
	RequestID string
	// Transport is network.transport: "pipe" (stdio) or "tcp" (HTTP).
	Transport string
	// ErrorType is error.type for a failed request: a JSON-RPC error
	// code, "tool_error" for a tool result with isError, or another
	// low-cardinality name; "" with an error says "_OTHER".
	ErrorType string
	Decision  string
	Server    string
}

// End ends a request's span with its attributes, after the OpenTelemetry
// semantic conventions for MCP (mcp.method.name, mcp.session.id,
// mcp.protocol.version, mcp.resource.uri, jsonrpc.request.id,
// network.transport, error.type, gen_ai.tool.name, gen_ai.prompt.name,
// gen_ai.operation.name), and what they have no name for under nexus.*:
// the chain's decision and the upstream server.
func End(sp trace.Span, r Request, err error) {
	if !sp.IsRecording() {
		return
	}
	if name := r.Tool + r.Prompt; name != "" {
		sp.SetName(r.Method + " " + name)
	}
	buf := attrBufs.Get().(*attrBuf)
	defer buf.put()
	a := append(buf[:0], semconv.McpMethodNameKey.String(r.Method))
	if r.Tool != "" {
		a = append(a, semconv.GenAIToolNameKey.String(r.Tool), semconv.GenAIOperationNameExecuteTool)
	}
	if r.Prompt != "" {
		a = append(a, semconv.GenAIPromptNameKey.String(r.Prompt))
	}
	if r.URI != "" {
		a = append(a, semconv.McpResourceURIKey.String(r.URI))
	}
	if r.Session != "" {
		a = append(a, semconv.McpSessionIDKey.String(r.Session))
	}
	if r.ProtocolVersion != "" {
		a = append(a, semconv.McpProtocolVersionKey.String(r.ProtocolVersion))
	}
	if r.RequestID != "" {
		a = append(a, semconv.JSONRPCRequestIDKey.String(r.RequestID))
	}
	if r.Transport != "" {
		a = append(a, semconv.NetworkTransportKey.String(r.Transport))
	}
	switch {
	case r.ErrorType != "":
		a = append(a, semconv.ErrorTypeKey.String(r.ErrorType))
	case err != nil:
		a = append(a, semconv.ErrorTypeOther)
	}
	a = append(a, attribute.String("nexus.decision", r.Decision), attribute.String("nexus.server", r.Server))
	sp.SetAttributes(a...)
	if err != nil {
		sp.SetStatus(codes.Error, err.Error())
	}
	sp.End()
}

// Flush sends the spans queued so far.
func (t *Telemetry) Flush(ctx context.Context) error {
	if t == nil || t.tp == nil {
		return nil
	}
	return t.tp.ForceFlush(ctx)
}

// Shutdown sends the spans still queued and stops.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	if t == nil || t.tp == nil {
		return nil
	}
	return t.tp.Shutdown(ctx)
}

// Metrics are the Prometheus metrics of a host and its gateway.
type Metrics struct {
	reg      *prometheus.Registry
	calls    *prometheus.CounterVec
	links    *prometheus.HistogramVec
	errors   *prometheus.CounterVec
	up       *prometheus.GaugeVec
	restarts *prometheus.CounterVec
	sessions prometheus.Gauge
	dropped  prometheus.GaugeFunc
	dropFn   atomic.Pointer[func() uint64]

	mu    sync.Mutex
	state map[string]bool // each upstream's last state, for restarts
}

// NewMetrics makes the metrics, in a registry of their own.
func NewMetrics() *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry(), state: map[string]bool{}}
	m.calls = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "nexus_requests_total",
		Help: "Requests through the chain (tool calls, reads, prompts, servers' requests), by method, server, tool and decision."},
		[]string{"method", "server", "tool", "decision"})
	m.links = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "nexus_link_duration_seconds",
		Help:    "Time each link of the chain took to decide, by link and action.",
		Buckets: []float64{5e-6, 1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 5e-3, 0.025, 0.1, 0.5}},
		[]string{"link", "action"})
	m.errors = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "nexus_link_errors_total",
		Help: "Links that failed to decide (a trap, a timeout, an invalid decision), by link."}, []string{"link"})
	m.up = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "nexus_upstream_up",
		Help: "1 while an upstream server's session is up, 0 while it is down."}, []string{"server"})
	m.restarts = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "nexus_upstream_restarts_total",
		Help: "Upstream sessions that ended and were opened again, by server."}, []string{"server"})
	m.sessions = prometheus.NewGauge(prometheus.GaugeOpts{Name: "nexus_downstream_sessions", Help: "Clients connected to nexus serve."})
	m.dropped = prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "nexus_audit_dropped_records",
		Help: "Audit records dropped since start (queue full or the log unwritable)."}, func() float64 {
		if fn := m.dropFn.Load(); fn != nil {
			return float64((*fn)())
		}
		return 0
	})
	// The runtime's and the process's own figures (goroutines, heap, open
	// descriptors, resident memory): what a soak or an incident looks at
	// first to tell a leak from load.
	m.reg.MustRegister(m.calls, m.links, m.errors, m.up, m.restarts, m.sessions, m.dropped,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// Request counts one request and its links' times.
func (m *Metrics) Request(method, server, tool, decision string, steps []Step) {
	if m == nil {
		return
	}
	m.calls.WithLabelValues(method, server, tool, decision).Inc()
	for _, s := range steps {
		if s.Duration > 0 {
			m.links.WithLabelValues(s.Link, s.Action).Observe(s.Duration.Seconds())
		}
		if s.Action == "error" {
			m.errors.WithLabelValues(s.Link).Inc()
		}
	}
}

// Upstream records a server's session's state; up after down is a
// restart.
func (m *Metrics) Upstream(server string, up bool) {
	if m == nil {
		return
	}
	m.mu.Lock()
	was, seen := m.state[server]
	m.state[server] = up
	m.mu.Unlock()
	if up {
		m.up.WithLabelValues(server).Set(1)
		if seen && !was {
			m.restarts.WithLabelValues(server).Inc()
		}
	} else {
		m.up.WithLabelValues(server).Set(0)
	}
}

// Sessions adds n to the count of downstream sessions.
func (m *Metrics) Sessions(n int) {
	if m != nil {
		m.sessions.Add(float64(n))
	}
}

// AuditDropped has the metrics read the audit log's drop count from fn.
func (m *Metrics) AuditDropped(fn func() uint64) {
	if m != nil {
		m.dropFn.Store(&fn)
	}
}
