package gateway_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/config"
	"github.com/nexus-mcp/nexus/internal/engine"
	"github.com/nexus-mcp/nexus/internal/gateway"
	"github.com/nexus-mcp/nexus/internal/telemetry"
)

// sentConn shows what the host writes to an upstream server to sent.
type sentConn struct {
	mcp.Conn
	sent func([]byte)
}

func (c sentConn) WriteMessage(ctx context.Context, b []byte) error {
	c.sent(b)
	return c.Conn.WriteMessage(ctx, b)
}

// TestTraceMetaThrough: a client's tools/call with traceparent, tracestate
// and baggage in _meta reaches the upstream server with all three in its
// _meta, in the same trace under the gateway's span; a malformed set fails
// no call and passes nothing of itself on.
func TestTraceMetaThrough(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tel, err := telemetry.New(context.Background(), telemetry.Options{Exporter: exp, Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	// The requests whose trace context the test follows upstream.
	traced := []string{mcp.MethodToolsCall, mcp.MethodResourcesRead, mcp.MethodPromptsGet,
		mcp.MethodToolsList, mcp.MethodResourcesList, mcp.MethodResourcesTemplatesList, mcp.MethodPromptsList}
	var mu sync.Mutex
	var last map[string]string
	sentBy := map[string]map[string]string{} // method -> the trace keys it last carried upstream
	e := newEnvOpts(t, nil, func(o *engine.Options) {
		o.Telemetry = tel
		inner := o.Transport
		o.Transport = func(ctx context.Context, srv *config.Server) (mcp.Conn, error) {
			c, err := inner(ctx, srv)
			if err != nil {
				return nil, err
			}
			return sentConn{c, func(b []byte) {
				var m struct {
					Method string
					Params struct {
						Meta map[string]json.RawMessage `json:"_meta"`
					}
				}
				if json.Unmarshal(b, &m) != nil || !slices.Contains(traced, m.Method) {
					return
				}
				got := map[string]string{}
				for _, k := range telemetry.Keys {
					var v string
					if json.Unmarshal(m.Params.Meta[k], &v) == nil && v != "" {
						got[k] = v
					}
				}
				mu.Lock()
				if m.Method == mcp.MethodToolsCall {
					last = got
				}
				sentBy[m.Method] = got
				mu.Unlock()
			}}, nil
		}
	})
	c := e.connect("claude", mcp.ClientOptions{})
	ctx := ctxT(t)
	str := func(s string) json.RawMessage { b, _ := json.Marshal(s); return b }
	all := mcp.Meta{"traceparent": str("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"), "baggage": str("tenant=acme")}
	// Each list request continues the client's trace (its span), and as
	// far as the server that answers it when the list is fetched: first,
	// nothing listed before (but tools, listed as the connection opens).
	for _, method := range traced[3:] {
		if err := c.Peer().Call(ctx, method, map[string]any{"_meta": all}, nil); err != nil {
			t.Fatalf("%s: %v", method, err)
		}
		mu.Lock()
		got := sentBy[method]
		mu.Unlock()
		if method != mcp.MethodToolsList && (!strings.HasPrefix(got["traceparent"], "00-4bf92f3577b34da6a3ce929d0e0e4736-") || got["baggage"] != "tenant=acme") {
			t.Errorf("%s upstream trace context %v, want the client's trace and baggage", method, got)
		}
	}
	for _, tc := range []struct {
		name string
		meta mcp.Meta
		want map[string]string // what must reach upstream; traceparent by its trace id
	}{
		{"all three", mcp.Meta{"traceparent": str("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"), "tracestate": str("vendor=abc"), "baggage": str("tenant=acme")},
			map[string]string{"traceparent": "4bf92f3577b34da6a3ce929d0e0e4736", "tracestate": "vendor=abc", "baggage": "tenant=acme"}},
		{"malformed", mcp.Meta{"traceparent": str("00-nothex-00f067aa0ba902b7-01"), "tracestate": json.RawMessage(`{"a":1}`), "baggage": str(strings.Repeat("k=v,", 200) + "k=v")},
			map[string]string{}},
	} {
		if _, err := c.CallTool(ctx, "mcp_testserver_echo", map[string]string{"message": "hi"}, &mcp.CallOptions{Meta: tc.meta}); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		mu.Lock()
		got := last
		mu.Unlock()
		if got["traceparent"] == "" {
			t.Errorf("%s: no traceparent upstream: %v", tc.name, got)
		}
		if w := tc.want["traceparent"]; w != "" && !strings.HasPrefix(got["traceparent"], "00-"+w+"-") || w == "" && strings.Contains(got["traceparent"], "00f067aa0ba902b7") {
			t.Errorf("%s: upstream traceparent %q", tc.name, got["traceparent"])
		}
		for _, k := range []string{"tracestate", "baggage"} {
			if got[k] != tc.want[k] {
				t.Errorf("%s: upstream %s %q, want %q", tc.name, k, got[k], tc.want[k])
			}
		}
	}
	// A resources/read continues the client's trace as a call does.
	all = mcp.Meta{"traceparent": str("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"), "baggage": str("tenant=acme")}
	if _, err := c.ReadResourceWith(ctx, "file:///readme.txt", &mcp.CallOptions{Meta: all}); err != nil {
		t.Fatalf("resources/read: %v", err)
	}
	mu.Lock()
	read := sentBy[mcp.MethodResourcesRead]
	mu.Unlock()
	if !strings.HasPrefix(read["traceparent"], "00-4bf92f3577b34da6a3ce929d0e0e4736-") || read["baggage"] != "tenant=acme" {
		t.Errorf("resources/read upstream trace context %v, want the client's trace and baggage", read)
	}

	// So does a prompts/get.
	if _, err := c.GetPromptWith(ctx, "mcp_testserver_greeting", map[string]string{"name": "Ada"}, &mcp.CallOptions{Meta: all}); err != nil {
		t.Fatalf("prompts/get: %v", err)
	}
	mu.Lock()
	prompt := sentBy[mcp.MethodPromptsGet]
	mu.Unlock()
	if !strings.HasPrefix(prompt["traceparent"], "00-4bf92f3577b34da6a3ce929d0e0e4736-") || prompt["baggage"] != "tenant=acme" {
		t.Errorf("prompts/get upstream trace context %v, want the client's trace and baggage", prompt)
	}
	// A modern request's span says its own version.
	m := e.modern(t, "claude")
	if _, err := m.call(ctx, mcp.MethodToolsCall, map[string]any{"name": "mcp_testserver_echo", "arguments": map[string]string{"message": "modern"}}); err != nil {
		t.Fatal(err)
	}

	// The gateway's span names the client's request and session, as the
	// conventions ask, with the version the request came in on (the
	// legacy session's negotiated one, a modern request's own) and the
	// transport (an in-process pipe, as stdio: "pipe").
	if err := tel.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	n := 0
	var versions, lists []string
	for _, sp := range exp.GetSpans() {
		attrs := map[string]string{}
		for _, a := range sp.Attributes {
			attrs[string(a.Key)] = a.Value.Emit()
		}
		if attrs["network.transport"] != "pipe" || attrs["mcp.protocol.version"] == "" {
			t.Errorf("span %q: network.transport %q, mcp.protocol.version %q", sp.Name, attrs["network.transport"], attrs["mcp.protocol.version"])
		}
		if strings.HasSuffix(sp.Name, "/list") {
			lists = append(lists, sp.Name)
			if sp.SpanContext.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" || sp.Parent.SpanID().String() != "00f067aa0ba902b7" {
				t.Errorf("span %q is not in the client's trace: %s under %s", sp.Name, sp.SpanContext.TraceID(), sp.Parent.SpanID())
			}
		}
		if sp.Name != "tools/call echo" {
			continue
		}
		n++
		versions = append(versions, attrs["mcp.protocol.version"])
		if attrs["jsonrpc.request.id"] == "" || attrs["mcp.session.id"] == "" || attrs["mcp.method.name"] != "tools/call" || attrs["gen_ai.tool.name"] != "echo" {
			t.Errorf("span attributes %v", attrs)
		}
	}
	if want := []string{mcp.Version20251125, mcp.Version20251125, mcp.Version20260728}; !slices.Equal(versions, want) {
		t.Errorf("tools/call spans' versions %v, want %v", versions, want)
	}
	if n != 3 {
		t.Errorf("%d tools/call spans, want 3", n)
	}
	slices.Sort(lists)
	if want := []string{"prompts/list", "resources/list", "resources/templates/list", "tools/list"}; !slices.Equal(lists, want) {
		t.Errorf("list spans %v, want %v", lists, want)
	}
}

// Over streamable HTTP the spans say network.transport "tcp", with the
// version of the legacy session's initialize or of the modern request.
func TestTraceHTTPTransport(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tel, err := telemetry.New(context.Background(), telemetry.Options{Exporter: exp, Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnvOpts(t, nil, func(o *engine.Options) { o.Telemetry = tel })
	hh, err := e.g.HTTP(gateway.HTTPOptions{Agent: "claude"})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(hh)
	t.Cleanup(func() {
		hh.Close()
		srv.CloseClientConnections()
		srv.Close()
	})
	post := func(body string, hdr map[string]string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, srv.URL+gateway.EndpointPath, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusAccepted {
			t.Fatalf("%s: %d %s", body, resp.StatusCode, b)
		}
		return resp
	}
	sid := post(initBody, nil).Header.Get("Mcp-Session-Id")
	legacy := map[string]string{"Mcp-Session-Id": sid, "MCP-Protocol-Version": mcp.Version20251125}
	post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, legacy)
	post(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"mcp_testserver_echo","arguments":{"message":"legacy"}}}`, legacy)
	post(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"mcp_testserver_echo","arguments":{"message":"modern"},`+
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`,
		map[string]string{"MCP-Protocol-Version": mcp.Version20260728, "Mcp-Method": "tools/call", "Mcp-Name": "mcp_testserver_echo"})
	if err := tel.Flush(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, sp := range exp.GetSpans() {
		if sp.Name != "tools/call echo" {
			continue
		}
		attrs := map[string]string{}
		for _, a := range sp.Attributes {
			attrs[string(a.Key)] = a.Value.Emit()
		}
		got = append(got, attrs["network.transport"]+" "+attrs["mcp.protocol.version"])
	}
	slices.Sort(got)
	if want := []string{"tcp 2025-11-25", "tcp 2026-07-28"}; !slices.Equal(got, want) {
		t.Errorf("spans' transport and version %q, want %q", got, want)
	}
}
