package host

import (
	"context"

	"github.com/nexus-mcp/nexus/internal/audit"

	"github.com/nexus-mcp/nexus/internal/engine"
)

// The types below are implemented under internal/ and named here, so an
// embedder can write them without importing what it cannot import.

// SessionOptions say where a session's server-initiated requests and
// notifications go (NewSession, SetNotify): whom it acts for, the roots,
// sampling and elicitation handlers, and the log, list-change, resource
// update and state-change callbacks.
type SessionOptions = engine.SessionOptions

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

// DecisionFeed hands decision records to watchers in this process as the
// audit log gets them (Options.Feed); Decision is one, with its latency.
type (
	DecisionFeed = audit.Feed
	Decision     = audit.Decision
)

// Opener shows a person an authorization URL (AuthOptions.Opener).
type Opener func(ctx context.Context, authURL string) error
