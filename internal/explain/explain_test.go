package explain_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nexus-mcp/nexus/internal/audit"
	"github.com/nexus-mcp/nexus/internal/auth"
	"github.com/nexus-mcp/nexus/internal/config"
	"github.com/nexus-mcp/nexus/internal/diag"
	"github.com/nexus-mcp/nexus/internal/explain"
	"github.com/nexus-mcp/nexus/internal/plugin"
	"github.com/nexus-mcp/nexus/internal/policy"
	"github.com/nexus-mcp/nexus/internal/registry"
	httptransport "github.com/nexus-mcp/nexus/internal/transport/http"
	"github.com/nexus-mcp/nexus/internal/transport/stdio"
)

// A refusal names the link by what it is and where it is defined: an
// agent's own rule comes first in the chain, so it is the one meant when
// a filter of the same name exists too.
func TestRefusalFindsTheLink(t *testing.T) {
	cfg := &config.Config{
		Servers: []*config.Server{{Name: "fs", Source: diag.Source{File: "mcp.json", Line: 2}}},
		Agents: []*config.Agent{{Name: "bot", Source: diag.Source{File: "agents.hcl", Line: 1},
			Rules: []*config.Filter{{Name: "guard", Kind: "policy", Rule: &config.Rule{}, Source: diag.Source{File: "agents.hcl", Line: 4}}}}},
		Filters: []*config.Filter{{Name: "guard", Kind: "policy", WASM: "/x/guard.wasm", Source: diag.Source{File: "filters.hcl", Line: 9}}},
	}
	d := &policy.DeniedError{Link: "guard", Kind: policy.KindPolicy, Reason: "not today", Method: "tools/call", Server: "fs", Tool: "write"}
	r := explain.Refusal(cfg, "bot", "", d)
	text := r.Error()
	for _, want := range []string{`tools/call of fs.write was denied by rule "guard"`, "not today", "agents.hcl, line 4", `agent "bot", defined in agents.hcl, line 1`, "Source: mcp.json, line 2"} {
		if !strings.Contains(text, want) {
			t.Errorf("the report lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "filters.hcl") {
		t.Errorf("the report names the filter the agent's rule shadows:\n%s", text)
	}
	var back *policy.DeniedError
	if !errors.As(r, &back) || back != d {
		t.Error("the report does not lead back to the refusal")
	}
	// The same report, in brief, for the gateway's client.
	if b := r.Brief(); !strings.Contains(b, r.Problem) || !strings.Contains(b, "not today") || !strings.Contains(b, "Fix: "+r.Fix[0]) {
		t.Errorf("the brief:\n%s", b)
	}
}

// A server in backoff is explained by its last failure, with when the
// next attempt is; a disabled one says how to enable it.
func TestServerBackoffAndDisabled(t *testing.T) {
	srv := &config.Server{Name: "fs", Type: config.TypeStdio, Command: []string{"nope"}, Source: diag.Source{File: "mcp.json", Line: 3}}
	start := &stdio.StartError{Command: srv.Command, Kind: stdio.NotFound, Err: errors.New(`exec: "nope": executable file not found in $PATH`)}
	err := explain.Server(srv, &registry.BackoffError{Server: "fs", Retry: 1500 * time.Millisecond, Err: start}, nil)
	var r *diag.Report
	if !errors.As(err, &r) || !strings.Contains(r.Problem, "the next reconnection attempt is in 1.5s") || r.Server != "fs" {
		t.Fatalf("backoff: %v", err)
	}
	if !errors.As(explain.Server(srv, &registry.DisabledError{Server: srv}, nil), &r) || r.Title != "MCP Server Disabled" {
		t.Fatalf("disabled: %+v", r)
	}
	plain := errors.New("something else")
	if err := explain.Server(srv, plain, nil); !errors.Is(err, plain) || !strings.Contains(err.Error(), `server "fs"`) {
		t.Errorf("an unknown error: %v", err)
	}
}

// A plugin's errors carry facts; Error builds their reports, finds them
// under what wraps them, and leaves a refusal (whose cause may be a
// plugin's crash) to Refusal.
func TestPluginReports(t *testing.T) {
	src := diag.Source{File: "nexus.hcl", Line: 7}
	load := &plugin.LoadError{Plugin: "guard", Path: "/p/guard", Kind: plugin.LoadChecksumMismatch, Source: src, Pinned: "aa", Sum: "bb"}
	var r *diag.Report
	if !errors.As(explain.Error(fmt.Errorf("filter x: %w", load)), &r) || r.Title != "Plugin Launch Failed" || r.Source != src ||
		!strings.Contains(r.Error(), "pinned: aa") || !strings.Contains(r.Error(), `sha256 = "bb"`) {
		t.Fatalf("load: %v", r)
	}
	var back *plugin.LoadError
	if !errors.As(r, &back) || back != load {
		t.Error("the report does not lead back to the error")
	}
	crash := &plugin.CrashError{Plugin: "guard", During: "policy Decide", Exit: "exit status 2", Stderr: []string{"panic: boom"}}
	if !errors.As(explain.Error(crash), &r) || r.Title != "Plugin Crashed" || !strings.Contains(r.Error(), "panic: boom") {
		t.Fatalf("crash: %v", r)
	}
	unknown := &plugin.UnknownError{Plugin: "pipe", Server: "remote", Source: src}
	if !errors.As(explain.Error(errors.Join(errors.New("first"), unknown)), &r) || r.Server != "remote" || !strings.Contains(r.Problem, `Server "remote" names plugin "pipe"`) {
		t.Fatalf("unknown: %v", r)
	}
	notChecked := &plugin.CheckError{Plugin: "guard", Source: src, Err: errors.New("handshake: no version")}
	if !errors.As(explain.Error(notChecked), &r) || r.Title != "Plugin Config Not Checked" || r.Source != src ||
		r.Problem != `Plugin "guard" could not be started to check its configs: handshake: no version` {
		t.Fatalf("not checked: %v", r)
	}
	if !errors.As(explain.Error(&plugin.CheckError{Plugin: "guard", Source: src, Err: load}), &r) || r.Title != "Plugin Launch Failed" {
		t.Fatalf("not checked, told by its cause: %v", r)
	}
	denied := &policy.DeniedError{Link: "guard", Kind: policy.KindPolicy, Reason: "plugin down", Err: crash}
	if err := explain.Error(denied); err != denied {
		t.Errorf("a refusal became %v", err)
	}
	plain := errors.New("plain")
	if err := explain.Error(plain); err != plain {
		t.Errorf("an unknown error became %v", err)
	}
	// An error of a type == cannot compare (config.Errors is a slice)
	// passes through as it is.
	errs := config.Errors{{Title: "Config Error", Problem: "bad"}}
	if err := explain.Server(&config.Server{Name: "fs"}, errs, nil); !strings.Contains(err.Error(), "bad") {
		t.Errorf("a slice of reports: %v", err)
	}
}

// An OAuth failure carries where its server is configured; met while
// connecting (the HTTP transport's *AuthError around it) it is the same
// report, with the server's name and URL, leading back to both errors.
func TestOAuthReport(t *testing.T) {
	src := diag.Source{File: "mcp.json", Line: 4}
	oe := &auth.Error{Kind: auth.ErrTokenEndpoint, Op: "token request", URL: "https://as.example.com/token", Status: 401,
		OAuthError: "invalid_client", Diag: diag.Context{Source: src}}
	var alone *diag.Report
	if !errors.As(explain.Error(oe), &alone) || alone.Title != "OAuth Authorization Failed" || alone.Source != src ||
		!strings.Contains(alone.Error(), "Check client_id and client_secret in mcp.json") {
		t.Fatalf("alone: %v", alone)
	}
	srv := &config.Server{Name: "gh", Type: config.TypeHTTP, URL: "https://mcp.example.com/mcp", Source: src}
	ae := &httptransport.AuthError{Server: "gh", Method: "POST", URL: srv.URL, Status: 401, Err: oe}
	var r *diag.Report
	if !errors.As(explain.Server(srv, ae, nil), &r) || r.Server != "gh" || r.URL != srv.URL || r.Problem != alone.Problem {
		t.Fatalf("through the transport: %+v", r)
	}
	var back *auth.Error
	var backAE *httptransport.AuthError
	if !errors.As(r, &back) || back != oe || !errors.As(r, &backAE) {
		t.Error("the report does not lead back to the errors")
	}
}

// Options built in code with a grant the OAuth client does not know: the
// report names the grants there are (the config loader never lets one
// through).
func TestOAuthUnknownGrant(t *testing.T) {
	var o auth.Options
	o.Grant = "password"
	err := o.Apply(&auth.Config{})
	if !errors.Is(err, auth.ErrUnknownGrant) {
		t.Fatalf("Apply: %v", err)
	}
	src := diag.Source{File: "nexus.hcl", Line: 7}
	var r *diag.Report
	if !errors.As(explain.Error(&auth.Error{Kind: auth.ErrConfig, Server: "gh", Op: "read the oauth block", Err: err, Diag: diag.Context{Source: src}}), &r) ||
		r.Title != "OAuth Configuration Error" || r.Source != src ||
		!strings.Contains(r.Problem, `unknown oauth grant "password"`) || len(r.Fix) != 1 || !strings.Contains(r.Fix[0], `"jwt_bearer"`) {
		t.Fatalf("report: %+v", r)
	}
}

// A refused call's audit record gets the refusal's report; an allowed one
// and an error without a report (a cancelled call) get none.
func TestRecord(t *testing.T) {
	cfg := &config.Config{Servers: []*config.Server{{Name: "fs", Source: diag.Source{File: "mcp.json", Line: 2}}}}
	d := &policy.DeniedError{Link: "guard", Kind: policy.KindPolicy, Reason: "not today", Method: "tools/call", Server: "fs", Tool: "write"}
	rec := audit.Record{Agent: "bot", Server: "fs", Decision: "deny"}
	explain.Record(cfg, &rec, d)
	var j diag.JSON
	if err := json.Unmarshal(rec.Report, &j); err != nil || j.Headline() != explain.Refusal(cfg, "bot", "", d).Headline() {
		t.Fatalf("a refusal's record: %s %v", rec.Report, err)
	}
	allowed := audit.Record{Decision: "allow", Flags: []string{"input_required"}}
	explain.Record(cfg, &allowed, errors.New("input required"))
	cancelled := audit.Record{Decision: "error"}
	explain.Record(cfg, &cancelled, context.Canceled)
	if allowed.Report != nil || cancelled.Report != nil {
		t.Errorf("reports on records without one: %s, %s", allowed.Report, cancelled.Report)
	}
}
