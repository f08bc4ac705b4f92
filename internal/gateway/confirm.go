package gateway

import (
	"context"
	"errors"
	"fmt"

	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/policy"
)

// Confirm asks the person behind a gateway session, through the client's
// elicitation, before a trusted agent first uses a server: the gateway's
// policy.Confirmer (host.Options.Confirm). A client that declared no
// elicitation cannot be asked, and the call is denied with the fix.
type Confirm struct{}

var _ policy.Confirmer = Confirm{}

// Confirm implements policy.Confirmer.
func (Confirm) Confirm(ctx context.Context, r policy.ConfirmRequest) (policy.Answer, error) {
	s, _ := mcp.HandlerOf(ctx).(*session)
	if s == nil {
		return policy.No, errors.New("no gateway session to ask")
	}
	s.mu.Lock()
	var caps mcp.ClientCapabilities
	if s.init != nil {
		caps = s.init.Capabilities
	}
	s.mu.Unlock()
	if caps.Elicitation == nil {
		return policy.No, errors.New("the MCP client declared no elicitation, so the gateway cannot ask its user")
	}
	what := fmt.Sprintf("server %q", r.Server)
	if r.Tool != "" {
		what = fmt.Sprintf("tool %q of server %q", r.Tool, r.Server)
	}
	p := &mcp.ElicitParams{
		Mode: "form",
		Message: fmt.Sprintf("Nexus: agent %q wants to use %s for the first time. Allow it?", r.Agent, what) +
			" (\"always\" allows every later call to this server too)",
		RequestedSchema: []byte(`{"type":"object","properties":{"answer":{"type":"string","title":"Allow?","enum":["yes","no","always"]}},"required":["answer"]}`),
	}
	var res mcp.ElicitResult
	if err := s.peer.Call(ctx, mcp.MethodElicitationCreate, p, &res); err != nil {
		return policy.No, err
	}
	if res.Action != "accept" {
		return policy.No, nil
	}
	switch res.Content["answer"] {
	case "yes":
		return policy.Yes, nil
	case "always":
		return policy.Always, nil
	}
	return policy.No, nil
}
