package engine

import (
	"context"

	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/audit"
	"github.com/nexus-mcp/nexus/internal/telemetry"
)

// listTraced puts a list request the gateway serves under a span of its
// own when tracing is on, as calls, reads and prompts are: it continues
// the client's trace (WithTraceContext), says what the
// conventions ask of the request served, and a list fetched upstream
// (not served from the cache) carries the trace on in its _meta
// (mcp.WithListMeta). end ends the span with the listing's outcome.
func (h *Host) listTraced(ctx context.Context, method string) (_ context.Context, end func(error)) {
	tel := h.opts.Telemetry
	if !tel.Tracing() {
		return ctx, func(error) {}
	}
	ctx, sp := tel.Start(ctx, method, TraceContextFrom(ctx))
	if m := h.upstreamMeta(ctx); m != nil {
		ctx = mcp.WithListMeta(ctx, m)
	}
	return ctx, func(err error) {
		rec := audit.Record{Method: method, Session: h.hooks.session}
		if id, ok := SessionFrom(ctx); ok {
			rec.Session = id
		}
		decide(&rec, nil, err, false)
		telemetry.End(sp, spanOf(ctx, &rec, err), err)
	}
}

// TraceList is listTraced for the gateway, around each list request it
// serves.
func (h *Host) TraceList(ctx context.Context, method string) (context.Context, func(error)) {
	return h.listTraced(ctx, method)
}
