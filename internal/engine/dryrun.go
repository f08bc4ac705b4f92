package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/nexus-mcp/nexus/internal/registry"

	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/policy"
)

// Verdict is what the chain decides about a tool call, worked out without
// sending it (nexus explain).
type Verdict struct {
	Server, Tool string
	// Steps are every check in order, built-in (permission, rules, lock,
	// schema) and configured (the policies, the tools/list review, the
	// sanitizers on a sample result), each with its action, reason,
	// source and time.
	Steps []policy.Step
	// Err is the refusal (a *DeniedError, a *SchemaError, a
	// *WithheldError) or nil when the call would go through.
	Err error
	// Result is the sample result as the sanitizers left it; Raw is
	// that of a read or a prompt (DryRunRequest), as JSON.
	Result *mcp.CallToolResult
	Raw    json.RawMessage
}

// DryRun runs the whole chain for a call of name with args as agent would
// make it, without sending it to the server: the tool's server is
// connected to read its definition, nothing more. A sample result, when
// given, goes through the sanitizers as the server's would. Nobody is
// asked: where a person would be, the permission step says "ask".
//
// The error is for what stops the dry run itself (an unknown tool, a
// server that cannot be reached); a refusal is the Verdict's Err.
func (h *Host) DryRun(ctx context.Context, agent, name string, args any, result *mcp.CallToolResult) (*Verdict, error) {
	tr := &policy.Trace{}
	ctx = policy.WithTrace(policy.WithDryRun(ctx), tr)
	v := &Verdict{}
	p, err := h.prepareCall(ctx, agent, name, args)
	if p != nil {
		v.Server, v.Tool = p.server, p.toolName
	}
	switch {
	case err == nil && result != nil:
		res := *result
		v.Result, _, v.Err = h.finishCall(ctx, p, &res, nil)
	case err != nil && !isRefusal(err):
		return nil, err
	default:
		v.Err = err
	}
	if v.Server == "" {
		var de *policy.DeniedError
		var se *registry.SchemaError
		switch {
		case errors.As(v.Err, &de):
			v.Server, v.Tool = de.Server, de.Tool
		case errors.As(v.Err, &se):
			v.Server, v.Tool = se.Server, se.Tool
		}
	}
	v.Steps = tr.Steps()
	return v, nil
}

// isRefusal reports whether err is a check saying no, rather than a failure
// to check.
func isRefusal(err error) bool {
	var de *policy.DeniedError
	var we *policy.WithheldError
	var se *registry.SchemaError
	return errors.As(err, &de) || errors.As(err, &we) || errors.As(err, &se)
}

// DryRunRequest is DryRun for a resources/read of the URI target, or a
// prompts/get of the prompt target with args, on server: the permission
// check and the policies, and with a sample result (JSON, as the server
// would send it) the sanitizers. Nothing is sent to the server.
func (h *Host) DryRunRequest(ctx context.Context, agent, method, server, target string, args map[string]string, result json.RawMessage) (*Verdict, error) {
	var params any
	switch method {
	case mcp.MethodResourcesRead:
		params = map[string]string{"uri": target}
	case mcp.MethodPromptsGet:
		params = map[string]any{"name": target, "arguments": args}
	default:
		return nil, fmt.Errorf("dry run: %s is not a request the chain decides here (tools/call, resources/read, prompts/get)", method)
	}
	tr := &policy.Trace{}
	ctx = policy.WithTrace(policy.WithDryRun(ctx), tr)
	v := &Verdict{Server: server, Tool: target}
	defer func() { v.Steps = tr.Steps() }()
	start := tr.Now()
	err := h.perms.Check(ctx, policy.ConfirmRequest{Agent: agent, Server: server, Method: method})
	var ask *policy.WouldAskError
	switch {
	case errors.As(err, &ask):
		tr.Add(policy.Step{Link: "permission", Method: method, Action: policy.ActionAsk, Reason: ask.Error()})
	case err != nil:
		tr.Builtin("permission", method, err, start)
		v.Err = err
		return v, nil
	default:
		tr.Builtin("permission", method, nil, start)
	}
	if h.cfg.Server(server) == nil {
		return nil, &registry.UnknownServerError{Name: server, Known: h.visibleNames(agent)}
	}
	raw, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	ev, err := h.before(ctx, agent, server, method, raw)
	if err != nil {
		if !isRefusal(err) {
			return nil, err
		}
		v.Err = err
		return v, nil
	}
	if result != nil {
		res := append(json.RawMessage(nil), result...)
		if _, err := h.after(ctx, ev, &res); err != nil {
			v.Err = err
		}
		v.Raw = res
	}
	return v, nil
}
