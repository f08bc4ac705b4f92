package engine_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/nexus-mcp/nexus/internal/config"
	"github.com/nexus-mcp/nexus/internal/diag"
	"github.com/nexus-mcp/nexus/internal/engine"
	"github.com/nexus-mcp/nexus/internal/rules"
)

// An agent's rule that does not compile (a Config made in code: a loaded
// one has every rule compiled) refuses calls as a filter that does not
// load does, naming the agent and the rule.
func TestAgentRuleThatDoesNotCompile(t *testing.T) {
	w := tsWorld()
	cfg, err := config.Parse([]byte(`{"mcpServers": {"ts": {"command": "in-process"}}, "agents": {"ci": {"permission": "yolo"}}}`), diag.Source{File: "test.json"})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Agents[0].Rules = []*config.Filter{{Name: "typo", Kind: "policy", Rule: &config.Rule{When: rules.Expr{Text: "agent.idd == 'x'"}, Action: rules.Deny}}}
	h := engine.New(cfg, engine.Options{Dial: w.dial})
	defer h.Close()
	_, err = h.CallTool(ctx, "ci", "mcp_ts_echo", json.RawMessage(`{"message":"hi"}`), nil)
	var le *engine.FilterLoadError
	if !errors.As(err, &le) || le.Filter != "ci.typo" {
		t.Fatalf("want the rule's load error, got %v", err)
	}
}
