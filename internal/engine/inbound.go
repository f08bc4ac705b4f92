package engine

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/audit"
	"github.com/nexus-mcp/nexus/internal/policy"
)

// Requests servers send (sampling, elicitation, roots) go through the
// chain like calls do: policies see the request (sampling/createMessage,
// elicitation/create, roots/list) before whoever answers it, and may
// refuse or change it; sanitizers see the answer before the server does.

// guarded wraps a handler of server-initiated requests with the chain.
func guarded[P, R any](h *Host, server, method string, f func(context.Context, *P) (*R, error)) func(context.Context, *P) (*R, error) {
	return func(ctx context.Context, p *P) (res *R, err error) {
		if h.observing() {
			rec := audit.Record{Agent: h.hooks.agent, Server: server, Method: method}
			// The handler may learn which call the request belongs to;
			// hooks.callOf tells it before the chain, which may refuse
			// the request before the handler runs. On an agent's shared
			// connection the session is that call's (the connection is
			// no one session's).
			ctx, slot := withCallSlot(ctx)
			if h.hooks.callOf != nil {
				slot.set(h.hooks.callOf(ctx, server))
			}
			err = h.audited(ctx, &rec, func(ctx context.Context) error {
				res, err = guardedRun(ctx, h, server, method, p, f)
				rec.Call = slot.call
				if slot.session != "" {
					rec.Session = slot.session
				}
				return err
			})
			return res, err
		}
		return guardedRun(ctx, h, server, method, p, f)
	}
}

// guardedRun is one server-initiated request through the chain.
func guardedRun[P, R any](ctx context.Context, h *Host, server, method string, p *P, f func(context.Context, *P) (*R, error)) (*R, error) {
	{
		if err := h.loadChain(ctx); err != nil {
			return nil, refusal(err)
		}
		if h.chain.Len() == 0 {
			return f(ctx, p)
		}
		raw, err := json.Marshal(p)
		if err != nil {
			return nil, err
		}
		ev := h.event(h.hooks.agent, server, method, nil)
		ev.Params = raw
		out, err := h.chain.Request(ctx, ev)
		if err != nil {
			return nil, refusal(err)
		}
		if string(out) != string(raw) {
			p = new(P)
			if err := json.Unmarshal(out, p); err != nil {
				return nil, refusal(&policy.DeniedError{Link: "chain", Method: method, Server: server, Err: err})
			}
		}
		res, err := f(ctx, p)
		if err != nil {
			return nil, err
		}
		if _, err := h.after(ctx, ev, res); err != nil {
			return nil, refusal(err)
		}
		return res, nil
	}
}

// guardedRaw runs sampling and elicitation requests served as they came
// (mcp.ClientOptions.Raw) through the chain as guarded does the typed
// ones: the links see the same params and result, as JSON.
func guardedRaw(h *Host, server string, f mcp.RawHandler) mcp.RawHandler {
	one := func(method string) func(context.Context, *json.RawMessage) (*json.RawMessage, error) {
		return guarded(h, server, method, func(ctx context.Context, p *json.RawMessage) (*json.RawMessage, error) {
			res, err := f(ctx, method, *p)
			if err != nil {
				return nil, err
			}
			return &res, nil
		})
	}
	sampling, elicit := one(mcp.MethodSamplingCreateMessage), one(mcp.MethodElicitationCreate)
	return func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
		g := sampling
		if method == mcp.MethodElicitationCreate {
			g = elicit
		}
		res, err := g(ctx, &params)
		if err != nil {
			return nil, err
		}
		return *res, nil
	}
}

// guardRoots runs roots/list through the chain; a policy may hide roots
// from a server by modifying the result.
func (h *Host) guardRoots(server string, f mcp.RootsHandler) mcp.RootsHandler {
	type none struct{}
	type rootsResult struct {
		Roots []mcp.Root `json:"roots"`
	}
	g := guarded(h, server, mcp.MethodRootsList, func(ctx context.Context, _ *none) (*rootsResult, error) {
		roots, err := f(ctx)
		if err != nil {
			return nil, err
		}
		return &rootsResult{Roots: roots}, nil
	})
	return func(ctx context.Context) ([]mcp.Root, error) {
		res, err := g(ctx, &none{})
		if err != nil {
			return nil, err
		}
		return res.Roots, nil
	}
}

// refusal is what a server learns when the chain refuses its request: a
// JSON-RPC error that says which link decided, never more (the reason may
// be meant for the person, not the server).
func refusal(err error) error {
	var rerr *mcp.RPCError
	if errors.As(err, &rerr) {
		return rerr
	}
	var de *policy.DeniedError
	if errors.As(err, &de) {
		return &mcp.RPCError{Code: mcp.CodeInvalidRequest, Message: "refused by the client's policy (" + de.Link + ")"}
	}
	var we *policy.WithheldError
	if errors.As(err, &we) {
		return &mcp.RPCError{Code: mcp.CodeInternalError, Message: "the answer was withheld by the client's policy (" + we.Link + ")"}
	}
	return &mcp.RPCError{Code: mcp.CodeInternalError, Message: "the client's policy chain failed"}
}
