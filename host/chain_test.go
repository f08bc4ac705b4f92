package host_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/nexus-mcp/nexus/host"
	"github.com/nexus-mcp/nexus/sdk/event"
)

// askOnce is an embedder's Confirmer: it records what it was asked and
// gives answer.
type askOnce struct {
	answer host.Answer
	asked  []host.ConfirmRequest
}

func (a *askOnce) Confirm(_ context.Context, r host.ConfirmRequest) (host.Answer, error) {
	a.asked = append(a.asked, r)
	return a.answer, nil
}

// memApprovals is an embedder's Approvals.
type memApprovals map[string]bool

func (m memApprovals) Approved(agent, server, tool string) bool { return m[agent+"/"+server] }
func (m memApprovals) Approve(agent, server, tool string) error {
	m[agent+"/"+server] = true
	return nil
}

// The chain's vocabulary is host's own: an embedder's Confirmer is asked
// with a host.ConfirmRequest and its host.Answer decides; "always" goes
// to its Approvals; its Link, placed by an Entry, sees the call.
func TestChainOwnTypes(t *testing.T) {
	cfg, err := host.ParseConfig([]byte(`{
	  "mcpServers": {"ts": {"command": "nexus", "args": ["testserver"]}},
	  "agents": {"bot": {"permission": "trusted"}}
	}`), "example.json")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	args := map[string]any{"a": 1, "b": 2}

	no := &askOnce{answer: host.AnswerNo}
	h := host.New(cfg, host.Options{Dial: inProcess, Confirm: no})
	_, err = h.CallTool(ctx, "bot", "ts.add", args, nil)
	h.Close()
	var denied *host.DeniedError
	if !errors.As(err, &denied) || len(no.asked) != 1 || no.asked[0].Agent != "bot" || no.asked[0].Tool != "add" {
		t.Fatalf("denied %v, asked %+v", err, no.asked)
	}

	always, approved := &askOnce{answer: host.AnswerAlways}, memApprovals{}
	seen := 0
	link := linkFunc(func(e *event.Event) { seen++ })
	h = host.New(cfg, host.Options{Dial: inProcess, Confirm: always, Approvals: approved,
		Links: []host.Entry{{Link: link, Kind: host.KindPolicy, Match: []host.Match{{Tools: []string{"add"}, Methods: []string{"tools/call"}}}}}})
	defer h.Close()
	for range 2 {
		if _, err := h.CallTool(ctx, "bot", "ts.add", args, nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := h.CallTool(ctx, "bot", "ts.echo", map[string]any{"message": "hi"}, nil); err != nil {
		t.Fatal(err)
	}
	if len(always.asked) != 1 || !approved["bot/ts"] || seen != 2 {
		t.Errorf("asked %d times, approvals %v, the link saw %d calls of add", len(always.asked), approved, seen)
	}
	if a, _ := (host.AllowAll{}).Confirm(ctx, host.ConfirmRequest{}); a != host.AnswerYes {
		t.Errorf("AllowAll answered %v", a)
	}
}

type linkFunc func(*event.Event)

func (linkFunc) Name() string { return "count" }
func (f linkFunc) Handle(_ context.Context, e *event.Event) (event.Decision, error) {
	f(e)
	return event.Decision{Action: event.Allow}, nil
}

// An approvals file round-trips through host's Approval.
func TestApprovalsFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "approvals.json")
	want := []host.Approval{{Agent: "bot", Server: "ts", Tool: "add", Fingerprint: "f"}}
	if err := host.WriteApprovals(path, want); err != nil {
		t.Fatal(err)
	}
	got, err := host.ReadApprovals(path)
	if err != nil || len(got) != 1 || got[0].Agent != "bot" || got[0].Tool != "add" {
		t.Fatalf("%+v %v", got, err)
	}
}
