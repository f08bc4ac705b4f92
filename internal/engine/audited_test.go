package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/audit"
	"github.com/nexus-mcp/nexus/internal/config"
	"github.com/nexus-mcp/nexus/internal/diag"
	"github.com/nexus-mcp/nexus/internal/engine"
	"github.com/nexus-mcp/nexus/internal/lock"
	"github.com/nexus-mcp/nexus/internal/policy"
	"github.com/nexus-mcp/nexus/internal/telemetry"
	"github.com/nexus-mcp/nexus/sdk/event"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// readAudit flushes w and returns its records.
func readAudit(t *testing.T, w *audit.Writer, path string) []audit.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := audit.Verify(path); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	var out []audit.Record
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var r audit.Record
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

// Every decision point is one record: calls allowed, denied (by the rules,
// a policy, the schema), modified, failed, shadowed; a tool the lockfile
// withholds from a listing; a resource read; a prompt. Each says which
// link decided, with the steps; arguments only as their hash.
func TestAuditRecords(t *testing.T) {
	w := newWorld()
	s := w.server("gh", echoTool("get_issue"), echoTool("delete_repo"), echoTool("rename"), echoTool("shadowed"), echoTool("boom"))
	s.AddTool(mcp.Tool{Name: "boom", InputSchema: echoSchema}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return nil, errors.New("the server broke")
	})
	s.AddResource(mcp.Resource{URI: "file:///readme", Name: "readme"}, func(ctx context.Context, ss *mcp.ServerSession, uri string) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []mcp.ResourceContents{{URI: uri, Text: "hello"}}}, nil
	})
	w.server("unpinned", echoTool("x"))
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	aw, err := audit.Open(audit.Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer aw.Close()
	links := []policy.Entry{
		{Link: policy.Func{N: "no-delete", F: func(ctx context.Context, e *event.Event) (event.Decision, error) {
			if e.Method == mcp.MethodToolsCall && e.Tool.Name == "delete_repo" {
				return event.Decision{Action: event.Deny, Reason: "deletes are off"}, nil
			}
			return event.Decision{Action: event.Allow}, nil
		}}, Source: "nexus.hcl:3"},
		{Link: policy.Func{N: "rename", F: func(ctx context.Context, e *event.Event) (event.Decision, error) {
			if e.Method == mcp.MethodToolsCall && e.Tool.Name == "rename" {
				return event.Decision{Action: event.Modify, Params: json.RawMessage(`{"name":"rename","arguments":{"message":"changed"}}`)}, nil
			}
			return event.Decision{Action: event.Allow}, nil
		}}, Source: "nexus.hcl:9"},
		{Link: policy.Func{N: "trial", F: func(ctx context.Context, e *event.Event) (event.Decision, error) {
			if e.Tool != nil && e.Tool.Name == "shadowed" && e.Method == mcp.MethodToolsCall {
				return event.Decision{Action: event.Deny, Reason: "would say no"}, nil
			}
			return event.Decision{Action: event.Allow}, nil
		}}, Shadow: true, Source: "nexus.hcl:15"},
	}
	pinned, _ := lock.Pin("gh", mcp.Implementation{}, []mcp.Tool{echoTool("get_issue"), echoTool("delete_repo"), echoTool("rename"), echoTool("shadowed"), echoTool("boom")}, nil, nil)
	l := &lock.Lock{}
	l.Put(pinned)
	h := w.host(t, `{"y": {"permission": "yolo", "deny": ["gh.get_*"]}}`, engine.Options{Links: links, Audit: aw, Lock: l})
	secret := map[string]any{"message": "token=SECRET_VALUE_123"}
	for _, name := range []string{"gh.rename", "gh.get_issue", "gh.delete_repo", "gh.shadowed", "gh.boom"} {
		h.CallTool(ctx, "y", name, secret, nil)
	}
	h.CallTool(ctx, "y", "gh.rename", map[string]any{"message": 7}, nil) // the policy rewrites 7 to "changed": no schema error
	h.CallTool(ctx, "y", "gh.shadowed", map[string]any{"message": 7}, nil)
	h.Tools(ctx, "y")
	h.ReadResource(ctx, "y", "gh", "file:///readme")

	recs := readAudit(t, aw, path)
	var got []string
	for _, r := range recs {
		got = append(got, r.Method+" "+r.Server+"."+r.Tool+r.URI+" "+r.Decision+" "+r.Link+" "+r.Source)
		if r.Args != nil {
			t.Errorf("arguments written without include_arguments: %s", r.Args)
		}
	}
	want := []string{
		"tools/call gh.rename modify rename nexus.hcl:9",
		"tools/call gh.get_issue deny rules ",
		"tools/call gh.delete_repo deny no-delete nexus.hcl:3",
		"tools/call gh.shadowed would-deny trial nexus.hcl:15",
		"tools/call gh.boom error  ",
		"tools/call gh.rename modify rename nexus.hcl:9",
		"tools/call gh.shadowed deny schema ",
		"tools/list unpinned.x deny lock ",
		"resources/read gh.file:///readme allow  ",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("records:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	b, _ := os.ReadFile(path)
	if strings.Contains(string(b), "SECRET_VALUE_123") {
		t.Error("an argument's secret reached the audit log")
	}
	r := recs[2]
	if r.Agent != "y" || r.ArgsSHA256 == "" || r.Reason != "deletes are off" || len(r.Steps) < 3 || r.Steps[len(r.Steps)-1].Link != "no-delete" {
		t.Errorf("a denied call's record: %+v", r)
	}
	if r := recs[0]; r.IsError == nil || *r.IsError || r.Bytes == 0 {
		t.Errorf("a call's result in its record: %+v", r)
	}
}

// The audit block of a config: with include_arguments the arguments are
// written, redacted with the detectors of the redact-secrets filter: a
// secret-named key's value (nested too), header-like keys, secrets
// inside ordinary values, URL passwords. The old host masked only a fixed
// list of key names.
func TestAuditBlock(t *testing.T) {
	w := newWorld()
	w.server("gh", mcp.Tool{Name: "login", InputSchema: json.RawMessage(`{"type":"object"}`)})
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	doc := `{"mcpServers": {"gh": {"command": "in-process"}}, "agents": {"y": {"permission": "yolo"}},
	  "audit": {"path": ` + strconvQuote(path) + `, "include_arguments": true}}`
	cfg, err := config.Parse([]byte(doc), diag.Source{File: "test.json", Layer: "test"})
	if err != nil {
		t.Fatal(err)
	}
	h := engine.New(cfg, engine.Options{Dial: w.dial})
	args := map[string]any{"user": "ann", "password": "hunter2", "db": "postgres://ann:pw@db/x",
		"headers": map[string]any{"Authorization": "Bearer ghp_abcdefghijklmnopqrstuvwxyz0123456789"},
		"conn":    map[string]any{"host": "db", "pass": "hunter4", "secret": 987654},
		"message": "password=hunter3 and then sk-live-4eC39HqLyjWDarjtT1zdp7dc, ok"}
	if _, err := h.CallTool(ctx, "y", "gh.login", args, nil); err != nil {
		t.Fatal(err)
	}
	h.Close() // flushes the log it opened
	b, _ := os.ReadFile(path)
	for _, secret := range []string{"hunter2", ":pw@", "ghp_", "hunter4", "987654", "hunter3", "4eC39HqLyjWDarjtT1zdp7dc"} {
		if strings.Contains(string(b), secret) {
			t.Errorf("%s in the log:\n%s", secret, b)
		}
	}
	for _, kept := range []string{`"user":"ann"`, `"password":"[REDACTED:secret]"`, `"host":"db"`, "and then [REDACTED:api_key], ok"} {
		if !strings.Contains(string(b), kept) {
			t.Errorf("%s not in the log:\n%s", kept, b)
		}
	}
	var r audit.Record
	json.Unmarshal(b, &r)
	if r.ArgsSHA256 == "" || r.ArgsHMAC != "" || r.ArgsBytes == 0 {
		t.Errorf("an unkeyed log's argument digest: %+v", r)
	}
	if _, err := audit.Verify(path); err != nil {
		t.Error(err)
	}
}

func strconvQuote(s string) string { b, _ := json.Marshal(s); return string(b) }

// A log that cannot be written, fail-closed, refuses the call.
func TestAuditFailClosed(t *testing.T) {
	w := newWorld()
	w.server("gh", echoTool("get_issue"))
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	aw, err := audit.Open(audit.Options{Path: path, FailClosed: true})
	if err != nil {
		t.Fatal(err)
	}
	h := w.host(t, yolo, engine.Options{Audit: aw})
	if _, err := h.CallTool(ctx, "y", "gh.get_issue", map[string]any{"message": "hi"}, nil); err != nil {
		t.Fatal(err)
	}
	readAudit(t, aw, path)
	aw.Close()
	_, err = h.CallTool(ctx, "y", "gh.get_issue", map[string]any{"message": "hi"}, nil)
	var ae *engine.AuditError
	if !errors.As(err, &ae) || !strings.Contains(err.Error(), "closed") {
		t.Fatalf("a call with the log closed, fail-closed: %v", err)
	}
	// Refused before it ran, not after: the server saw the first call only.
	if n := w.calls.count("gh", "get_issue"); n != 1 {
		t.Errorf("the server got %d calls; the one the log could not record ran", n)
	}
}

// Tracing a call: its span continues the caller's traceparent, the chain's
// links are events on it (the policy twice: reviewing the tool's listing,
// then the call), and the server gets the trace context in
// _meta; the metrics count the call.
func TestTelemetry(t *testing.T) {
	w := newWorld()
	s := w.server("gh")
	var meta mcp.Meta
	s.AddTool(mcp.Tool{Name: "get_issue", InputSchema: echoSchema}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		meta = req.Meta
		return &mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent("ok")}}, nil
	})
	exp := tracetest.NewInMemoryExporter()
	tel, err := telemetry.New(context.Background(), telemetry.Options{Exporter: exp, Metrics: true, Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	links := []policy.Entry{{Link: policy.Func{N: "ok", F: func(ctx context.Context, e *event.Event) (event.Decision, error) {
		return event.Decision{Action: event.Allow}, nil
	}}, Source: "nexus.hcl:1"}}
	h := w.host(t, yolo, engine.Options{Telemetry: tel, Links: links})
	cctx := engine.WithTraceContext(ctx, map[string]string{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"})
	if _, err := h.CallTool(cctx, "y", "gh.get_issue", map[string]any{"message": "hi"}, nil); err != nil {
		t.Fatal(err)
	}
	if err := tel.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	var names []string
	spans := exp.GetSpans()
	for _, sp := range spans {
		names = append(names, sp.Name)
		if sp.SpanContext.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" {
			t.Errorf("span %s in trace %s", sp.Name, sp.SpanContext.TraceID())
		}
	}
	if got := strings.Join(names, ", "); got != "tools/call get_issue" {
		t.Fatalf("spans: %s", got)
	}
	names = names[:0]
	for _, e := range spans[0].Events {
		for _, a := range e.Attributes {
			if a.Key == "nexus.link" {
				names = append(names, e.Name+"="+a.Value.AsString())
			}
		}
	}
	if got := strings.Join(names, ", "); got != "nexus.link permission=permission, nexus.link ok=ok, nexus.link ok=ok, nexus.link schema=schema, nexus.link upstream=upstream" {
		t.Errorf("events: %s", got)
	}
	var tp string
	json.Unmarshal(meta["traceparent"], &tp)
	if !strings.HasPrefix(tp, "00-4bf92f3577b34da6a3ce929d0e0e4736-") {
		t.Errorf("the server got traceparent %q", tp)
	}
	rec := httptest.NewRecorder()
	tel.Metrics().Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if !strings.Contains(rec.Body.String(), `nexus_requests_total{decision="allow",method="tools/call",server="gh",tool="get_issue"} 1`) {
		t.Errorf("metrics:\n%s", rec.Body.String())
	}
}
