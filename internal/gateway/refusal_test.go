package gateway_test

import (
	"encoding/json"
	"errors"
	"html/template"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/audit"
	"github.com/nexus-mcp/nexus/internal/config"
	"github.com/nexus-mcp/nexus/internal/console"
	"github.com/nexus-mcp/nexus/internal/diag"
	"github.com/nexus-mcp/nexus/internal/explain"
	"github.com/nexus-mcp/nexus/internal/registry"
)

// The command line and the gateway tell of a refusal alike: one report,
// built by internal/explain from the chain's *policy.DeniedError, which
// the command line prints in full (explain.Describe, as its explainErr
// calls it, then the report's Error) and the gateway's client reads in
// brief, as the refused call's tool result.
func TestRefusalSameInCLIAndGateway(t *testing.T) {
	rule, err := config.ParseHCL([]byte(`rule "no-add" {
  when   = "tool.name == 'add'"
  action = "deny"
  reason = "adding is off today"
}
`), diag.Source{File: "rules.hcl"})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, func(c *config.Config) { c.Filters = append(c.Filters, rule.Filters...) })
	ctx := ctxT(t)

	// The command line's way: the host's call, described.
	_, err = e.h.CallTool(ctx, "claude", "testserver.add", map[string]any{"a": 1, "b": 2}, nil)
	var rep *diag.Report
	if !errors.As(explain.Describe(e.cfg, err, explain.Options{Agent: "claude"}), &rep) {
		t.Fatalf("the host's refusal is not described as a report: %v", err)
	}
	cli := rep.Error()

	// The gateway's.
	c := e.connect("claude", mcp.ClientOptions{})
	res, err := c.CallTool(ctx, "mcp_testserver_add", json.RawMessage(`{"a":1,"b":2}`), nil)
	if err != nil || !res.IsError || len(res.Content) != 1 {
		t.Fatalf("the gateway's call: %v %+v", err, res)
	}
	got := res.Content[0].Text
	if want := "Nexus refused this call: " + rep.Brief(); got != want {
		t.Errorf("the gateway's refusal:\n%s\nwant the report's brief:\n%s", got, want)
	}
	// What the brief tells, the full report tells: the problem, the link
	// and where it is defined, the reason, the fix.
	for _, s := range []string{rep.Problem, `rule "no-add"`, "rules.hcl, line 1", "adding is off today", rep.Fix[0]} {
		if !strings.Contains(cli, s) || !strings.Contains(got, s) {
			t.Errorf("%q is not in both; the command line's:\n%s\nthe gateway's:\n%s", s, cli, got)
		}
	}
}

// The audit log and the console tell of a refusal as the command line and
// the gateway do (TestRefusalSameInCLIAndGateway): the record keeps the one report (diag.Report's JSON,
// masked as the command line masks it), the chain of the log still
// verifies, and the console's decision page shows its headline and fixes.
// The host hands its record on as it writes it (the decision feed), with
// the report its audited call attached once it decided the record.
func TestRefusalSameInAuditAndConsole(t *testing.T) {
	rule, err := config.ParseHCL([]byte(`rule "no-add" {
  when   = "tool.name == 'add'"
  action = "deny"
  reason = "adding is off today"
}
`), diag.Source{File: "rules.hcl"})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnvOpts(t, func(c *config.Config) { c.Filters = append(c.Filters, rule.Filters...) }, nil)
	sub := e.h.Feed().Subscribe(8)
	defer sub.Close()
	ctx := ctxT(t)

	_, refused := e.h.CallTool(ctx, "claude", "testserver.add", map[string]any{"a": 1, "b": 2}, nil)
	var rep *diag.Report
	if !errors.As(explain.Describe(e.cfg, refused, explain.Options{Agent: "claude"}), &rep) {
		t.Fatalf("the host's refusal is not described as a report: %v", refused)
	}
	var d audit.Decision
	select {
	case d = <-sub.C:
	case <-ctx.Done():
		t.Fatal("the host published no decision")
	}
	if d.Decision != "deny" || d.Link != "no-add" {
		t.Fatalf("the host's record: %+v", d.Record)
	}

	// The log: the record with its report, chained and verified.
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	w, err := audit.Open(audit.Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	rec := d.Record
	if len(rec.Report) == 0 {
		t.Fatalf("the host's record carries no report: %+v", rec)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if v, err := audit.Verify(path); err != nil || v.Records != 1 {
		t.Fatalf("the log: %+v %v", v, err)
	}
	line, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var logged audit.Record
	var kept diag.JSON
	if err := json.Unmarshal(line, &logged); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(logged.Report, &kept); err != nil {
		t.Fatalf("the record's report: %v\n%s", err, line)
	}
	if want := rep.JSON().Masked(); !reflect.DeepEqual(kept, want) || kept.Headline() != rep.Headline() || !slices.Equal(kept.Fix, rep.Fix) {
		t.Errorf("the log's report:\n%+v\nwant the command line's:\n%+v", kept, want)
	}

	// The gateway's client reads the same report in brief.
	res, err := e.connect("claude", mcp.ClientOptions{}).CallTool(ctx, "mcp_testserver_add", json.RawMessage(`{"a":1,"b":2}`), nil)
	if err != nil || !res.IsError || len(res.Content) != 1 || res.Content[0].Text != "Nexus refused this call: "+rep.Brief() {
		t.Fatalf("the gateway's refusal: %v %+v\nwant the report's brief:\n%s", err, res, rep.Brief())
	}

	// The console: the decision as the log holds it, its page.
	cfeed := audit.NewFeed()
	k, err := console.New(console.Config{Options: console.Options{Listen: "127.0.0.1:0", Tokens: []string{consoleToken}},
		Servers: noServers{}, Sessions: e.g, Feed: cfeed})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(k)
	defer func() { ts.Close(); k.Close() }()
	cookie := consoleLogin(t, ts.URL)
	cfeed.Publish(audit.Decision{Record: logged})
	var page string
	for page == "" {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, ts.URL+"/decisions/1", nil)
		req.Header.Set("Cookie", cookie)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("the decision's page: %v", err)
		}
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		switch {
		case resp.StatusCode == http.StatusOK:
			page = string(b)
		case resp.StatusCode != http.StatusNotFound:
			t.Fatalf("the decision's page: %d\n%s", resp.StatusCode, b)
		default: // the console has not read the feed yet
			select {
			case <-ctx.Done():
				t.Fatal("the console never kept the decision")
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	for _, s := range append([]string{rep.Headline()}, rep.Fix...) {
		if !strings.Contains(page, template.HTMLEscapeString(s)) {
			t.Errorf("the console's page lacks %q:\n%s", s, page)
		}
	}
}

const consoleToken = "admin-0123456789abcdef0123"

// consoleLogin logs in to the console at base with consoleToken and
// returns the session's cookie.
func consoleLogin(t *testing.T, base string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/login", strings.NewReader(url.Values{"token": {consoleToken}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", base)
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	cookie, _, _ := strings.Cut(resp.Header.Get("Set-Cookie"), ";")
	if cookie == "" {
		t.Fatalf("the console's login: %d", resp.StatusCode)
	}
	return cookie
}

// noServers is a console's list of servers with none in it: the page this
// test reads is a decision's.
type noServers struct{}

func (noServers) Servers() []registry.Status             { return nil }
func (noServers) Explain(_ string, err error) error      { return err }
func (noServers) ExposedName(server, tool string) string { return server + "." + tool }
