package host_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/nexus-mcp/nexus/host"
	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/audit"
	"github.com/nexus-mcp/nexus/internal/plugin"
	"github.com/nexus-mcp/nexus/internal/policy"
	"github.com/nexus-mcp/nexus/internal/registry"
	"github.com/nexus-mcp/nexus/internal/sampling"
	"github.com/nexus-mcp/nexus/internal/wasm"
)

// TestErrorsBothWays: what a Host returns is host's own error type, and
// the engine's under it, with the engine's text: errors.As finds both, so
// callers branch on host's and internal/explain still reads the engine's.
func TestErrorsBothWays(t *testing.T) {
	cfg, err := host.ParseConfig([]byte(`{
	  "mcpServers": {"ts": {"command": "nexus", "args": ["testserver"]}},
	  "agents": {"bot": {"permission": "yolo", "allow": ["ts.echo"]}}
	}`), "example.json")
	if err != nil {
		t.Fatal(err)
	}
	h := host.New(cfg, host.Options{Dial: inProcess})
	defer h.Close()
	ctx := context.Background()

	_, err = h.CallTool(ctx, "bot", "ts.add", map[string]any{"a": 1, "b": 2}, nil)
	var denied *host.DeniedError
	var pdenied *policy.DeniedError
	if !errors.As(err, &denied) || !errors.As(err, &pdenied) {
		t.Fatalf("denied: %T %v", err, err)
	}
	if denied.Link != "rules" || denied.Tool != "add" || denied.Error() != pdenied.Error() {
		t.Errorf("denied: %+v, engine's %q", denied, pdenied)
	}

	_, err = h.ReadResource(ctx, "bot", "gh", "file:///x")
	var unknown *host.UnknownServerError
	var runknown *registry.UnknownServerError
	if !errors.As(err, &unknown) || !errors.As(err, &runknown) {
		t.Fatalf("unknown server: %T %v", err, err)
	}
	if unknown.Name != "gh" || fmt.Sprint(unknown.Known) != "[ts]" || err.Error() != runknown.Error() {
		t.Errorf("unknown server: %+v, %q", unknown, err)
	}

	_, err = h.CallTool(ctx, "bot", "ts.echo", map[string]any{"message": 42}, nil)
	var schema *host.SchemaError
	var rschema *registry.SchemaError
	if !errors.As(err, &schema) || !errors.As(err, &rschema) {
		t.Fatalf("schema: %T %v", err, err)
	}
	if schema.Tool != "echo" || schema.What != "arguments" || len(schema.Problems) == 0 {
		t.Errorf("schema: %+v", schema)
	}

	// A dry run's refusal is host's too.
	v, err := h.DryRun(ctx, "bot", "ts.add", map[string]any{"a": 1, "b": 2}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !errors.As(v.Err, &denied) || !errors.As(v.Err, &pdenied) || denied.Link != "rules" || len(v.Steps) == 0 {
		t.Errorf("dry run: %+v", v)
	}
}

// A *DisabledError a program makes is explained as the engine's: with
// where the server is configured and how to enable it.
func TestErrorsDisabled(t *testing.T) {
	cfg, err := host.ParseConfig([]byte(`{"mcpServers": {"ts": {"command": "nexus", "args": ["testserver"], "disabled": true}}}`), "example.json")
	if err != nil {
		t.Fatal(err)
	}
	h := host.New(cfg, host.Options{Dial: inProcess})
	defer h.Close()
	err = h.Explain("ts", &host.DisabledError{Server: "ts"})
	var rep *host.Report
	if !errors.As(err, &rep) || rep.Title != "MCP Server Disabled" || !strings.Contains(err.Error(), "example.json, line 1") {
		t.Fatalf("disabled: %T %v", err, err)
	}
}

// TestErrorsMadeByHand: an error an embedder makes itself Unwraps to the
// engine's, built from its fields, so Describe explains it too.
func TestErrorsMadeByHand(t *testing.T) {
	cause := errors.New("refused")
	for _, c := range []struct {
		err  error
		want func(error) bool
	}{
		{&host.UnknownServerError{Name: "gh", Known: []string{"ts"}}, func(err error) bool {
			var e *registry.UnknownServerError
			return errors.As(err, &e) && e.Name == "gh"
		}},
		{&host.UnknownToolError{Name: "ehco", Server: "ts"}, func(err error) bool {
			var e *registry.UnknownToolError
			return errors.As(err, &e) && e.Name == "ehco" && e.Server == "ts"
		}},
		{&host.ServerError{Server: "ts", Err: cause}, func(err error) bool {
			var e *registry.ServerError
			return errors.As(err, &e) && e.Server == "ts" && errors.Is(err, cause)
		}},
		{&host.DisabledError{Server: "ts"}, func(err error) bool {
			var e *registry.DisabledError
			return errors.As(err, &e) && e.Server.Name == "ts" && err.Error() == `server "ts" is disabled in its config`
		}},
		{&host.AuditBreakError{File: "a.jsonl", Line: 3, Problem: "the chain breaks"}, func(err error) bool {
			var e *audit.Error
			return errors.As(err, &e) && e.Line == 3 && err.Error() == "a.jsonl:3: the chain breaks"
		}},
		{&host.PluginLoadError{Plugin: "ws", Path: "/bin/ws", Kind: "checksum mismatch", Pinned: "ab", Sum: "cd"}, func(err error) bool {
			var e *plugin.LoadError
			return errors.As(err, &e) && e.Kind == plugin.LoadChecksumMismatch && e.Sum == "cd"
		}},
		{&host.FilterCallError{Filter: "pii", Method: "tools/call", Server: "ts", Tool: "echo", Err: cause}, func(err error) bool {
			var e *wasm.CallError
			return errors.As(err, &e) && e.Filter == "pii" && errors.Is(err, cause)
		}},
		{&host.SamplingError{Server: "ts", Reason: "over the limit"}, func(err error) bool {
			var e *sampling.Error
			return errors.As(err, &e) && err.Error() == `sampling for server "ts": over the limit`
		}},
		{&host.DeniedError{Link: "rules", Kind: host.KindPolicy, Reason: "no", Method: "tools/call", Server: "ts", Tool: "add"}, func(err error) bool {
			var e *policy.DeniedError
			return errors.As(err, &e) && e.Link == "rules" && err.Error() == `ts.add denied by policy "rules": no`
		}},
	} {
		if !c.want(c.err) {
			t.Errorf("%T %v: not the engine's", c.err, c.err)
		}
	}
}

// TestErrorsJoined: the errors of several servers, joined, keep one host
// error each, and the text they had.
func TestErrorsJoined(t *testing.T) {
	cfg, err := host.ParseConfig([]byte(`{"mcpServers": {
	  "a": {"command": "nexus", "args": ["testserver"]},
	  "b": {"command": "nexus", "args": ["testserver"]}}}`), "example.json")
	if err != nil {
		t.Fatal(err)
	}
	down := func(ctx context.Context, srv *host.Server) (*mcp.Client, error) {
		return nil, fmt.Errorf("%s is down", srv.Name)
	}
	h := host.New(cfg, host.Options{Dial: down})
	defer h.Close()
	_, err = h.Tools(context.Background(), host.CLIAgent)
	j, ok := err.(interface{ Unwrap() []error })
	if !ok || len(j.Unwrap()) != 2 {
		t.Fatalf("not two errors: %T %v", err, err)
	}
	for i, e := range j.Unwrap() {
		var se *host.ServerError
		var rse *registry.ServerError
		if !errors.As(e, &se) || !errors.As(e, &rse) || se.Server != rse.Server || se.Server != string(rune('a'+i)) {
			t.Errorf("error %d: %T %v", i, e, e)
		}
	}
}
