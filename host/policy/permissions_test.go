package policy

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/nexus-mcp/nexus/sdk/event"
)

type scripted struct {
	answers []Answer
	asked   int
}

func (s *scripted) Confirm(context.Context, ConfirmRequest) (Answer, error) {
	if s.asked >= len(s.answers) {
		return No, errors.New("no terminal")
	}
	s.asked++
	return s.answers[s.asked-1], nil
}

func TestPermissionLevels(t *testing.T) {
	ctx := context.Background()
	agents := []Agent{
		{Name: "y", Permission: event.Yolo},
		{Name: "t", Permission: event.Trusted},
		{Name: "s", Permission: event.Sandboxed},
		{Name: "r", Permission: event.Yolo, Servers: []string{"gh"}, Allow: []string{"gh.*"}, Deny: []string{"gh.delete_*"}},
	}
	call := func(agent, server, tool string) ConfirmRequest {
		return ConfirmRequest{Agent: agent, Server: server, Tool: tool, Method: "tools/call"}
	}
	conf := &scripted{answers: []Answer{Yes, Always}}
	p := NewPermissions(agents, conf)
	if err := p.Check(ctx, call("y", "gh", "x")); err != nil {
		t.Fatal(err)
	}
	// trusted: yes allows one call, always the rest of the session.
	for i := 0; i < 4; i++ {
		if err := p.Check(ctx, call("t", "gh", "x")); err != nil {
			t.Fatal(i, err)
		}
	}
	if conf.asked != 2 {
		t.Fatalf("asked %d times, want 2 (yes, then always)", conf.asked)
	}
	// A different server is asked again; with no answer left it is denied.
	err := p.Check(ctx, call("t", "fs", "x"))
	if err == nil || !strings.Contains(err.Error(), "--yes") {
		t.Fatalf("want denial naming --yes, got %v", err)
	}
	for _, tc := range []struct{ agent, server, tool, want string }{
		{"s", "gh", "x", "sandboxed"},
		{"nobody", "gh", "x", `agent "nobody" has no permission configured`},
		{"r", "fs", "x", `may not use server "fs"`},
		{"r", "gh", "delete_repo", "allow/deny rules"},
	} {
		err := p.Check(ctx, call(tc.agent, tc.server, tc.tool))
		var de *DeniedError
		if !errors.As(err, &de) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: got %v", tc, err)
		}
	}
	if err := p.Check(ctx, call("r", "gh", "list_repos")); err != nil {
		t.Fatal(err)
	}
	if err := NewPermissions(agents, nil).Check(ctx, call("t", "gh", "x")); err == nil {
		t.Fatal("trusted without a confirmer must be denied")
	}
	if err := NewPermissions(agents, AllowAll{}).Check(ctx, call("t", "gh", "x")); err != nil {
		t.Fatal(err)
	}
	if NewPermissions(agents, nil).ToolAllowed("r", "gh", "delete_x") {
		t.Fatal("deny must win over allow")
	}
}

// A trusted agent's ping asks nobody; on a server with confirm =
// "tool_calls" its reads ask nobody either, while its tool calls still do.
// The rules and the sandbox still hold for both.
func TestConfirmOnlyToolCalls(t *testing.T) {
	ctx := context.Background()
	agents := []Agent{
		{Name: "t", Permission: event.Trusted},
		{Name: "s", Permission: event.Sandboxed},
		{Name: "r", Permission: event.Trusted, Servers: []string{"gh"}},
	}
	p := NewPermissions(agents, nil, "ts") // nobody can be asked
	req := func(agent, server, method string) ConfirmRequest {
		return ConfirmRequest{Agent: agent, Server: server, Method: method}
	}
	for _, m := range []string{"resources/read", "prompts/get", "completion/complete", "ping"} {
		if err := p.Check(ctx, req("t", "ts", m)); err != nil {
			t.Errorf("%s of ts: %v", m, err)
		}
	}
	if err := p.Check(ctx, req("t", "gh", "ping")); err != nil {
		t.Errorf("ping of gh: %v", err)
	}
	for _, tc := range []ConfirmRequest{
		{Agent: "t", Server: "ts", Tool: "echo", Method: "tools/call"}, // a call is still confirmed
		req("t", "gh", "resources/read"),                               // gh's reads are
		req("s", "ts", "resources/read"),                               // the sandbox holds
		req("r", "ts", "ping"),                                         // and the agent's servers list
	} {
		if err := p.Check(ctx, tc); err == nil {
			t.Errorf("%+v was allowed", tc)
		}
	}
}
