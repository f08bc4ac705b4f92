package host

import (
	"context"
	"encoding/json"

	"github.com/nexus-mcp/nexus/internal/audit"
	"github.com/nexus-mcp/nexus/internal/gateway"
)

// Gateway serves a host to MCP clients, as `nexus serve` does: one catalog
// of every server the client's agent may see, each request through the
// chain, server-initiated requests back to the session that caused them.
// Serve runs one session over any mcp.Conn (mcp.StdioConn() for stdio);
// HTTP makes the streamable HTTP handler (with the legacy HTTP+SSE
// endpoints, /healthz and /readyz). Safe for concurrent use; Close ends
// every session.
type Gateway = gateway.Gateway

// GatewayOptions tune a Gateway (page size, instructions, the timeout of
// requests sent to clients, requests per session). The zero value is
// usable.
type GatewayOptions = gateway.Options

// GatewayHTTPOptions configure Gateway.HTTP: the agent every request acts
// as (or none, and each request's token names it), allowed browser
// origins, the servers /readyz requires, limits, an OAuth verifier.
type GatewayHTTPOptions = gateway.HTTPOptions

// NewGateway makes a gateway in front of h. Its sessions connect upstream
// through hosts h.NewSession makes (one per agent that its sessions
// share, and one per session whose client answers server requests), so
// a server's notifications reach only the agent they concern.
func NewGateway(h *Host, o GatewayOptions) *Gateway {
	if o.Version == "" {
		o.Version = Version
	}
	return gateway.New(upstream{h}, o)
}

// upstream is a Host as the gateway sees it (gateway.Upstream): the same
// methods, but NewSession's host is one too.
type upstream struct{ *Host }

func (u upstream) NewSession(o SessionOptions) gateway.Upstream {
	return upstream{u.Host.NewSession(o)}
}

var _ gateway.Upstream = upstream{}

// GuardInput runs one request of a server's InputRequiredResult
// (elicitation/create, sampling/createMessage or roots/list: MCP
// 2026-07-28's replacement for a server-initiated request) through the
// chain, as the same request sent by the server would go (guarded): the
// policies see it and may refuse it or change its params, and the audit
// log records it. The answer is the agent's to give, on its retry, so
// only the request's half of the chain runs here. It returns the params
// to pass on, or the refusal.
func (u upstream) GuardInput(ctx context.Context, server, method string, params json.RawMessage) (json.RawMessage, error) {
	return u.guard(ctx, server, method, params, nil, nil)
}

// GuardAnswer runs a modern agent's answer to one of a server's input
// requests (its retry's inputResponses[key], result) through the
// chain's response half, as the answer to the same request sent by the
// server goes (guarded): the sanitizers see it beside the request it
// answers (params, as GuardInput let it through) and may change or
// refuse it, and the audit log records it, flagged "answer", under the
// call ctx names (hostapi.WithCallID). It returns the answer to pass
// on, or the refusal.
func (u upstream) GuardAnswer(ctx context.Context, server, method string, params, result json.RawMessage) (json.RawMessage, error) {
	return u.guard(ctx, server, method, params, result, []string{"answer"})
}

// guard runs a question (result nil: the chain's request half) or its
// answer (the response half) through the chain, audited when the host
// observes, and returns what the chain let through.
func (u upstream) guard(ctx context.Context, server, method string, params, result json.RawMessage, flags []string) (json.RawMessage, error) {
	h := u.Host
	out := params
	if result != nil {
		out = result
	}
	run := func(ctx context.Context) error {
		if err := h.loadChain(ctx); err != nil {
			return err
		}
		if h.chain.Len() == 0 {
			return nil
		}
		ev := h.event(h.hooks.agent, server, method, nil)
		ev.Params = params
		var err error
		if result == nil {
			out, err = h.chain.Request(ctx, ev)
		} else {
			ev.Result = result
			out, err = h.chain.Response(ctx, ev)
		}
		return err
	}
	var err error
	if h.observing() {
		rec := audit.Record{Agent: h.hooks.agent, Server: server, Method: method, Flags: flags}
		err = h.audited(ctx, &rec, run)
	} else {
		err = run(ctx)
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}
