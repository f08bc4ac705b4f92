package host

import (
	"context"
	"encoding/json"
	"time"

	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/engine"
)

// Host connects to the configured servers and runs every call through
// the chain: permission check, filters, schema validation, the server,
// output checks, sanitizers. It is internal/engine's Host seen through
// host's own types: each method converts what the engine returns once,
// here, so an embedder never meets an internal type. Safe for concurrent
// use.
type Host struct{ e *engine.Host }

// New makes a host for cfg; it connects servers concurrently on Start or
// on first use.
func New(cfg *Config, o Options) *Host {
	if o.Version == "" {
		o.Version = Version
	}
	return wrap(engine.New(internalConfig(cfg), o.engine()))
}

func wrap(e *engine.Host) *Host {
	if e == nil {
		return nil
	}
	return &Host{e: e}
}

// Tool is a tool an agent may use: its exposed name (what an LLM calls it),
// its server and its definition as the server gave it.
type Tool struct {
	Name   string `json:"exposedName"` // mcp_<server>_<tool>, or under the server's prefix
	Server string `json:"server"`
	mcp.Tool
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

// CallOptions tune one call.
type CallOptions struct {
	// OnProgress receives the server's progress notifications.
	OnProgress func(mcp.Progress)
	// Timeout overrides the request timeout.
	Timeout time.Duration
	// Wire, when not nil, is set to the result's JSON as the server sent
	// it when nothing on the way changed the result (no sanitizer, filter
	// or output cap did); to nil otherwise, and when the call fails. A
	// program that passes results on writes these bytes instead of
	// encoding the result again. They share memory with the result's
	// strings: read them, do not write into them.
	Wire *json.RawMessage
}

// engine is o as the engine takes it: the same fields, so a conversion
// and no copy on every call.
func (o *CallOptions) engine() *engine.CallOptions { return (*engine.CallOptions)(o) }

// Status is what Servers reports of one server: its config, whether it is
// connected and why not, and what it offered.
type Status struct {
	Config    *Server
	Connected bool
	Err       error // why it is not connected
	ToolsErr  error // why its tool list is empty
	Info      mcp.Implementation
	Version   string // protocol version
	Era       string // "modern" (per-request metadata) or "legacy" (initialize)
	Caps      mcp.ServerCapabilities
	Tools     int    // how many tools it offered
	Owner     string // the agent whose session it belongs to, if not shared
	Shared    bool
	Failures  int // reconnections that failed in a row
}

// convert is the one place a catalog from the engine becomes host's:
// the types share their fields, so each is a conversion, not a copy of
// its definition.
func convert[T, E any](in []E, err error, to func(E) T) ([]T, error) {
	if in == nil {
		return nil, hostErr(err)
	}
	out := make([]T, len(in))
	for i, v := range in {
		out[i] = to(v)
	}
	return out, hostErr(err)
}

// Config is the configuration the host runs.
func (h *Host) Config() *Config { return &Config{c: h.e.Config()} }

// Start connects every enabled server concurrently and returns once each
// has connected or failed; Servers says how each went.
func (h *Host) Start(ctx context.Context) { h.e.Start(ctx) }

// Close ends every session and stops every server and plugin process the
// host started.
func (h *Host) Close() error { return hostErr(h.e.Close()) }

// Servers reports every server, sorted by name.
func (h *Host) Servers() []Status {
	in := h.e.Servers()
	out := make([]Status, len(in))
	for i, s := range in {
		out[i] = Status{Config: server(s.Config), Connected: s.Connected, Info: s.Info, Version: s.Version, Era: s.Era, Caps: s.Caps,
			Tools: s.Tools, Owner: s.Owner, Shared: s.Shared, Failures: s.Failures}
		out[i].Err, out[i].ToolsErr = hostErr(s.Err), hostErr(s.ToolsErr)
	}
	return out
}

// Connect connects server for agent now (shared: one session for every
// agent); a server already connected is no error.
func (h *Host) Connect(ctx context.Context, agent, server string, shared bool) error {
	return hostErr(h.e.Connect(ctx, agent, server, shared))
}

// RetryTools lists server's tools again for agent, after a tools/list
// that failed (Status.ToolsErr).
func (h *Host) RetryTools(ctx context.Context, agent, server string) error {
	return hostErr(h.e.RetryTools(ctx, agent, server))
}

// Disconnect ends server's session; the next use connects it again.
func (h *Host) Disconnect(server string) { h.e.Disconnect(server) }

// Agent says whether agent is configured (or the trusted CLIAgent).
func (h *Host) Agent(agent string) bool { return h.e.Agent(agent) }

// Visible says whether agent may see server at all.
func (h *Host) Visible(agent, server string) bool { return h.e.Visible(agent, server) }

// ExposedName is the name an LLM calls server's tool by.
func (h *Host) ExposedName(server, name string) string { return h.e.ExposedName(server, name) }

// Tools lists the tools agent may use, from every server it may see; a
// server that failed is a *ServerError and the others' tools still come.
func (h *Host) Tools(ctx context.Context, agent string) ([]Tool, error) {
	ts, err := h.e.Tools(ctx, agent)
	return convert(ts, err, func(t engine.Tool) Tool { return Tool(t) })
}

// Tool finds one tool agent may use by its exposed or server.tool name.
func (h *Host) Tool(ctx context.Context, agent, name string) (Tool, error) {
	t, err := h.e.Tool(ctx, agent, name)
	return Tool(t), hostErr(err)
}

// Resources lists the resources agent may read.
func (h *Host) Resources(ctx context.Context, agent string) ([]Resource, error) {
	rs, err := h.e.Resources(ctx, agent)
	return convert(rs, err, func(r engine.Resource) Resource { return Resource(r) })
}

// Templates lists the resource templates agent may read.
func (h *Host) Templates(ctx context.Context, agent string) ([]Template, error) {
	ts, err := h.e.Templates(ctx, agent)
	return convert(ts, err, func(t engine.Template) Template { return Template(t) })
}

// Prompts lists the prompts agent may get.
func (h *Host) Prompts(ctx context.Context, agent string) ([]Prompt, error) {
	ps, err := h.e.Prompts(ctx, agent)
	return convert(ps, err, func(p engine.Prompt) Prompt { return Prompt(p) })
}

// CallTool calls a tool by its exposed or server.tool name as agent,
// through the chain. args is any value that encodes to a JSON object
// (a map, a struct, json.RawMessage); o may be nil.
func (h *Host) CallTool(ctx context.Context, agent, name string, args any, o *CallOptions) (*mcp.CallToolResult, error) {
	res, err := h.e.CallTool(ctx, agent, name, args, o.engine())
	return res, hostErr(err)
}

// ReadResource reads uri from server as agent, through the chain.
func (h *Host) ReadResource(ctx context.Context, agent, server, uri string) (*mcp.ReadResourceResult, error) {
	return h.ReadResourceWith(ctx, agent, server, uri, nil)
}

// ReadResourceWith is ReadResource with CallOptions.
func (h *Host) ReadResourceWith(ctx context.Context, agent, server, uri string, o *CallOptions) (*mcp.ReadResourceResult, error) {
	res, err := h.e.ReadResourceWith(ctx, agent, server, uri, o.engine())
	return res, hostErr(err)
}

// GetPrompt gets prompt name from server with args as agent, through the
// chain.
func (h *Host) GetPrompt(ctx context.Context, agent, server, name string, args map[string]string) (*mcp.GetPromptResult, error) {
	res, err := h.e.GetPrompt(ctx, agent, server, name, args)
	return res, hostErr(err)
}

// Complete asks server for completions of a prompt or template argument.
func (h *Host) Complete(ctx context.Context, agent, server string, p *mcp.CompleteParams) (*mcp.CompleteResult, error) {
	res, err := h.e.Complete(ctx, agent, server, p)
	return res, hostErr(err)
}

// Ping measures a round trip to server.
func (h *Host) Ping(ctx context.Context, agent, server string) (time.Duration, error) {
	d, err := h.e.Ping(ctx, agent, server)
	return d, hostErr(err)
}

// Subscribe asks server for updates of uri (SessionOptions.OnResourceUpdated).
func (h *Host) Subscribe(ctx context.Context, agent, server, uri string) error {
	return hostErr(h.e.Subscribe(ctx, agent, server, uri))
}

// Unsubscribe ends a Subscribe.
func (h *Host) Unsubscribe(ctx context.Context, agent, server, uri string) error {
	return hostErr(h.e.Unsubscribe(ctx, agent, server, uri))
}

// SetLogLevel sets the level of the log messages every server agent may
// see sends.
func (h *Host) SetLogLevel(ctx context.Context, agent string, level mcp.LoggingLevel) error {
	return hostErr(h.e.SetLogLevel(ctx, agent, level))
}

// Client is server's session for agent, connecting it if need be: the
// protocol itself, past the chain, for what the host has no method for.
func (h *Host) Client(ctx context.Context, agent, server string) (*mcp.Client, error) {
	c, err := h.e.Client(ctx, agent, server)
	return c, hostErr(err)
}

// RootsChanged tells every connected server the roots changed.
func (h *Host) RootsChanged(ctx context.Context) error { return hostErr(h.e.RootsChanged(ctx)) }

// NewSession makes a host that shares this one's servers' config, chain
// and audit log but connects upstream on its own, so that what its
// servers send reaches o's handlers alone.
func (h *Host) NewSession(o SessionOptions) *Host { return wrap(h.e.NewSession(o.engine())) }

// SetNotify replaces the session's handlers.
func (h *Host) SetNotify(o SessionOptions) { h.e.SetNotify(o.engine()) }

// Explain turns an error from server into one a person can act on (the
// server's config, the likely cause, the fix).
func (h *Host) Explain(server string, err error) error { return hostErr(h.e.Explain(server, err)) }

// DryRun shows what the chain would decide of a call without making it;
// result, when given, is run through the response side too.
func (h *Host) DryRun(ctx context.Context, agent, name string, args any, result *mcp.CallToolResult) (*Verdict, error) {
	return verdict(h.e.DryRun(ctx, agent, name, args, result))
}

// DryRunRequest is DryRun for any request: method, server, its target
// (a tool, a URI, a prompt) and arguments.
func (h *Host) DryRunRequest(ctx context.Context, agent, method, server, target string, args map[string]string, result json.RawMessage) (*Verdict, error) {
	return verdict(h.e.DryRunRequest(ctx, agent, method, server, target, args, result))
}

// Definitions are server's tool definitions as a policy reviews them.
func (h *Host) Definitions(ctx context.Context, agent, server string) (Definitions, error) {
	d, err := h.e.Definitions(ctx, agent, server)
	return Definitions(d), hostErr(err)
}

// Review runs the tools/list policies over defs (by server) as agent,
// and returns what each flagged.
func (h *Host) Review(ctx context.Context, agent string, defs map[string][]mcp.Tool) (map[string]map[string][]Flag, error) {
	in, err := h.e.Review(ctx, agent, defs)
	if in == nil {
		return nil, hostErr(err)
	}
	out := make(map[string]map[string][]Flag, len(in))
	for server, tools := range in {
		out[server] = make(map[string][]Flag, len(tools))
		for tool, flags := range tools {
			for _, f := range flags {
				out[server][tool] = append(out[server][tool], Flag(f))
			}
		}
	}
	return out, hostErr(err)
}

// SetLock replaces the lockfile the host checks tools against.
func (h *Host) SetLock(l *Lock) { h.e.SetLock(l.lock()) }

// Lockfile is the lockfile the host checks tools against (nil: none).
func (h *Host) Lockfile() *Lock { return wrapLock(h.e.Lockfile()) }

// WatchLock reads the lockfile at path again every so often until ctx
// ends, so that a `nexus lock` elsewhere applies without a restart.
func (h *Host) WatchLock(ctx context.Context, path string, every time.Duration) {
	h.e.WatchLock(ctx, path, every)
}

// Drift is every tool the lockfile withholds as its server defines it now.
func (h *Host) Drift(ctx context.Context) ([]Drift, error) {
	d, err := h.e.Drift(ctx)
	var out []Drift
	for _, x := range d {
		out = append(out, drift(x))
	}
	return out, hostErr(err)
}

// AcceptTool pins server's tool as it is now in the lockfile at path, if
// its definition still hashes to sha256 (what the person reviewed).
func (h *Host) AcceptTool(ctx context.Context, path, server, tool, sha256 string) (Drift, error) {
	d, err := h.e.AcceptTool(ctx, path, server, tool, sha256)
	return drift(d), hostErr(err)
}

// AuthLogin runs server's OAuth flow now (AuthOptions.Opener shows the URL).
func (h *Host) AuthLogin(ctx context.Context, server string) error {
	return hostErr(h.e.AuthLogin(ctx, server))
}

// AuthLogout forgets server's OAuth tokens.
func (h *Host) AuthLogout(ctx context.Context, server string) error {
	return hostErr(h.e.AuthLogout(ctx, server))
}

// AuthStatus reports server's OAuth client.
func (h *Host) AuthStatus(server string) (OAuthStatus, error) {
	s, err := h.e.AuthStatus(server)
	return OAuthStatus(s), hostErr(err)
}

// OpenAudit opens the audit log the config's audit block names, unless
// Options.Audit gave one.
func (h *Host) OpenAudit() error { return hostErr(h.e.OpenAudit()) }

// The conversions above keep host's types in step with the engine's: a
// field added there and not here fails to compile.
// Status is the exception, its Config being host's own Server:
// TestConvertedFields keeps it in step.
var _ = (*engine.CallOptions)(&CallOptions{})
