package engine_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/engine"
	"github.com/nexus-mcp/nexus/internal/telemetry"
)

const (
	traceID  = "4bf92f3577b34da6a3ce929d0e0e4736"
	incoming = "00-" + traceID + "-00f067aa0ba902b7-01"
)

// traceWorld is a server "gh" with a tool and a resource, and the _meta
// of each request it read, by method.
func traceWorld(t *testing.T) (*world, func(method string) map[string]string) {
	w := newWorld()
	s := w.server("gh", echoTool("get_issue"))
	s.AddResource(mcp.Resource{URI: "file:///readme", Name: "readme"}, func(ctx context.Context, ss *mcp.ServerSession, uri string) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []mcp.ResourceContents{{URI: uri, Text: "hello"}}}, nil
	})
	var mu sync.Mutex
	seen := map[string]map[string]string{}
	w.tap = func(b []byte) {
		var m struct {
			Method string
			Params struct {
				Meta map[string]json.RawMessage `json:"_meta"`
			}
		}
		if json.Unmarshal(b, &m) != nil || m.Method == "" {
			return
		}
		got := map[string]string{}
		for _, k := range telemetry.Keys {
			if raw, ok := m.Params.Meta[k]; ok {
				var v string
				if err := json.Unmarshal(raw, &v); err != nil {
					t.Errorf("%s: _meta[%q] is not a string: %s", m.Method, k, raw)
				}
				got[k] = v
			}
		}
		mu.Lock()
		seen[m.Method] = got
		mu.Unlock()
	}
	return w, func(method string) map[string]string {
		mu.Lock()
		defer mu.Unlock()
		return seen[method]
	}
}

// An incoming traceparent, tracestate and baggage continue into the
// _meta of what the host sends upstream (tools/call and resources/read),
// the request's span as the parent; the span is one, with each link an
// event on it and the conventions' attributes; with link_spans the links
// are child spans instead.
func TestTraceContinues(t *testing.T) {
	for _, linkSpans := range []bool{false, true} {
		w, upstream := traceWorld(t)
		exp := tracetest.NewInMemoryExporter()
		tel, err := telemetry.New(context.Background(), telemetry.Options{Exporter: exp, LinkSpans: linkSpans, Getenv: func(string) string { return "" }})
		if err != nil {
			t.Fatal(err)
		}
		h := w.host(t, yolo, engine.Options{Telemetry: tel})
		in := map[string]string{"traceparent": incoming, "tracestate": "vendor=abc", "baggage": "tenant=acme"}
		cctx := engine.WithSession(engine.WithTraceContext(ctx, in), "sess-1")
		cctx = mcp.WithRequestMeta(mcp.WithRelatedRequest(cctx, json.RawMessage(`7`)), &mcp.RequestMeta{ProtocolVersion: mcp.Version20260728})
		if _, err := h.CallTool(cctx, "y", "gh.get_issue", map[string]any{"message": "hi"}, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := h.ReadResource(engine.WithTraceContext(ctx, in), "y", "gh", "file:///readme"); err != nil {
			t.Fatal(err)
		}
		if err := tel.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
		var call, read *tracetest.SpanStub
		spans := exp.GetSpans()
		for i, sp := range spans {
			switch sp.Name {
			case "tools/call get_issue":
				call = &spans[i]
			case "resources/read":
				read = &spans[i]
			}
		}
		if call == nil || read == nil {
			t.Fatalf("link spans %v: no request span among %d", linkSpans, len(spans))
		}
		for method, sp := range map[string]*tracetest.SpanStub{"tools/call": call, "resources/read": read} {
			up := upstream(method)
			if want := "00-" + traceID + "-" + sp.SpanContext.SpanID().String() + "-01"; up["traceparent"] != want {
				t.Errorf("%s: upstream traceparent %q, want %q (the request's span)", method, up["traceparent"], want)
			}
			if up["tracestate"] != "vendor=abc" || up["baggage"] != "tenant=acme" {
				t.Errorf("%s: upstream _meta %v", method, up)
			}
			if sp.Parent.SpanID().String() != "00f067aa0ba902b7" {
				t.Errorf("%s: parent %s", method, sp.Parent.SpanID())
			}
		}
		attrs := map[string]string{}
		for _, a := range call.Attributes {
			attrs[string(a.Key)] = a.Value.Emit()
		}
		for k, v := range map[string]string{"mcp.method.name": "tools/call", "gen_ai.tool.name": "get_issue", "mcp.session.id": "sess-1",
			"mcp.protocol.version": "2026-07-28", "jsonrpc.request.id": "7", "nexus.decision": "allow", "nexus.server": "gh"} {
			if attrs[k] != v {
				t.Errorf("%s = %q, want %q (all: %v)", k, attrs[k], v, attrs)
			}
		}
		if linkSpans {
			if len(call.Events) != 0 || len(spans) < 4 {
				t.Errorf("link spans: %d spans, %d events on the call's", len(spans), len(call.Events))
			}
			for _, sp := range spans {
				if strings.HasPrefix(sp.Name, "nexus.link ") && sp.Parent.SpanID() != call.SpanContext.SpanID() && sp.Parent.SpanID() != read.SpanContext.SpanID() {
					t.Errorf("%s is no request's child", sp.Name)
				}
			}
		} else {
			if len(spans) != 2 || len(call.Events) == 0 {
				t.Errorf("by default: %d spans (want one per request), %d events on the call's", len(spans), len(call.Events))
			}
		}
		tel.Shutdown(context.Background())
	}
}

// A malformed or oversized trace context fails no call: the request's
// span starts a trace of its own, and nothing of the bad context goes
// upstream.
func TestTraceMalformed(t *testing.T) {
	w, upstream := traceWorld(t)
	exp := tracetest.NewInMemoryExporter()
	tel, err := telemetry.New(context.Background(), telemetry.Options{Exporter: exp, Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	defer tel.Shutdown(context.Background())
	h := w.host(t, yolo, engine.Options{Telemetry: tel})
	for _, in := range []map[string]string{
		{"traceparent": "00-zz-00f067aa0ba902b7-01", "tracestate": "vendor=abc"},
		{"traceparent": incoming, "tracestate": strings.Repeat("k=v,", 40) + "k=v", "baggage": "b=" + strings.Repeat("x", 9000)},
		{"traceparent": strings.Repeat("0", 5000)},
	} {
		if _, err := h.CallTool(engine.WithTraceContext(ctx, in), "y", "gh.get_issue", map[string]any{"message": "hi"}, nil); err != nil {
			t.Fatalf("%v: %v", in, err)
		}
		up := upstream("tools/call")
		if up["tracestate"] != "" || up["baggage"] != "" || up["traceparent"] == "" {
			t.Errorf("%.60v: upstream _meta %v", in, up)
		}
		if in["traceparent"] != incoming && strings.Contains(up["traceparent"], traceID) {
			t.Errorf("a malformed traceparent was continued: %s", up["traceparent"])
		}
		if in["traceparent"] == incoming && !strings.Contains(up["traceparent"], traceID) {
			t.Errorf("a good traceparent beside a bad tracestate was not continued: %s", up["traceparent"])
		}
	}
}
