package host

import (
	"context"
	"encoding/json"
	"time"

	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/engine"
	"github.com/nexus-mcp/nexus/internal/gateway"
	"github.com/nexus-mcp/nexus/internal/policy"
	"github.com/nexus-mcp/nexus/sdk/event"
)

// The chain's vocabulary as an embedder speaks it: host's own types,
// each converted to internal/policy's once, where Options reach the
// engine or a result leaves it.

// Answer is a person's reply to a ConfirmRequest.
type Answer int

// The answers a Confirmer gives.
const (
	AnswerNo         Answer = iota // deny this call
	AnswerYes                      // allow this call
	AnswerAlways                   // allow this and every later use of the server
	AnswerAlwaysTool               // allow this and every later call of this tool
)

// ConfirmRequest is what a Confirmer asks a person about.
type ConfirmRequest struct {
	Agent     string
	Server    string
	Tool      string // "" for non-tool methods
	Method    string
	Arguments json.RawMessage
}

// Confirmer asks a person before a trusted agent's first use of a server
// (Options.Confirm); an error (no terminal, closed input) denies.
type Confirmer interface {
	Confirm(ctx context.Context, r ConfirmRequest) (Answer, error)
}

// AllowAll is the Confirmer that approves everything unasked (the
// command line's --yes).
type AllowAll struct{}

// Confirm implements Confirmer.
func (AllowAll) Confirm(context.Context, ConfirmRequest) (Answer, error) { return AnswerYes, nil }

// ClientConfirmer is the Confirmer of a host behind a Gateway: it asks
// the person behind the gateway session the call comes from, through the
// client's elicitation; a client that declared none is denied, with the
// fix.
func ClientConfirmer() Confirmer { return engineConfirmer{gateway.Confirm{}} }

// confirmer is c as the engine asks it.
func confirmer(c Confirmer) policy.Confirmer {
	switch c := c.(type) {
	case nil:
		return nil
	case engineConfirmer:
		return c.c
	case AllowAll:
		return policy.AllowAll{}
	}
	return hostConfirmer{c}
}

type hostConfirmer struct{ c Confirmer }

func (h hostConfirmer) Confirm(ctx context.Context, r policy.ConfirmRequest) (policy.Answer, error) {
	a, err := h.c.Confirm(ctx, ConfirmRequest(r))
	return policy.Answer(a), err
}

// engineConfirmer is one of the engine's confirmers seen as host's.
type engineConfirmer struct{ c policy.Confirmer }

func (e engineConfirmer) Confirm(ctx context.Context, r ConfirmRequest) (Answer, error) {
	a, err := e.c.Confirm(ctx, policy.ConfirmRequest(r))
	return Answer(a), hostErr(err)
}

// Approvals remember a person's "always" answers beyond one process
// (Options.Approvals; OpenApprovals keeps them in a file): by agent and
// server, and by tool where the person chose that (tool "").
type Approvals interface {
	Approved(agent, server, tool string) bool
	Approve(agent, server, tool string) error
}

// Approval is one remembered "always" in an approvals file.
type Approval struct {
	Agent  string `json:"agent"`
	Server string `json:"server"`
	Tool   string `json:"tool,omitempty"` // "" for every use of the server
	// Fingerprint is of the server as approved (Fingerprints): an
	// approval of a server whose command or URL changed since no longer
	// applies.
	Fingerprint string    `json:"fingerprint"`
	Granted     time.Time `json:"granted"`
}

// OpenApprovals keeps a person's "always" answers in the file at path for
// Options.Approvals, valid for cfg's servers as they are now (Fingerprints):
// a server whose command, URL or transport changed is asked about again.
// None yet at path is no error.
func OpenApprovals(path string, cfg *Config) (Approvals, error) {
	a, err := policy.OpenApprovals(path, Fingerprints(cfg))
	if err != nil {
		return nil, hostErr(err)
	}
	return a, nil
}

// ReadApprovals reads the approvals file at path (none yet is empty).
func ReadApprovals(path string) ([]Approval, error) {
	list, err := policy.ReadApprovals(path)
	out := make([]Approval, len(list))
	for i, a := range list {
		out[i] = Approval(a)
	}
	return out, hostErr(err)
}

// WriteApprovals replaces the approvals file at path with list, whole,
// atomically and private to the user.
func WriteApprovals(path string, list []Approval) error {
	in := make([]policy.Approval, len(list))
	for i, a := range list {
		in[i] = policy.Approval(a)
	}
	return hostErr(policy.WriteApprovals(path, in))
}

// Kind says which phase a link acts on.
type Kind int

// The kinds of link: a policy sees requests, a sanitizer responses.
const (
	KindPolicy    Kind = iota // request phase: allow, deny or modify params
	KindSanitizer             // response phase: allow, deny or modify the result
)

func (k Kind) String() string { return policy.Kind(k).String() }

// Link is one step of the chain an embedder adds (Options.Links): it sees
// the events of its kind and decides (sdk/event's Decision), reading the
// event's bytes without writing into them (they may share memory with the
// message being passed on).
type Link interface {
	Name() string
	Handle(ctx context.Context, e *event.Event) (event.Decision, error)
}

// Match selects the events a link sees by glob: any of Servers, any of
// Tools, any of Methods (an empty list matches all).
type Match struct {
	Servers []string
	Tools   []string
	Methods []string
}

// Entry places a Link in the chain: its kind, which events it sees, what
// a failure means, shadow mode.
type Entry struct {
	Link    Link
	Kind    Kind
	Match   []Match // the link sees an event if any Match selects it; none selects all
	OnError string  // "deny" or "allow" (policy), "error" or "pass" (sanitizer); "" fails closed
	// Shadow records what the link decides without enforcing it: a deny
	// is a would-deny, a modify a would-modify, a failure an error that
	// stops nothing. How a new policy is rolled out.
	Shadow bool
	// Source is where the link is defined, file:line, for traces.
	Source string
}

func entries(in []Entry) []policy.Entry {
	if in == nil {
		return nil
	}
	out := make([]policy.Entry, len(in))
	for i, e := range in {
		out[i] = policy.Entry{Link: e.Link, Kind: policy.Kind(e.Kind), OnError: e.OnError, Shadow: e.Shadow, Source: e.Source}
		for _, m := range e.Match {
			out[i].Match = append(out[i].Match, policy.Match(m))
		}
	}
	return out
}

// Flag is what a policy said of a tool's definition (Review).
type Flag struct {
	Link string // the filter or plugin
	Text string
}

func (f Flag) String() string { return f.Link + ": " + f.Text }

// Step is one check a request went through, in a Verdict: the link, what
// it decided and why, where it is defined, how long it took.
type Step struct {
	Link   string
	Kind   Kind
	Source string // where the link is defined, file:line
	Method string
	// Action is allow, deny or modify, or error, or for a shadow link
	// would-deny or would-modify.
	Action   string
	Reason   string
	Flags    []string
	Start    time.Time // zero when no time was taken
	Duration time.Duration
}

// Verdict is what DryRun found the chain would decide of a call.
type Verdict struct {
	Server, Tool string
	// Steps are every check in order, built-in (permission, rules, lock,
	// schema) and configured (the policies, the tools/list review, the
	// sanitizers on a sample result), each with its action, reason,
	// source and time.
	Steps []Step
	// Err is the refusal (a *DeniedError, a *SchemaError, a
	// *WithheldError) or nil when the call would go through.
	Err error
	// Result is the sample result as the sanitizers left it; Raw is
	// that of a read or a prompt (DryRunRequest), as JSON.
	Result *mcp.CallToolResult
	Raw    json.RawMessage
}

func verdict(v *engine.Verdict, err error) (*Verdict, error) {
	if v == nil {
		return nil, hostErr(err)
	}
	out := &Verdict{Server: v.Server, Tool: v.Tool, Err: hostErr(v.Err), Result: v.Result, Raw: v.Raw}
	out.Steps = make([]Step, len(v.Steps))
	for i, s := range v.Steps {
		out.Steps[i] = Step{Link: s.Link, Kind: Kind(s.Kind), Source: s.Source, Method: s.Method, Action: s.Action,
			Reason: s.Reason, Flags: s.Flags, Start: s.Start, Duration: s.Duration}
	}
	return out, hostErr(err)
}

// Definitions are a server's definitions as a policy reviews them (and
// Relock pins them).
type Definitions struct {
	Info      mcp.Implementation
	Tools     []mcp.Tool
	Prompts   []mcp.Prompt
	Templates []mcp.ResourceTemplate
}

// The conversions above keep host's types in step with the engine's.
var (
	_ = ConfirmRequest(policy.ConfirmRequest{})
	_ = Approval(policy.Approval{})
	_ = Flag(policy.Flag{})
	_ = policy.Match(Match{})
	_ = Definitions(engine.Definitions{})
	_ = [1]struct{}{}[policy.AlwaysTool-policy.Answer(AnswerAlwaysTool)]
	_ = [1]struct{}{}[policy.KindSanitizer-policy.Kind(KindSanitizer)]
)
