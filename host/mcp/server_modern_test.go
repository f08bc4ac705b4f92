package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// rawClient drives a Server with hand-written frames, as a modern client
// (or a legacy one) would send them.
type rawClient struct {
	t    *testing.T
	conn Conn
	// notes are the notifications read while waiting for responses.
	notes []map[string]any
}

// headerConn is a Pipe end whose requests came with Mcp-Param-* headers.
type headerConn struct {
	Conn
	hdrs map[string]string
}

func (h *headerConn) ParamHeaders(json.RawMessage) (map[string]string, bool) {
	return h.hdrs, h.hdrs != nil
}

func serveRaw(t *testing.T, s *Server, hdrs map[string]string) *rawClient {
	t.Helper()
	a, b := Pipe()
	var sc Conn = b
	if hdrs != nil {
		sc = &headerConn{b, hdrs}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.Serve(ctx, sc) }()
	t.Cleanup(func() {
		cancel()
		a.Close()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Error("the server did not end within 5 s")
		}
	})
	return &rawClient{t: t, conn: a}
}

func modernMeta(caps string, extra string) string {
	m := `"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},"io.modelcontextprotocol/clientCapabilities":` + caps
	if extra != "" {
		m += "," + extra
	}
	return `"_meta":{` + m + `}`
}

func (c *rawClient) send(id int, method, params string) {
	c.t.Helper()
	msg := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, id, method, params)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.conn.WriteMessage(ctx, []byte(msg)); err != nil {
		c.t.Fatal(err)
	}
}

// read reads the next frame within 5 s.
func (c *rawClient) read() map[string]any {
	c.t.Helper()
	type res struct {
		b   []byte
		err error
	}
	ch := make(chan res, 1)
	go func() { b, err := c.conn.ReadMessage(); ch <- res{b, err} }()
	select {
	case r := <-ch:
		if r.err != nil {
			c.t.Fatal(r.err)
		}
		var m map[string]any
		if err := json.Unmarshal(r.b, &m); err != nil {
			c.t.Fatalf("%v: %s", err, r.b)
		}
		return m
	case <-time.After(5 * time.Second):
		c.t.Fatal("no frame within 5 s")
		return nil
	}
}

// call sends a request and reads up to its response, keeping the
// notifications that came first.
func (c *rawClient) call(id int, method, params string) map[string]any {
	c.t.Helper()
	c.send(id, method, params)
	return c.until(id)
}

func (c *rawClient) until(id int) map[string]any {
	c.t.Helper()
	for {
		m := c.read()
		if _, isNote := m["id"]; !isNote {
			c.notes = append(c.notes, m)
			continue
		}
		if m["id"] != float64(id) {
			c.t.Fatalf("response to %v, want %d: %v", m["id"], id, m)
		}
		return m
	}
}

func errCode(m map[string]any) int {
	e, _ := m["error"].(map[string]any)
	if e == nil {
		return 0
	}
	return int(e["code"].(float64))
}

func result(t *testing.T, m map[string]any) map[string]any {
	t.Helper()
	r, ok := m["result"].(map[string]any)
	if !ok {
		t.Fatalf("no result: %v", m)
	}
	return r
}

func modernServer() *Server {
	s := NewServer(Implementation{Name: "srv", Version: "9"}, ServerOptions{Logging: true, Instructions: "be kind", CacheTTL: 3 * time.Second})
	s.AddTool(Tool{Name: "echo"}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		return &CallToolResult{Content: []Content{TextContent("ok")}}, nil
	})
	s.AddTool(Tool{Name: "logs"}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		req.Session.Log(ctx, LoggingLevel("debug"), "t", "a debug line")
		req.Session.Log(ctx, LoggingLevel("warning"), "t", "a warning")
		return &CallToolResult{Content: []Content{TextContent("logged")}}, nil
	})
	s.AddTool(Tool{Name: "ask"}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		if req.Input == nil || req.Input.InputResponses["name"] == nil {
			return nil, &InputRequiredError{&InputRequiredResult{
				InputRequests: InputRequests{"name": {Method: MethodElicitationCreate, Params: json.RawMessage(`{"message":"name?","requestedSchema":{"type":"object"}}`)}},
				RequestState:  "round-1",
			}}
		}
		if InputOf(ctx) != req.Input || req.Input.RequestState != "round-1" {
			return nil, fmt.Errorf("state %q did not come back", req.Input.RequestState)
		}
		var r struct{ Content struct{ Name string } }
		json.Unmarshal(req.Input.InputResponses["name"], &r)
		return &CallToolResult{Content: []Content{TextContent("hello " + r.Content.Name)}}, nil
	})
	s.AddTool(Tool{Name: "direct"}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		_, err := req.Session.Elicit(ctx, &ElicitParams{Message: "x"})
		return nil, err
	})
	s.AddTool(Tool{Name: "region", InputSchema: json.RawMessage(`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"},"n":{"type":"integer","x-mcp-header":"N"},"q":{"type":"string"}}}`)},
		func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
			return &CallToolResult{Content: []Content{TextContent("ran")}}, nil
		})
	s.AddResource(Resource{URI: "test://r", Name: "r"}, func(ctx context.Context, _ *ServerSession, uri string) (*ReadResourceResult, error) {
		return &ReadResourceResult{Contents: []ResourceContents{{URI: uri, Text: "r"}}}, nil
	})
	return s
}

func TestModernDiscover(t *testing.T) {
	c := serveRaw(t, modernServer(), nil)
	r := result(t, c.call(1, "server/discover", `{`+modernMeta(`{}`, "")+`}`))
	if r["resultType"] != "complete" || r["ttlMs"] != float64(3000) || r["cacheScope"] != "private" || r["instructions"] != "be kind" {
		t.Fatalf("discover: %v", r)
	}
	if fmt.Sprint(r["supportedVersions"]) != fmt.Sprint(AllVersions) {
		t.Fatalf("supportedVersions %v, want %v", r["supportedVersions"], AllVersions)
	}
	info := r["_meta"].(map[string]any)[MetaServerInfo].(map[string]any)
	if info["name"] != "srv" || info["version"] != "9" {
		t.Fatalf("serverInfo %v", info)
	}
	if _, ok := r["capabilities"].(map[string]any)["tools"]; !ok {
		t.Fatalf("capabilities %v", r["capabilities"])
	}
}

func TestModernResultTypeAndCache(t *testing.T) {
	c := serveRaw(t, modernServer(), nil)
	for i, m := range []string{"tools/list", "prompts/list", "resources/list", "resources/templates/list"} {
		r := result(t, c.call(10+i, m, `{`+modernMeta(`{}`, "")+`}`))
		if r["resultType"] != "complete" || r["ttlMs"] != float64(3000) || r["cacheScope"] != "private" {
			t.Fatalf("%s: %v", m, r)
		}
	}
	r := result(t, c.call(20, "resources/read", `{"uri":"test://r",`+modernMeta(`{}`, "")+`}`))
	if r["resultType"] != "complete" || r["ttlMs"] == nil {
		t.Fatalf("resources/read: %v", r)
	}
	r = result(t, c.call(21, "tools/call", `{"name":"echo",`+modernMeta(`{}`, "")+`}`))
	if r["resultType"] != "complete" || r["ttlMs"] != nil {
		t.Fatalf("tools/call: %v", r)
	}
	// The same session also speaks the legacy era, unchanged.
	c.call(22, "initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"l","version":"1"}}`)
	r = result(t, c.call(23, "tools/list", `{}`))
	if _, ok := r["resultType"]; ok {
		t.Fatalf("legacy tools/list has resultType: %v", r)
	}
	if code := errCode(c.call(24, "resources/read", `{"uri":"test://none"}`)); code != -32002 {
		t.Fatalf("legacy not-found code %d", code)
	}
}

func TestModernRefusals(t *testing.T) {
	c := serveRaw(t, modernServer(), nil)
	m := c.call(1, "tools/list", `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01","io.modelcontextprotocol/clientCapabilities":{}}}`)
	if errCode(m) != CodeUnsupportedProtocolVersion {
		t.Fatalf("unknown version: %v", m)
	}
	data := m["error"].(map[string]any)["data"].(map[string]any)
	if fmt.Sprint(data["supported"]) != fmt.Sprint(AllVersions) || data["requested"] != "2099-01-01" {
		t.Fatalf("error data %v", data)
	}
	if m := c.call(2, "tools/list", `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`); errCode(m) != CodeInvalidParams {
		t.Fatalf("no capabilities: %v", m)
	}
	for i, method := range removedMethods {
		if m := c.call(10+i, method, `{`+modernMeta(`{}`, "")+`}`); errCode(m) != CodeMethodNotFound {
			t.Fatalf("%s: %v", method, m)
		}
	}
	m = c.call(30, "resources/read", `{"uri":"test://none",`+modernMeta(`{}`, "")+`}`)
	if errCode(m) != CodeInvalidParams || m["error"].(map[string]any)["data"].(map[string]any)["uri"] != "test://none" {
		t.Fatalf("modern not found: %v", m)
	}
	// A legacy-style request to the client from a modern request's
	// handler becomes an input_required round (server_ask.go), never a
	// request on the wire.
	m = c.call(31, "tools/call", `{"name":"direct",`+modernMeta(`{"elicitation":{}}`, "")+`}`)
	if r := result(t, m); r["resultType"] != ResultInputRequired || r["inputRequests"].(map[string]any)["elicitation.create-0"] == nil {
		t.Fatalf("a direct request to the client from a modern request: %v", m)
	}
}

func TestModernLogLevel(t *testing.T) {
	c := serveRaw(t, modernServer(), nil)
	c.call(1, "tools/call", `{"name":"logs",`+modernMeta(`{}`, "")+`}`)
	if len(c.notes) != 0 {
		t.Fatalf("logs without logLevel: %v", c.notes)
	}
	c.call(2, "tools/call", `{"name":"logs",`+modernMeta(`{}`, `"io.modelcontextprotocol/logLevel":"info"`)+`}`)
	if len(c.notes) != 1 || c.notes[0]["method"] != NotificationMessage || c.notes[0]["params"].(map[string]any)["level"] != "warning" {
		t.Fatalf("logs at info: %v", c.notes)
	}
}

func TestModernInputRequired(t *testing.T) {
	c := serveRaw(t, modernServer(), nil)
	r := result(t, c.call(1, "tools/call", `{"name":"ask",`+modernMeta(`{"elicitation":{}}`, "")+`}`))
	if r["resultType"] != "input_required" || r["requestState"] != "round-1" || r["inputRequests"].(map[string]any)["name"] == nil {
		t.Fatalf("round 1: %v", r)
	}
	r = result(t, c.call(2, "tools/call", `{"name":"ask","inputResponses":{"name":{"action":"accept","content":{"name":"Ada"}}},"requestState":"round-1",`+modernMeta(`{"elicitation":{}}`, "")+`}`))
	if r["resultType"] != "complete" || !strings.Contains(fmt.Sprint(r["content"]), "hello Ada") {
		t.Fatalf("round 2: %v", r)
	}
	m := c.call(3, "tools/call", `{"name":"ask",`+modernMeta(`{"sampling":{}}`, "")+`}`)
	if errCode(m) != CodeMissingRequiredCapability {
		t.Fatalf("undeclared elicitation: %v", m)
	}
	need := m["error"].(map[string]any)["data"].(map[string]any)["requiredCapabilities"].(map[string]any)
	if _, ok := need["elicitation"].(map[string]any); !ok || len(need) != 1 {
		t.Fatalf("requiredCapabilities %v", need)
	}
	for i, bad := range []string{`"inputResponses":null`, `"inputResponses":{"name":12345}`, `"requestState":7`} {
		if m := c.call(10+i, "tools/call", `{"name":"ask",`+bad+`,`+modernMeta(`{"elicitation":{}}`, "")+`}`); errCode(m) != CodeInvalidParams {
			t.Fatalf("%s: %v", bad, m)
		}
	}
}

func TestModernParamHeaders(t *testing.T) {
	call := func(hdrs map[string]string, args string) int {
		c := serveRaw(t, modernServer(), hdrs)
		return errCode(c.call(1, "tools/call", `{"name":"region","arguments":`+args+`,`+modernMeta(`{}`, "")+`}`))
	}
	for _, tc := range []struct {
		name string
		hdrs map[string]string
		args string
		want int
	}{
		{"match", map[string]string{"region": "us-west1", "n": "42.0"}, `{"region":"us-west1","n":42,"q":"x"}`, 0},
		{"absent value, no header", map[string]string{}, `{"q":"x"}`, 0},
		{"null value, no header", map[string]string{}, `{"region":null}`, 0},
		{"mismatch", map[string]string{"region": "eu"}, `{"region":"us-west1"}`, CodeHeaderMismatch},
		{"missing header", map[string]string{}, `{"region":"us-west1"}`, CodeHeaderMismatch},
		{"header without value", map[string]string{"region": "us"}, `{}`, CodeHeaderMismatch},
		{"number mismatch", map[string]string{"n": "43"}, `{"n":42}`, CodeHeaderMismatch},
		{"not over HTTP", nil, `{"region":"us-west1"}`, 0},
	} {
		if got := call(tc.hdrs, tc.args); got != tc.want {
			t.Errorf("%s: code %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestModernListen(t *testing.T) {
	s := modernServer()
	c := serveRaw(t, s, nil)
	c.send(7, "subscriptions/listen", `{"notifications":{"toolsListChanged":true},`+modernMeta(`{}`, "")+`}`)
	c.send(8, "subscriptions/listen", `{"notifications":{"promptsListChanged":true},`+modernMeta(`{}`, "")+`}`)
	acks := map[float64]bool{}
	for len(acks) < 2 {
		m := c.read()
		if m["method"] != NotificationSubscriptionsAcked {
			t.Fatalf("before the acknowledgements: %v", m)
		}
		acks[m["params"].(map[string]any)["_meta"].(map[string]any)[MetaSubscriptionID].(float64)] = true
	}
	s.AddTool(Tool{Name: "new"}, nil)
	m := c.read()
	if m["method"] != NotificationToolsListChanged || m["params"].(map[string]any)["_meta"].(map[string]any)[MetaSubscriptionID] != float64(7) {
		t.Fatalf("tools changed: %v", m)
	}
	s.EndSubscriptions()
	// Per subscription: notifications/cancelled naming it, then its
	// complete result (the two subscriptions' frames may interleave).
	told := map[any]bool{}
	for range 4 {
		m := c.read()
		if m["method"] == NotificationCancelled {
			told[m["params"].(map[string]any)["requestId"]] = true
			continue
		}
		r := result(t, m)
		if !told[m["id"]] || r["resultType"] != "complete" || r["_meta"].(map[string]any)[MetaSubscriptionID] != m["id"] {
			t.Fatalf("graceful end of %v (told: %v): %v", m["id"], told, m)
		}
	}
}

// The annotations CheckParamHeaders keeps per schema give the same
// answers as a fresh decode, the second time too, and the cache stays
// within its bound however many schemas pass.
func TestSchemaAnnotationsCache(t *testing.T) {
	ctx := WithRelatedRequest(WithRequestMeta(context.Background(), &RequestMeta{ProtocolVersion: Version20260728}), json.RawMessage(`1`))
	schema := json.RawMessage(`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}`)
	for range 2 {
		if err := CheckParamHeaders(ctx, &headerConn{hdrs: map[string]string{"region": "eu"}}, schema, json.RawMessage(`{"region":"eu"}`)); err != nil {
			t.Fatalf("match: %v", err)
		}
		if err := CheckParamHeaders(ctx, &headerConn{hdrs: map[string]string{"region": "us"}}, schema, json.RawMessage(`{"region":"eu"}`)); rpcCode(err) != CodeHeaderMismatch {
			t.Fatalf("mismatch: %v", err)
		}
	}
	for i := range maxAnnSchemas + 10 {
		s := json.RawMessage(fmt.Sprintf(`{"properties":{"a%d":{"type":"string","x-mcp-header":"A"}}}`, i))
		if _, lower, err := schemaAnnotations(s); err != nil || len(lower) != 1 || lower[0] != "a" {
			t.Fatalf("schema %d: %v %v", i, lower, err)
		}
	}
	if n := annCache.n.Load(); n > maxAnnSchemas {
		t.Errorf("the cache holds %d schemas, over %d", n, maxAnnSchemas)
	}
}

func rpcCode(err error) int {
	var re *RPCError
	if errors.As(err, &re) {
		return re.Code
	}
	return 0
}
