package policy

import (
	"context"
	"errors"
	"os"
	"path/filepath"
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
		{Name: "l", Permission: event.Yolo, Allow: []string{"gh.get_*"}},
	}
	call := func(agent, server, tool string) ConfirmRequest {
		return ConfirmRequest{Agent: agent, Server: server, Tool: tool, Method: "tools/call"}
	}
	conf := &scripted{answers: []Answer{Yes, Always}}
	p := NewPermissions(agents, PermissionOptions{Confirm: conf})
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
		{"r", "gh", "delete_repo", `its deny rule "gh.delete_*" matches it`},
		{"l", "gh", "star", `no pattern of its allow list ["gh.get_*"] matches it`},
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
	if err := NewPermissions(agents, PermissionOptions{}).Check(ctx, call("t", "gh", "x")); err == nil {
		t.Fatal("trusted without a confirmer must be denied")
	}
	if err := NewPermissions(agents, PermissionOptions{Confirm: AllowAll{}}).Check(ctx, call("t", "gh", "x")); err != nil {
		t.Fatal(err)
	}
	if NewPermissions(agents, PermissionOptions{}).ToolAllowed("r", "gh", "delete_x") {
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
	p := NewPermissions(agents, PermissionOptions{CallsOnly: []string{"ts"}}) // nobody can be asked
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

// "Always" outlives the process where Approvals are kept, by server or by
// tool; an approval of a server that changed since no longer applies;
// --yes (AllowAll) is never remembered.
func TestRememberedApprovals(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "approvals.json")
	fps := map[string]string{"gh": Fingerprint("stdio", "gh-server"), "fs": Fingerprint("stdio", "fs-server")}
	open := func(fps map[string]string) *FileApprovals {
		t.Helper()
		a, err := OpenApprovals(path, fps)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	agents := []Agent{{Name: "t", Permission: event.Trusted}}
	call := func(server, tool string) ConfirmRequest {
		return ConfirmRequest{Agent: "t", Server: server, Tool: tool, Method: "tools/call"}
	}
	first := NewPermissions(agents, PermissionOptions{Confirm: &scripted{answers: []Answer{Always, AlwaysTool}}, Approvals: open(fps)})
	if err := first.Check(ctx, call("gh", "x")); err != nil {
		t.Fatal(err)
	}
	if err := first.Check(ctx, call("fs", "read")); err != nil {
		t.Fatal(err)
	}
	// A new process, nobody to ask: the remembered answers hold.
	later := NewPermissions(agents, PermissionOptions{Approvals: open(fps)})
	for _, r := range []ConfirmRequest{call("gh", "x"), call("gh", "y"), call("fs", "read")} {
		if err := later.Check(ctx, r); err != nil {
			t.Errorf("%+v: %v", r, err)
		}
	}
	if err := later.Check(ctx, call("fs", "write")); err == nil {
		t.Error("fs.write passed on an approval of fs.read alone")
	}
	// gh now runs something else: asked again.
	changed := map[string]string{"gh": Fingerprint("stdio", "gh-server", "--evil"), "fs": fps["fs"]}
	if err := NewPermissions(agents, PermissionOptions{Approvals: open(changed)}).Check(ctx, call("gh", "x")); err == nil {
		t.Error("an approval outlived a change of the server's command")
	}
	// --yes approves, and is not remembered.
	os.Remove(path)
	if err := NewPermissions(agents, PermissionOptions{Confirm: AllowAll{}, Approvals: open(fps)}).Check(ctx, call("gh", "x")); err != nil {
		t.Fatal(err)
	}
	if list, _ := ReadApprovals(path); len(list) != 0 {
		t.Errorf("--yes was remembered: %+v", list)
	}
	// A file that is not an approvals file says so.
	os.WriteFile(path, []byte("{oops"), 0o600)
	if _, err := OpenApprovals(path, fps); err == nil || !strings.Contains(err.Error(), "revoke --all") {
		t.Errorf("a broken file: %v", err)
	}
}

// An agent's rules in shadow mode refuse nothing: a call they would deny
// goes through, recorded as would-deny by link "rules" at the agent's
// block, and the tool stays listed.
func TestShadowRules(t *testing.T) {
	call := func(agent, server, tool string) ConfirmRequest {
		return ConfirmRequest{Agent: agent, Server: server, Tool: tool, Method: "tools/call"}
	}
	p := NewPermissions([]Agent{{Name: "y", Permission: event.Yolo, Servers: []string{"gh"}, Deny: []string{"gh.delete_*"}, ShadowRules: true, Where: "nexus.hcl:7"}}, PermissionOptions{})
	tr := &Trace{}
	ctx := WithTrace(context.Background(), tr)
	if err := p.Check(ctx, call("y", "gh", "delete_repo")); err != nil {
		t.Fatalf("a shadow rule refused: %v", err)
	}
	if err := p.Check(ctx, call("y", "db", "query")); err != nil {
		t.Fatalf("a shadow servers list refused: %v", err)
	}
	s := tr.Steps()
	if len(s) != 2 || s[0].Link != "rules" || s[0].Action != ActionWouldDeny || s[0].Source != "nexus.hcl:7" ||
		!strings.Contains(s[0].Reason, `deny rule "gh.delete_*"`) || !strings.Contains(s[1].Reason, `may not use server "db"`) {
		t.Errorf("steps %+v", s)
	}
	if !p.ToolAllowed("y", "gh", "delete_repo") || !p.ServerVisible("y", "db") {
		t.Error("a shadow rule hid a tool or a server")
	}
	// Enforced, the same rules refuse.
	p = NewPermissions([]Agent{{Name: "y", Permission: event.Yolo, Deny: []string{"gh.delete_*"}}}, PermissionOptions{})
	if err := p.Check(context.Background(), call("y", "gh", "delete_repo")); err == nil {
		t.Error("an enforced deny rule let the call through")
	}
}
