package host

import (
	"context"

	"github.com/nexus-mcp/nexus/internal/engine"
)

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

// Opener shows a person an authorization URL (AuthOptions.Opener).
type Opener func(ctx context.Context, authURL string) error
