package gateway_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/config"
	"github.com/nexus-mcp/nexus/internal/diag"
	"github.com/nexus-mcp/nexus/internal/explain"
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
