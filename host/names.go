package host

import (
	"context"

	"github.com/nexus-mcp/nexus/internal/audit"
	"github.com/nexus-mcp/nexus/internal/auth"

	"github.com/nexus-mcp/nexus/internal/engine"
	"github.com/nexus-mcp/nexus/internal/policy"
)

// The types below are implemented under internal/ and named here, so an
// embedder can write them without importing what it cannot import.

// Confirmer asks a person before a trusted agent's first use of a server
// (Options.Confirm); an error denies.
type Confirmer = policy.Confirmer

// ConfirmRequest is what a Confirmer asks about.
type ConfirmRequest = policy.ConfirmRequest

// Answer is a person's reply to a ConfirmRequest.
type Answer = policy.Answer

// The answers a Confirmer gives.
const (
	AnswerNo         = policy.No         // deny this call
	AnswerYes        = policy.Yes        // allow this call
	AnswerAlways     = policy.Always     // allow this and every later use of the server
	AnswerAlwaysTool = policy.AlwaysTool // allow this and every later call of this tool
)

// Approvals remember a person's "always" answers (Options.Approvals).
type Approvals = policy.Approvals

// Flag is what a policy said of a tool's definition (Review).
type Flag = policy.Flag

// WithSession names, for the audit log, the downstream session a request
// comes from (the gateway's).
func WithSession(ctx context.Context, id string) context.Context {
	return engine.WithSession(ctx, id)
}

// WithTraceContext hands a request's W3C trace context (its _meta's
// "traceparent", "tracestate" and "baggage") to the host, whose span then
// continues it; values over the W3C limits or malformed are ignored.
func WithTraceContext(ctx context.Context, meta map[string]string) context.Context {
	return engine.WithTraceContext(ctx, meta)
}

// Link is one step of the chain an embedder adds (Options.Links): it sees
// the events of its kind and decides (sdk/event's Decision), reading the
// event's bytes without writing into them (they may share memory with the
// message being passed on). Entry places it: its kind, which events it
// sees, what a failure means, shadow mode.
type (
	Link  = policy.Link
	Entry = policy.Entry
	Match = policy.Match
	Kind  = policy.Kind
)

// The kinds of link: a policy sees requests, a sanitizer responses.
const (
	KindPolicy    = policy.KindPolicy
	KindSanitizer = policy.KindSanitizer
)

// AuditLog is the hash-chained audit log (Options.Audit); OpenAudit opens
// the one the config's audit block names.
type AuditLog = audit.Writer

// Opener shows a person an authorization URL (AuthOptions.Opener).
type Opener = auth.Opener

// Step is one check a request went through, in a Verdict: the link, what
// it decided and why, where it is defined, how long it took.
type Step = policy.Step
