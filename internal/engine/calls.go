package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/nexus-mcp/nexus/internal/registry"
	"sort"
	"sync"
	"time"

	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/audit"
	"github.com/nexus-mcp/nexus/internal/policy"
	"github.com/nexus-mcp/nexus/internal/sanitize"
	"github.com/nexus-mcp/nexus/internal/suggest"
	"github.com/nexus-mcp/nexus/sdk/event"
)

// CallTool calls a tool by exposed name (mcp_<server>_<tool>) or as
// server.tool, through the whole chain: the agent's permission (asking for
// confirmation where its level says so), the filters, validation of the
// arguments against the tool's inputSchema, the server, validation of
// structuredContent against its outputSchema, the sanitizers, the output cap.
//
// A refusal is a *DeniedError naming the link that decided. A tool
// that ran and failed returns a result with IsError set.
func (h *Host) CallTool(ctx context.Context, agent, name string, args any, o *CallOptions) (*mcp.CallToolResult, error) {
	if !h.observing() {
		return h.callTool(ctx, agent, name, args, o)
	}
	rec := audit.Record{Agent: agent, Method: mcp.MethodToolsCall}
	var res *mcp.CallToolResult
	err := h.audited(ctx, &rec, func(ctx context.Context) error {
		var err error
		res, err = h.callTool(ctx, agent, name, args, o)
		return err
	})
	if err != nil {
		var ae *AuditError
		if errors.As(err, &ae) {
			setWire(o, nil) // the call failed: nothing to pass on
			return nil, err
		}
	}
	return res, err
}

// callTool is CallTool; rec, when not nil, is the call's audit record.
func (h *Host) callTool(ctx context.Context, agent, name string, args any, o *CallOptions) (*mcp.CallToolResult, error) {
	setWire(o, nil) // until a result nothing changed sets it
	rec := auditRecordFrom(ctx)
	if rec != nil {
		if h.auditing() {
			if raw, err := rawArgs(args); err == nil {
				h.argsRecord(rec, raw)
				args = CheckedArgs(raw) // not scanned again
			}
		}
		rec.Server, rec.Tool, _ = cutDot(name)
	}
	p, err := h.prepareCall(ctx, agent, name, args)
	if rec != nil && p != nil {
		rec.Server, rec.Tool = p.server, p.toolName
	}
	if err != nil {
		if rec != nil {
			fillTarget(rec, err)
		}
		return nil, err
	}
	up := upstreamOptions(o, h.upstreamMeta(ctx))
	co := up.options()
	var res *mcp.CallToolResult
	tr := policy.TraceFrom(ctx)
	start := tr.Now()
	if p.tool.TaskSupport() == "required" {
		res, err = p.client.CallToolAsTask(ctx, p.toolName, p.args, co)
	} else {
		res, err = p.client.CallTool(ctx, p.toolName, p.args, co)
	}
	if tr != nil {
		s := policy.Step{Link: "upstream", Method: mcp.MethodToolsCall, Action: event.Allow, Start: start, Duration: time.Since(start)}
		if err != nil {
			s.Action, s.Reason = policy.ActionError, err.Error()
		}
		tr.Add(s)
	}
	if err != nil {
		return nil, h.Explain(p.server, err)
	}
	res, wire, err := h.finishCall(ctx, p, res, up.received())
	setWire(o, wire)
	if rec != nil {
		resultRecord(rec, res)
	}
	return res, err
}

// upstreamCall is a call's options for the server's session, and the
// result's bytes as received when asked for (mcp.CallOptions.Wire): what
// a caller passes on when nothing changed them, instead of encoding the
// result again. One allocation holds both.
type upstreamCall struct {
	co   mcp.CallOptions
	wire json.RawMessage
}

// upstreamOptions are the session's options for a call made with o and
// the request's _meta upstream (meta); nil when there are none.
func upstreamOptions(o *CallOptions, meta mcp.Meta) *upstreamCall {
	if o == nil && meta == nil {
		return nil
	}
	up := &upstreamCall{co: mcp.CallOptions{Meta: meta}}
	if o != nil {
		up.co.OnProgress, up.co.Timeout = o.OnProgress, o.Timeout
		if o.Wire != nil {
			up.co.Wire = &up.wire
		}
	}
	return up
}

// options are the session's options, nil for none.
func (up *upstreamCall) options() *mcp.CallOptions {
	if up == nil {
		return nil
	}
	return &up.co
}

// received is the result's bytes as the session handed them back, nil
// when not asked for or when they say more than the decoded result.
func (up *upstreamCall) received() json.RawMessage {
	if up == nil {
		return nil
	}
	return up.wire
}

// setWire hands the caller the result's bytes, when it asked for them.
func setWire(o *CallOptions, b json.RawMessage) {
	if o != nil && o.Wire != nil {
		*o.Wire = b
	}
}

// call is a tools/call the chain has let through, ready to send.
type call struct {
	server, toolName string
	tool             *mcp.Tool
	client           *mcp.Client
	args             json.RawMessage // as the filters left them
	ev               *event.Event    // the chain's event; nil without a chain
}

// prepareCall runs what comes before the server: the permission check,
// the lockfile, the listing verdict, the policies and the argument schema.
// Under a context with a policy.Trace, each built-in check is a step too.
func (h *Host) prepareCall(ctx context.Context, agent, name string, args any) (*call, error) {
	server, toolName, err := h.resolve(ctx, agent, name)
	if err != nil {
		// An agent with no MCP access learns that, not that no tool has
		// the name (resolving an exposed name looks only at what it sees).
		if derr := h.mayList(ctx, agent, mcp.MethodToolsCall); derr != nil {
			return nil, derr
		}
		return nil, err
	}
	raw, err := rawArgs(args)
	if err != nil {
		return nil, err
	}
	tr := policy.TraceFrom(ctx)
	att := AttemptFrom(ctx)
	retry := att != nil && att.Retry
	start := tr.Now()
	if retry {
		// Decided on the call's first attempt (the person may have
		// confirmed it then): not asked again.
	} else if err = h.perms.Check(ctx, policy.ConfirmRequest{Agent: agent, Server: server, Tool: toolName, Method: mcp.MethodToolsCall, Arguments: raw}); err != nil {
		// ask is on the heap (errors.As takes its address), so only a
		// refused call pays for it.
		var ask *policy.WouldAskError
		if !errors.As(err, &ask) {
			tr.Builtin("permission", mcp.MethodToolsCall, err, start)
			return nil, err
		}
		// A dry run: say so, and go on.
		tr.Add(policy.Step{Link: "permission", Method: mcp.MethodToolsCall, Action: policy.ActionAsk, Reason: ask.Error()})
	} else {
		tr.Builtin("permission", mcp.MethodToolsCall, nil, start)
	}
	if err := h.loadChain(ctx); err != nil {
		return nil, err
	}
	c, err := h.reg.Client(ctx, server, agent)
	if err != nil {
		return nil, h.Explain(server, err)
	}
	tool, ver, err := findTool(ctx, c, server, toolName)
	if err != nil {
		if _, unknown := err.(*registry.UnknownToolError); unknown {
			return nil, err
		}
		return nil, h.Explain(server, err) // the session failed listing its tools
	}
	start = tr.Now()
	if why := h.withheld(server, tool, ver); why != "" {
		h.toolDecision(ToolDecision{Agent: agent, Server: server, Tool: toolName, Method: mcp.MethodToolsCall, Link: "lock", Withheld: true, Reason: why})
		err := lockDenial(server, toolName, why)
		tr.Builtin("lock", mcp.MethodToolsCall, err, start)
		return nil, err
	}
	if h.pins.Load() != nil {
		tr.Builtin("lock", mcp.MethodToolsCall, nil, start)
	}

	var ev *event.Event
	switch {
	case retry:
		// The arguments the policies left on the first attempt go out
		// again; the sanitizers see the event as they would have then.
		if att.Params != nil {
			if raw, err = changedArgs(att.Params, server, toolName); err != nil {
				return nil, err
			}
		}
		if h.chain.Len() > 0 {
			ev = h.event(agent, server, mcp.MethodToolsCall, tool)
			ev.Params = att.Params // nil: finishCall encodes them if a sanitizer reads them
		}
	case h.chain.Len() > 0:
		if err := h.callListed(ctx, agent, server, tool, ver); err != nil {
			return nil, err
		}
		ev = h.event(agent, server, mcp.MethodToolsCall, tool)
		if h.chain.Selects(policy.KindPolicy, ev) {
			params, err := callParams(toolName, raw)
			if err != nil {
				return nil, err
			}
			ev.Params = params
			out, err := h.chain.Request(ctx, ev)
			if err != nil {
				return nil, err
			}
			// Read back only what a policy changed: the params it left
			// alone are the arguments already in hand.
			if !bytes.Equal(out, params) {
				if raw, err = changedArgs(out, server, toolName); err != nil {
					return nil, err
				}
				if att != nil {
					att.Params = bytes.Clone(out) // for the retries (Attempt)
				}
			}
		}
	}

	start = tr.Now()
	if probs, err := h.sch.get(server, toolName, false, tool.InputSchema).validate(raw); err != nil || len(probs) > 0 {
		if err != nil {
			probs = []string{err.Error()}
		}
		serr := &registry.SchemaError{Server: server, Tool: toolName, What: "arguments", Problems: probs}
		tr.Builtin("schema", mcp.MethodToolsCall, serr, start)
		return nil, serr
	}
	tr.Builtin("schema", mcp.MethodToolsCall, nil, start)
	return &call{server: server, toolName: toolName, tool: tool, client: c, args: raw, ev: ev}, nil
}

// changedArgs are the arguments of a tools/call's params that a policy
// changed (out, which the chain checked is JSON).
func changedArgs(out json.RawMessage, server, toolName string) (json.RawMessage, error) {
	p, err := mcp.DecodeValidCallToolParams(out)
	if err != nil {
		return nil, &policy.DeniedError{Link: "chain", Method: mcp.MethodToolsCall, Server: server, Tool: toolName, Err: err}
	}
	if p.Name != toolName {
		return nil, &policy.DeniedError{Link: "chain", Method: mcp.MethodToolsCall, Server: server, Tool: toolName,
			Reason: "a filter changed the tool name to " + p.Name + "; filters may change arguments, not the tool"}
	}
	// A copy: the arguments share out, and a link (one in Go, embedded)
	// may reuse the buffer it returned.
	return bytes.Clone(p.Arguments), nil
}

// callParams are a tools/call's params as the chain's events carry them.
func callParams(tool string, args json.RawMessage) (json.RawMessage, error) {
	return mcp.EncodeCallToolParams(mcp.CallToolParams{Name: tool, Arguments: args})
}

// finishCall runs what comes after the server: the output schema, the
// built-in sanitizer, the chain's sanitizers and the output cap. wire is
// the result as received (nil when not asked for, or when it says more
// than res); it comes back nil when any of these changed the result.
//
// Sanitizers read the result as Nexus encodes it, not as the server
// spelled it: a link that matches bytes (a regular expression over the
// JSON) must not be escaped by a server writing "sk-\u0061bc" for
// "sk-abc", or by spacing and key order of its choosing.
func (h *Host) finishCall(ctx context.Context, p *call, res *mcp.CallToolResult, wire json.RawMessage) (*mcp.CallToolResult, json.RawMessage, error) {
	if len(res.StructuredContent) > 0 && !res.IsError {
		if probs, err := h.sch.get(p.server, p.toolName, true, p.tool.OutputSchema).validate(res.StructuredContent); err == nil && len(probs) > 0 {
			return nil, nil, &registry.SchemaError{Server: p.server, Tool: p.toolName, What: "structured output", Problems: probs}
		}
	}
	if sanitizeResult(res) {
		wire = nil
	}
	if p.ev != nil && h.chain.Selects(policy.KindSanitizer, p.ev) {
		if p.ev.Params == nil { // no policy read them: a sanitizer may
			params, err := callParams(p.toolName, p.args)
			if err != nil {
				return nil, nil, err
			}
			p.ev.Params = params
		}
		b, err := res.MarshalJSON()
		if err != nil {
			return nil, nil, err
		}
		p.ev.Result = b
		out, err := h.chain.Response(ctx, p.ev)
		if err != nil {
			return nil, nil, err
		}
		if string(out) != string(b) {
			// The chain checked out is JSON; the codec reads it in one
			// pass (json.Unmarshal would scan it whole first).
			var changed mcp.CallToolResult
			if err := changed.UnmarshalJSON(out); err != nil {
				return nil, nil, &policy.WithheldError{Link: "chain", Err: err}
			}
			res, wire = &changed, nil
			sanitizeResult(res)
		}
	}
	if capResult(res) {
		wire = nil
	}
	return res, wire, nil
}

// findTool returns the tool's definition from the session's cached list.
// Tool finds one tool the agent may use, by exposed name or server.tool
// (which connects that server only), as CallTool would call it: to read its
// input schema before a call, say. A tool the agent may not use is
// unknown, as it is to Tools.
func (h *Host) Tool(ctx context.Context, agent, name string) (Tool, error) {
	server, toolName, err := h.resolve(ctx, agent, name)
	if err != nil {
		return Tool{}, err
	}
	if !h.Visible(agent, server) || !h.perms.ToolAllowed(agent, server, toolName) {
		return Tool{}, &registry.UnknownToolError{Name: name, Server: server}
	}
	c, err := h.reg.Client(ctx, server, agent)
	if err != nil {
		return Tool{}, h.Explain(server, err)
	}
	t, _, err := findTool(ctx, c, server, toolName)
	if err != nil {
		if _, unknown := err.(*registry.UnknownToolError); unknown {
			return Tool{}, err
		}
		return Tool{}, h.Explain(server, err)
	}
	return Tool{Name: h.ExposedName(server, toolName), Server: server, Tool: *t}, nil
}

// findTool finds server's tool name, with the version of the list it is
// from (mcp.Client.ToolsVersion).
func findTool(ctx context.Context, c *mcp.Client, server, name string) (*mcp.Tool, uint64, error) {
	tools, ver, err := c.ToolsVersion(ctx)
	if err != nil {
		return nil, 0, err
	}
	for i := range tools {
		if tools[i].Name == name {
			return &tools[i], ver, nil
		}
	}
	// Compared by the tool's own name: with the server's name in both,
	// every short name would be "near".
	cands := make([][]string, len(tools))
	for i, t := range tools {
		cands[i] = []string{server + "." + t.Name, t.Name}
	}
	return nil, 0, &registry.UnknownToolError{Name: name, Server: server, Suggestions: suggest.Ranked(name, cands)}
}

// sanitizeResult is the built-in sanitizer: text a server returns loses
// terminal escapes, control characters and bidi overrides before anyone
// (a person or a model) reads it.
// It reports whether it changed anything.
func sanitizeResult(res *mcp.CallToolResult) bool {
	changed := false
	for i := range res.Content {
		c := &res.Content[i]
		if c.Type == mcp.ContentText {
			var cleaned bool
			if c.Text, cleaned = sanitized(c.Text); cleaned {
				changed = true
			}
		}
	}
	return changed
}

// sanitized is s through the built-in sanitizer, and whether that changed
// it.
func sanitized(s string) (string, bool) { return sanitize.Clean(s, 0) }

// capResult holds the text of a result to the 10 MiB output cap, and
// reports whether it cut any.
func capResult(res *mcp.CallToolResult) bool {
	left, cut := sanitize.MaxOutput, false
	for i := range res.Content {
		c := &res.Content[i]
		if c.Type != mcp.ContentText {
			continue
		}
		if len(c.Text) > left {
			c.Text, cut = sanitize.ForDisplayLimit(c.Text, max(left, 64)), true
		}
		left -= min(left, len(c.Text))
	}
	return cut
}

// gather lists one kind of item from every server agent can see, tags each
// with its server and sorts by key. Servers without the capability (offers
// false) are skipped; failing servers are reported in the error while the
// others' items still come back.
func gather[I, T any](ctx context.Context, h *Host, agent, method string,
	offers func(mcp.ServerCapabilities) bool,
	list func(*mcp.Client, context.Context) ([]I, error),
	tag func(server string, item I) T, key func(T) string) ([]T, error) {
	if err := h.mayList(ctx, agent, method); err != nil {
		return nil, err
	}
	var mu sync.Mutex
	var out []T
	err := h.each(ctx, agent, func(ctx context.Context, server string, c *mcp.Client) error {
		if !offers(c.Capabilities()) {
			return nil
		}
		items, err := list(c, ctx)
		mu.Lock()
		for _, it := range items {
			out = append(out, tag(server, it))
		}
		mu.Unlock()
		return err
	})
	sort.SliceStable(out, func(i, j int) bool { return key(out[i]) < key(out[j]) })
	return out, err
}

func hasResources(c mcp.ServerCapabilities) bool { return c.Resources != nil }

// Resources lists the resources of every server agent can see.
func (h *Host) Resources(ctx context.Context, agent string) ([]Resource, error) {
	return gather(ctx, h, agent, mcp.MethodResourcesList, hasResources, (*mcp.Client).Resources,
		func(s string, r mcp.Resource) Resource { return Resource{Server: s, Resource: r} },
		func(r Resource) string { return r.Server + "\x00" + r.URI })
}

// Templates lists the resource templates of every server agent can see.
func (h *Host) Templates(ctx context.Context, agent string) ([]Template, error) {
	return gather(ctx, h, agent, mcp.MethodResourcesTemplatesList, hasResources, (*mcp.Client).ListResourceTemplates,
		func(s string, t mcp.ResourceTemplate) Template { return Template{Server: s, ResourceTemplate: t} },
		func(t Template) string { return t.Server + "\x00" + t.URITemplate })
}

// Prompts lists the prompts of every server agent can see.
func (h *Host) Prompts(ctx context.Context, agent string) ([]Prompt, error) {
	return gather(ctx, h, agent, mcp.MethodPromptsList,
		func(c mcp.ServerCapabilities) bool { return c.Prompts != nil }, (*mcp.Client).Prompts,
		func(s string, p mcp.Prompt) Prompt { return Prompt{Server: s, Prompt: p} },
		func(p Prompt) string { return p.Server + "\x00" + p.Name })
}

// ReadResource reads a resource through the chain.
func (h *Host) ReadResource(ctx context.Context, agent, server, uri string) (*mcp.ReadResourceResult, error) {
	return h.ReadResourceWith(ctx, agent, server, uri, nil)
}

// ReadResourceWith is ReadResource with o: its Timeout, a progress
// handler, and Wire, set as CallTool sets it (the result's bytes as the
// server sent them when nothing on the way changed the result).
func (h *Host) ReadResourceWith(ctx context.Context, agent, server, uri string, o *CallOptions) (res *mcp.ReadResourceResult, err error) {
	setWire(o, nil) // until a result nothing changed sets it
	if h.observing() {
		rec := audit.Record{Agent: agent, Server: server, Method: mcp.MethodResourcesRead, URI: uri}
		err = h.audited(ctx, &rec, func(ctx context.Context) error {
			res, err = h.readResource(ctx, agent, server, uri, o)
			return err
		})
		if err != nil {
			setWire(o, nil) // the read failed: nothing to pass on
		}
		return res, err
	}
	return h.readResource(ctx, agent, server, uri, o)
}

func (h *Host) readResource(ctx context.Context, agent, server, uri string, o *CallOptions) (*mcp.ReadResourceResult, error) {
	c, err := h.session(ctx, agent, server, mcp.MethodResourcesRead)
	if err != nil {
		return nil, err
	}
	params, _ := json.Marshal(map[string]string{"uri": uri})
	ev, err := h.before(ctx, agent, server, mcp.MethodResourcesRead, params)
	if err != nil {
		return nil, err
	}
	if ev != nil {
		var p struct {
			URI string `json:"uri"`
		}
		if json.Unmarshal(ev.Params, &p) == nil && p.URI != "" {
			uri = p.URI
		}
	}
	up := upstreamOptions(o, h.upstreamMeta(ctx))
	res, err := c.ReadResourceWith(ctx, uri, up.options())
	if err != nil {
		return nil, h.Explain(server, err)
	}
	wire := up.received()
	for i := range res.Contents {
		var cleaned bool
		if res.Contents[i].Text, cleaned = sanitized(res.Contents[i].Text); cleaned {
			wire = nil
		}
	}
	changed, err := h.after(ctx, ev, res)
	if err != nil {
		return nil, err
	}
	if !changed {
		setWire(o, wire)
	}
	return res, nil
}

// GetPrompt fetches a prompt through the chain.
func (h *Host) GetPrompt(ctx context.Context, agent, server, name string, args map[string]string) (res *mcp.GetPromptResult, err error) {
	if h.observing() {
		rec := audit.Record{Agent: agent, Server: server, Method: mcp.MethodPromptsGet, Prompt: name}
		if h.auditing() {
			if b, err := json.Marshal(args); err == nil {
				h.argsRecord(&rec, b)
			}
		}
		err = h.audited(ctx, &rec, func(ctx context.Context) error {
			res, err = h.getPrompt(ctx, agent, server, name, args)
			return err
		})
		return res, err
	}
	return h.getPrompt(ctx, agent, server, name, args)
}

func (h *Host) getPrompt(ctx context.Context, agent, server, name string, args map[string]string) (*mcp.GetPromptResult, error) {
	c, err := h.session(ctx, agent, server, mcp.MethodPromptsGet)
	if err != nil {
		return nil, err
	}
	params, _ := json.Marshal(map[string]any{"name": name, "arguments": args})
	ev, err := h.before(ctx, agent, server, mcp.MethodPromptsGet, params)
	if err != nil {
		return nil, err
	}
	if ev != nil {
		var p struct {
			Arguments map[string]string `json:"arguments"`
		}
		if json.Unmarshal(ev.Params, &p) == nil {
			args = p.Arguments
		}
	}
	// The trace goes on upstream, as a call's and a read's do.
	res, err := c.GetPromptWith(ctx, name, args, upstreamOptions(nil, h.upstreamMeta(ctx)).options())
	if err != nil {
		return nil, h.Explain(server, err)
	}
	for i := range res.Messages {
		if m := &res.Messages[i].Content; m.Type == mcp.ContentText {
			m.Text = sanitize.ForDisplayLimit(m.Text, 0)
		}
	}
	if _, err := h.after(ctx, ev, res); err != nil {
		return nil, err
	}
	return res, nil
}

// Complete asks a server for argument completions, through the chain:
// policies see (and may change) the request, sanitizers the values.
func (h *Host) Complete(ctx context.Context, agent, server string, p *mcp.CompleteParams) (*mcp.CompleteResult, error) {
	c, err := h.session(ctx, agent, server, mcp.MethodComplete)
	if err != nil {
		return nil, err
	}
	params, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	ev, err := h.before(ctx, agent, server, mcp.MethodComplete, params)
	if err != nil {
		return nil, err
	}
	if ev != nil && string(ev.Params) != string(params) {
		p = new(mcp.CompleteParams)
		if err := json.Unmarshal(ev.Params, p); err != nil {
			return nil, &policy.DeniedError{Link: "chain", Method: mcp.MethodComplete, Server: server, Err: err}
		}
	}
	res, err := c.Complete(ctx, p)
	if err != nil {
		return nil, h.Explain(server, err)
	}
	for i, v := range res.Completion.Values {
		res.Completion.Values[i] = sanitize.ForDisplayLimit(v, 0)
	}
	if _, err := h.after(ctx, ev, res); err != nil {
		return nil, err
	}
	return res, nil
}

// Ping measures a server's round trip. Policies see it (a policy may keep
// an agent from probing a server); there is nothing to sanitize.
func (h *Host) Ping(ctx context.Context, agent, server string) (time.Duration, error) {
	c, err := h.session(ctx, agent, server, mcp.MethodPing)
	if err != nil {
		return 0, err
	}
	if _, err := h.before(ctx, agent, server, mcp.MethodPing, json.RawMessage("{}")); err != nil {
		return 0, err
	}
	d, err := c.Ping(ctx)
	return d, h.Explain(server, err)
}

// before runs the request phase of the filters for a non-tool method; it
// returns the event (nil without filters) for after.
//
// A retry of a call decided on its first attempt (Attempt) is
// not decided again: its event carries the params the policies left
// then (the caller reads them back as it reads a policy's change).
func (h *Host) before(ctx context.Context, agent, server, method string, params json.RawMessage) (*event.Event, error) {
	if err := h.loadChain(ctx); err != nil {
		return nil, err
	}
	att := AttemptFrom(ctx)
	if att != nil && att.Retry {
		if att.Params == nil && h.chain.Len() == 0 {
			return nil, nil
		}
		e := h.event(agent, server, method, nil)
		e.Params = params
		if att.Params != nil {
			e.Params = att.Params
		}
		return e, nil
	}
	if h.chain.Len() == 0 {
		return nil, nil
	}
	e := h.event(agent, server, method, nil)
	e.Params = params
	out, err := h.chain.Request(ctx, e)
	if err != nil {
		return nil, err
	}
	if att != nil && !bytes.Equal(out, params) {
		att.Params = bytes.Clone(out) // for the retries
	}
	e.Params = out
	return e, nil
}

// after runs the response phase; a modified result replaces *res, and
// changed says so.
func (h *Host) after(ctx context.Context, e *event.Event, res any) (changed bool, err error) {
	if e == nil {
		return false, nil
	}
	b, err := encodeResult(res)
	if err != nil {
		return false, err
	}
	e.Result = b
	out, err := h.chain.Response(ctx, e)
	if err != nil {
		return false, err
	}
	if string(out) != string(b) {
		if err := decodeResult(out, res); err != nil {
			return false, &policy.WithheldError{Link: "chain", Err: err}
		}
		return true, nil
	}
	return false, nil
}

// encodeResult and decodeResult use the codec of a resource read (often a
// whole file): through encoding/json, its output, or the chain's output
// already checked, would be scanned whole once more.
func encodeResult(res any) ([]byte, error) {
	if r, ok := res.(*mcp.ReadResourceResult); ok && r != nil {
		return r.MarshalJSON()
	}
	return json.Marshal(res)
}

func decodeResult(out []byte, res any) error {
	if r, ok := res.(*mcp.ReadResourceResult); ok {
		return r.UnmarshalJSON(out)
	}
	return json.Unmarshal(out, res)
}

// Subscribe asks a server for notifications/resources/updated about uri
// (they reach the OnResourceUpdated hook). The read permission applies.
func (h *Host) Subscribe(ctx context.Context, agent, server, uri string) error {
	c, err := h.session(ctx, agent, server, mcp.MethodResourcesSubscribe)
	if err != nil {
		return err
	}
	return h.Explain(server, c.Subscribe(ctx, uri))
}

// Unsubscribe ends a subscription Subscribe made.
func (h *Host) Unsubscribe(ctx context.Context, agent, server, uri string) error {
	c, err := h.session(ctx, agent, server, mcp.MethodResourcesUnsubscribe)
	if err != nil {
		return err
	}
	return h.Explain(server, c.Unsubscribe(ctx, uri))
}

// SetLogLevel asks every connected server agent can see that logs
// (declares the logging capability) to send messages at level and above,
// and every server that connects later too.
func (h *Host) SetLogLevel(ctx context.Context, agent string, level mcp.LoggingLevel) error {
	if level.Severity() < 0 {
		return fmt.Errorf("unknown log level %q; use one of %v", level, mcp.LoggingLevels)
	}
	h.mu.Lock()
	h.logLevel = level
	h.mu.Unlock()
	var errs []error
	for name, c := range h.reg.Live(agent) {
		if c.Capabilities().Logging == nil {
			continue
		}
		if err := c.SetLogLevel(ctx, level); err != nil {
			errs = append(errs, &registry.ServerError{Server: name, Err: h.Explain(name, err)})
		}
	}
	return errors.Join(errs...)
}

// Definitions are what a server offers, as it says so itself: its
// implementation and every tool, prompt and resource template, whatever an
// agent's rules or the filters would hide from a listing. It is what a
// lockfile pins (nexus lock).
type Definitions struct {
	Info      mcp.Implementation
	Tools     []mcp.Tool
	Prompts   []mcp.Prompt
	Templates []mcp.ResourceTemplate
}

// Definitions connects server (as agent may) and reads its definitions.
func (h *Host) Definitions(ctx context.Context, agent, server string) (Definitions, error) {
	c, err := h.reg.Client(ctx, server, agent)
	if err != nil {
		return Definitions{}, h.Explain(server, err)
	}
	d := Definitions{Info: c.ServerInfo()}
	caps := c.Capabilities()
	if caps.Tools != nil {
		if d.Tools, err = c.Tools(ctx); err != nil {
			return d, h.Explain(server, err)
		}
	}
	if caps.Prompts != nil {
		if d.Prompts, err = c.Prompts(ctx); err != nil {
			return d, h.Explain(server, err)
		}
	}
	if caps.Resources != nil {
		if d.Templates, err = c.ListResourceTemplates(ctx); err != nil {
			return d, h.Explain(server, err)
		}
	}
	return d, nil
}
