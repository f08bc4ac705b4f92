package engine

import (
	"context"
	"encoding/json"

	"github.com/nexus-mcp/nexus/internal/audit"
)

// GuardInput runs one request of a server's InputRequiredResult
// (elicitation/create, sampling/createMessage or roots/list: MCP
// 2026-07-28's replacement for a server-initiated request) through the
// chain, as the same request sent by the server would go (guarded): the
// policies see it and may refuse it or change its params, and the audit
// log records it. The answer is the agent's to give, on its retry, so
// only the request's half of the chain runs here. It returns the params
// to pass on, or the refusal.
func (h *Host) GuardInput(ctx context.Context, server, method string, params json.RawMessage) (json.RawMessage, error) {
	return h.guard(ctx, server, method, params, nil, nil)
}

// GuardAnswer runs a modern agent's answer to one of a server's input
// requests (its retry's inputResponses[key], result) through the
// chain's response half, as the answer to the same request sent by the
// server goes (guarded): the sanitizers see it beside the request it
// answers (params, as GuardInput let it through) and may change or
// refuse it, and the audit log records it, flagged "answer", under the
// call ctx names (WithCallID). It returns the answer to pass
// on, or the refusal.
func (h *Host) GuardAnswer(ctx context.Context, server, method string, params, result json.RawMessage) (json.RawMessage, error) {
	return h.guard(ctx, server, method, params, result, []string{"answer"})
}

// guard runs a question (result nil: the chain's request half) or its
// answer (the response half) through the chain, audited when the host
// observes, and returns what the chain let through.
func (h *Host) guard(ctx context.Context, server, method string, params, result json.RawMessage, flags []string) (json.RawMessage, error) {
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
