package policy

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"sync"

	"github.com/nexus-mcp/nexus/internal/ctxval"
	"github.com/nexus-mcp/nexus/sdk/event"
)

// Agent is what the permission check knows of a caller: its level, the
// servers it may see and allow/deny globs over "server.tool".
type Agent struct {
	Name       string
	Permission string   // event.Yolo, event.Trusted or event.Sandboxed
	Servers    []string // globs; empty means every server
	Allow      []string // "server.tool" globs; empty means every tool
	Deny       []string // wins over Allow
	Source     string   // where the agent was configured, for errors
	// ShadowRules records what Servers, Allow and Deny refuse as
	// would-deny, without refusing it (mode = "shadow"); Where is the
	// agent block's file:line for that record.
	ShadowRules bool
	Where       string
}

// Answer is a person's reply to a confirmation.
type Answer int

const (
	No         Answer = iota // deny this call
	Yes                      // allow this call
	Always                   // allow this and every later use of the server (remembered where Approvals are kept)
	AlwaysTool               // allow this and every later call of this tool (remembered likewise)
)

// Approvals remember "always" answers beyond one process (see
// FileApprovals): by agent and server, and by tool where the person chose
// that (tool ""). A store forgets, in effect, an approval of a server
// whose command or URL has changed since.
type Approvals interface {
	Approved(agent, server, tool string) bool
	Approve(agent, server, tool string) error
}

// ConfirmRequest is what a person is asked about.
type ConfirmRequest struct {
	Agent     string
	Server    string
	Tool      string // "" for non-tool methods
	Method    string
	Arguments json.RawMessage
}

// Confirmer asks a person. An error (no terminal, closed input) denies.
type Confirmer interface {
	Confirm(ctx context.Context, r ConfirmRequest) (Answer, error)
}

// Permissions are the built-in policy: permission levels with confirmation
// and the agent's allow and deny rules. It runs before every other link.
type Permissions struct {
	agents    map[string]Agent
	confirm   Confirmer
	approvals Approvals
	callsOnly map[string]bool // servers whose reads a trusted agent uses unasked

	mu      sync.Mutex
	allowed map[[3]string]bool // agent, server, tool ("" for all): confirmed "always" this session
}

// PermissionOptions complete the agents' permissions.
type PermissionOptions struct {
	// Confirm asks a person; nil: trusted agents are denied where they
	// would be asked.
	Confirm Confirmer
	// Approvals, if set, remember "always" answers across processes.
	Approvals Approvals
	// CallsOnly names the servers (confirm = "tool_calls") where only a
	// trusted agent's tool calls are confirmed, not its reads.
	CallsOnly []string
}

// NewPermissions makes the check for the configured agents.
func NewPermissions(agents []Agent, o PermissionOptions) *Permissions {
	p := &Permissions{agents: map[string]Agent{}, confirm: o.Confirm, approvals: o.Approvals, allowed: map[[3]string]bool{}, callsOnly: map[string]bool{}}
	for _, a := range agents {
		p.agents[a.Name] = a
	}
	for _, s := range o.CallsOnly {
		p.callsOnly[s] = true
	}
	return p
}

// Agent returns an agent's configuration.
func (p *Permissions) Agent(name string) (Agent, bool) {
	a, ok := p.agents[name]
	return a, ok
}

// approved says whether a remembered approval covers r.
func (p *Permissions) approved(r ConfirmRequest) bool {
	if p.approvals == nil {
		return false
	}
	if p.approvals.Approved(r.Agent, r.Server, "") {
		return true
	}
	return r.Tool != "" && p.approvals.Approved(r.Agent, r.Server, r.Tool)
}

// ServerVisible reports whether agent may see server at all. An agent
// whose rules are in shadow mode sees every server.
func (p *Permissions) ServerVisible(agent, server string) bool {
	a, ok := p.agents[agent]
	if !ok || a.Permission == event.Sandboxed || a.Permission == "" {
		return false
	}
	return a.ShadowRules || serverAllowed(a, server)
}

func serverAllowed(a Agent, server string) bool {
	return len(a.Servers) == 0 || anyGlob(a.Servers, server)
}

// ToolAllowed applies the agent's rules to server.tool: deny wins, and a
// non-empty allow list admits only what it names. Rules in shadow mode
// allow everything (Check records what they would refuse).
func (p *Permissions) ToolAllowed(agent, server, tool string) bool {
	a, ok := p.agents[agent]
	if !ok || !p.ServerVisible(agent, server) {
		return false
	}
	return a.ShadowRules || toolAllowed(a, server, tool)
}

func toolAllowed(a Agent, server, tool string) bool {
	ref := server + "." + tool
	if matchAny(a.Deny, ref) {
		return false
	}
	return len(a.Allow) == 0 || matchAny(a.Allow, ref)
}

func matchAny(globs []string, s string) bool { return matching(globs, s) != "" }

// matching is the first of globs that matches s, or "".
func matching(globs []string, s string) string {
	for _, g := range globs {
		if ok, _ := path.Match(g, s); ok {
			return g
		}
	}
	return ""
}

// ruleOf says which of the agent's rules keeps it from server.tool.
func ruleOf(a Agent, ref string) string {
	if g := matching(a.Deny, ref); g != "" {
		return fmt.Sprintf("its deny rule %q matches it", g)
	}
	return fmt.Sprintf("no pattern of its allow list %q matches it", a.Allow)
}

// Check decides whether agent may make this call, asking for confirmation
// where the level says so. A refusal is a *DeniedError naming the link
// ("permission" or "rules") and how to change the outcome.
func (p *Permissions) Check(ctx context.Context, r ConfirmRequest) error {
	deny := func(link, reason string) error {
		return &DeniedError{Link: link, Kind: KindPolicy, Reason: reason, Method: r.Method, Server: r.Server, Tool: r.Tool}
	}
	a, ok := p.agents[r.Agent]
	if ok && a.Permission != "" && a.Permission != event.Sandboxed {
		if why := rulesRefuse(a, r); why != "" {
			if !a.ShadowRules {
				return deny("rules", why)
			}
			TraceFrom(ctx).Add(Step{Link: "rules", Source: a.Where, Method: r.Method, Action: ActionWouldDeny, Reason: why})
		}
	}
	switch {
	case !ok || a.Permission == "":
		return deny("permission", fmt.Sprintf("agent %q has no permission configured, so it has no MCP access; grant it with agent %q { permission = \"trusted\" } (or \"yolo\") in nexus.hcl", r.Agent, r.Agent))
	case a.Permission == event.Sandboxed:
		return deny("permission", fmt.Sprintf("agent %q is sandboxed, which allows no MCP access; change its permission to \"trusted\" or \"yolo\"%s", r.Agent, from(a)))
	case a.Permission == event.Yolo:
		return nil
	case a.Permission != event.Trusted:
		return deny("permission", fmt.Sprintf("agent %q has unknown permission %q; use \"yolo\", \"trusted\" or \"sandboxed\"%s", r.Agent, a.Permission, from(a)))
	case r.Method == "ping":
		return nil // a ping uses nothing of the server
	case r.Method != "tools/call" && p.callsOnly[r.Server]:
		return nil // the server's reads need no confirmation (confirm = "tool_calls")
	}
	server, tool := [3]string{r.Agent, r.Server, ""}, [3]string{r.Agent, r.Server, r.Tool}
	p.mu.Lock()
	ok = p.allowed[server] || (r.Tool != "" && p.allowed[tool])
	p.mu.Unlock()
	if ok || p.approved(r) {
		return nil
	}
	if dryRun(ctx) {
		return &WouldAskError{Agent: r.Agent, Server: r.Server}
	}
	if p.confirm == nil {
		return deny("permission", fmt.Sprintf("agent %q is trusted, so its first use of server %q needs a person's confirmation, and nobody can be asked here; pass --yes, or set permission = \"yolo\" for the agent", r.Agent, r.Server))
	}
	ans, err := p.confirm.Confirm(ctx, r)
	if err != nil {
		return deny("permission", fmt.Sprintf("confirmation for server %q could not be asked (%v); pass --yes to approve non-interactively, or set permission = \"yolo\" for agent %q", r.Server, err, r.Agent))
	}
	switch ans {
	case Always, AlwaysTool:
		key, t := server, ""
		if ans == AlwaysTool && r.Tool != "" {
			key, t = tool, r.Tool
		}
		p.mu.Lock()
		p.allowed[key] = true
		p.mu.Unlock()
		if p.approvals != nil {
			// Not remembering is no reason to refuse what a person
			// just allowed; the store reports its own trouble.
			_ = p.approvals.Approve(r.Agent, r.Server, t)
		}
		return nil
	case Yes:
		return nil
	}
	return deny("permission", "declined at the confirmation prompt")
}

// WouldAskError is what Check returns under WithDryRun where it would
// ask a person: nexus explain says so rather than asking.
type WouldAskError struct{ Agent, Server string }

func (e *WouldAskError) Error() string {
	return fmt.Sprintf("agent %q is trusted, so its first use of server %q asks a person (or takes --yes, or a remembered approval)", e.Agent, e.Server)
}

type dryRunKey struct{}

// WithDryRun marks ctx as a dry run: Check asks nobody.
func WithDryRun(ctx context.Context) context.Context {
	return ctxval.With(ctx, dryRunKey{}, true)
}

func dryRun(ctx context.Context) bool { b, _ := ctx.Value(dryRunKey{}).(bool); return b }

// rulesRefuse says why the agent's servers, allow and deny rules refuse
// r, or "".
func rulesRefuse(a Agent, r ConfirmRequest) string {
	switch {
	case r.Server != "" && !serverAllowed(a, r.Server):
		return fmt.Sprintf("agent %q may not use server %q (its servers list: %v)%s", r.Agent, r.Server, a.Servers, from(a))
	case r.Server != "" && r.Tool != "" && !toolAllowed(a, r.Server, r.Tool):
		return fmt.Sprintf("%s.%s is not allowed for agent %q: %s%s", r.Server, r.Tool, r.Agent, ruleOf(a, r.Server+"."+r.Tool), from(a))
	}
	return ""
}

func from(a Agent) string {
	if a.Source == "" {
		return ""
	}
	return " (agent defined in " + a.Source + ")"
}

// AllowAll is a Confirmer that says yes to everything: what --yes means.
type AllowAll struct{}

// Yes, not Always: --yes approves this run's uses, and is never
// remembered as a person's "always" would be.
func (AllowAll) Confirm(context.Context, ConfirmRequest) (Answer, error) { return Yes, nil }
