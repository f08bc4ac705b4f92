package host

import (
	"context"
	"encoding/json"
	"sort"
	"sync"
	"time"

	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/host/policy"
	"github.com/nexus-mcp/nexus/host/sanitize"
	"github.com/nexus-mcp/nexus/sdk/event"
)

// CallOptions change one call.
type CallOptions struct {
	// OnProgress receives the server's progress notifications.
	OnProgress func(mcp.Progress)
	// Timeout overrides the request timeout.
	Timeout time.Duration
}

// CallTool calls a tool by exposed name (mcp_<server>_<tool>) or as
// server.tool, through the whole chain: the agent's permission (asking for
// confirmation where its level says so), the filters, validation of the
// arguments against the tool's inputSchema, the server, validation of
// structuredContent against its outputSchema, the sanitizers, the output cap.
//
// A refusal is a *policy.DeniedError naming the link that decided. A tool
// that ran and failed returns a result with IsError set.
func (h *Host) CallTool(ctx context.Context, agent, name string, args any, o *CallOptions) (*mcp.CallToolResult, error) {
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
	if err := h.perms.Check(ctx, policy.ConfirmRequest{Agent: agent, Server: server, Tool: toolName, Method: mcp.MethodToolsCall, Arguments: raw}); err != nil {
		return nil, err
	}
	if err := h.loadChain(ctx); err != nil {
		return nil, err
	}
	c, err := h.reg.Client(ctx, server, agent)
	if err != nil {
		return nil, h.Explain(server, err)
	}
	tool, err := findTool(ctx, c, server, toolName)
	if err != nil {
		if _, unknown := err.(*UnknownToolError); unknown {
			return nil, err
		}
		return nil, h.Explain(server, err) // the session failed listing its tools
	}

	var ev *event.Event
	if h.chain.Len() > 0 {
		ev = h.event(agent, server, mcp.MethodToolsCall, tool)
		params, err := json.Marshal(&mcp.CallToolParams{Name: toolName, Arguments: raw})
		if err != nil {
			return nil, err
		}
		ev.Params = params
		out, err := h.chain.Request(ctx, ev)
		if err != nil {
			return nil, err
		}
		var p mcp.CallToolParams
		if err := json.Unmarshal(out, &p); err != nil {
			return nil, &policy.DeniedError{Link: "chain", Method: mcp.MethodToolsCall, Server: server, Tool: toolName, Err: err}
		}
		if p.Name != toolName {
			return nil, &policy.DeniedError{Link: "chain", Method: mcp.MethodToolsCall, Server: server, Tool: toolName,
				Reason: "a filter changed the tool name to " + p.Name + "; filters may change arguments, not the tool"}
		}
		raw = p.Arguments
	}

	if probs, err := h.sch.get(server, toolName, false, tool.InputSchema).validate(raw); err != nil {
		return nil, &SchemaError{Server: server, Tool: toolName, What: "arguments", Problems: []string{err.Error()}}
	} else if len(probs) > 0 {
		return nil, &SchemaError{Server: server, Tool: toolName, What: "arguments", Problems: probs}
	}

	var co *mcp.CallOptions
	if o != nil {
		co = &mcp.CallOptions{OnProgress: o.OnProgress, Timeout: o.Timeout}
	}
	res, err := c.CallTool(ctx, toolName, raw, co)
	if err != nil {
		return nil, h.Explain(server, err)
	}

	if len(res.StructuredContent) > 0 && !res.IsError {
		if probs, err := h.sch.get(server, toolName, true, tool.OutputSchema).validate(res.StructuredContent); err == nil && len(probs) > 0 {
			return nil, &SchemaError{Server: server, Tool: toolName, What: "structured output", Problems: probs}
		}
	}
	sanitizeResult(res)
	if ev != nil {
		b, err := res.MarshalJSON()
		if err != nil {
			return nil, err
		}
		ev.Result = b
		out, err := h.chain.Response(ctx, ev)
		if err != nil {
			return nil, err
		}
		if string(out) != string(b) {
			var changed mcp.CallToolResult
			if err := json.Unmarshal(out, &changed); err != nil {
				return nil, &policy.WithheldError{Link: "chain", Err: err}
			}
			res = &changed
			sanitizeResult(res)
		}
	}
	capResult(res)
	return res, nil
}

// findTool returns the tool's definition from the session's cached list.
func findTool(ctx context.Context, c *mcp.Client, server, name string) (*mcp.Tool, error) {
	tools, err := c.Tools(ctx)
	if err != nil {
		return nil, err
	}
	for i := range tools {
		if tools[i].Name == name {
			return &tools[i], nil
		}
	}
	cands := make([][]string, len(tools))
	for i, t := range tools {
		cands[i] = []string{server + "." + t.Name}
	}
	return nil, &UnknownToolError{Name: name, Server: server, Suggestions: suggest(server+"."+name, cands)}
}

// sanitizeResult is the built-in sanitizer: text a server returns loses
// terminal escapes, control characters and bidi overrides before anyone
// (a person or a model) reads it.
func sanitizeResult(res *mcp.CallToolResult) {
	for i := range res.Content {
		c := &res.Content[i]
		if c.Type == mcp.ContentText {
			c.Text = sanitize.ForDisplayLimit(c.Text, 0)
		}
	}
}

// capResult holds the text of a result to the 10 MiB output cap.
func capResult(res *mcp.CallToolResult) {
	left := sanitize.MaxOutput
	for i := range res.Content {
		c := &res.Content[i]
		if c.Type != mcp.ContentText {
			continue
		}
		if len(c.Text) > left {
			c.Text = sanitize.ForDisplayLimit(c.Text, max(left, 64))
		}
		left -= min(left, len(c.Text))
	}
}

// Resource is a resource with the server that offers it.
type Resource struct {
	Server string `json:"server"`
	mcp.Resource
}

// Template is a resource template with its server.
type Template struct {
	Server string `json:"server"`
	mcp.ResourceTemplate
}

// Prompt is a prompt with its server.
type Prompt struct {
	Server string `json:"server"`
	mcp.Prompt
}

// Resources lists the resources of every server agent can see.
func (h *Host) Resources(ctx context.Context, agent string) ([]Resource, error) {
	if err := h.mayList(ctx, agent, mcp.MethodResourcesList); err != nil {
		return nil, err
	}
	var mu sync.Mutex
	var out []Resource
	err := h.each(ctx, agent, func(ctx context.Context, server string, c *mcp.Client) error {
		if c.Capabilities().Resources == nil {
			return nil
		}
		list, err := c.Resources(ctx)
		mu.Lock()
		for _, r := range list {
			out = append(out, Resource{server, r})
		}
		mu.Unlock()
		return err
	})
	sortBy(out, func(r Resource) string { return r.Server + "\x00" + r.URI })
	return out, err
}

// Templates lists the resource templates of every server agent can see.
func (h *Host) Templates(ctx context.Context, agent string) ([]Template, error) {
	if err := h.mayList(ctx, agent, mcp.MethodResourcesTemplatesList); err != nil {
		return nil, err
	}
	var mu sync.Mutex
	var out []Template
	err := h.each(ctx, agent, func(ctx context.Context, server string, c *mcp.Client) error {
		if c.Capabilities().Resources == nil {
			return nil
		}
		list, err := c.ListResourceTemplates(ctx)
		mu.Lock()
		for _, t := range list {
			out = append(out, Template{server, t})
		}
		mu.Unlock()
		return err
	})
	sortBy(out, func(t Template) string { return t.Server + "\x00" + t.URITemplate })
	return out, err
}

// Prompts lists the prompts of every server agent can see.
func (h *Host) Prompts(ctx context.Context, agent string) ([]Prompt, error) {
	if err := h.mayList(ctx, agent, mcp.MethodPromptsList); err != nil {
		return nil, err
	}
	var mu sync.Mutex
	var out []Prompt
	err := h.each(ctx, agent, func(ctx context.Context, server string, c *mcp.Client) error {
		if c.Capabilities().Prompts == nil {
			return nil
		}
		list, err := c.Prompts(ctx)
		mu.Lock()
		for _, p := range list {
			out = append(out, Prompt{server, p})
		}
		mu.Unlock()
		return err
	})
	sortBy(out, func(p Prompt) string { return p.Server + "\x00" + p.Name })
	return out, err
}

// ReadResource reads a resource through the chain.
func (h *Host) ReadResource(ctx context.Context, agent, server, uri string) (*mcp.ReadResourceResult, error) {
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
	res, err := c.ReadResource(ctx, uri)
	if err != nil {
		return nil, h.Explain(server, err)
	}
	for i := range res.Contents {
		res.Contents[i].Text = sanitize.ForDisplayLimit(res.Contents[i].Text, 0)
	}
	if err := h.after(ctx, ev, res); err != nil {
		return nil, err
	}
	return res, nil
}

// GetPrompt fetches a prompt through the chain.
func (h *Host) GetPrompt(ctx context.Context, agent, server, name string, args map[string]string) (*mcp.GetPromptResult, error) {
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
	res, err := c.GetPrompt(ctx, name, args)
	if err != nil {
		return nil, h.Explain(server, err)
	}
	for i := range res.Messages {
		if m := &res.Messages[i].Content; m.Type == mcp.ContentText {
			m.Text = sanitize.ForDisplayLimit(m.Text, 0)
		}
	}
	if err := h.after(ctx, ev, res); err != nil {
		return nil, err
	}
	return res, nil
}

// Complete asks a server for argument completions.
func (h *Host) Complete(ctx context.Context, agent, server string, p *mcp.CompleteParams) (*mcp.CompleteResult, error) {
	c, err := h.session(ctx, agent, server, mcp.MethodComplete)
	if err != nil {
		return nil, err
	}
	res, err := c.Complete(ctx, p)
	return res, h.Explain(server, err)
}

// Ping measures a server's round trip.
func (h *Host) Ping(ctx context.Context, agent, server string) (time.Duration, error) {
	c, err := h.session(ctx, agent, server, mcp.MethodPing)
	if err != nil {
		return 0, err
	}
	d, err := c.Ping(ctx)
	return d, h.Explain(server, err)
}

// before runs the request phase of the filters for a non-tool method; it
// returns the event (nil without filters) for after.
func (h *Host) before(ctx context.Context, agent, server, method string, params json.RawMessage) (*event.Event, error) {
	if err := h.loadChain(ctx); err != nil {
		return nil, err
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
	e.Params = out
	return e, nil
}

// after runs the response phase; a modified result replaces *res.
func (h *Host) after(ctx context.Context, e *event.Event, res any) error {
	if e == nil {
		return nil
	}
	b, err := json.Marshal(res)
	if err != nil {
		return err
	}
	e.Result = b
	out, err := h.chain.Response(ctx, e)
	if err != nil {
		return err
	}
	if string(out) != string(b) {
		if err := json.Unmarshal(out, res); err != nil {
			return &policy.WithheldError{Link: "chain", Err: err}
		}
	}
	return nil
}

func sortBy[T any](s []T, key func(T) string) {
	sort.SliceStable(s, func(i, j int) bool { return key(s[i]) < key(s[j]) })
}
