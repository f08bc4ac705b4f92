package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/nexus-mcp/nexus/internal/telemetry"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/audit"
	"github.com/nexus-mcp/nexus/internal/config"
	"github.com/nexus-mcp/nexus/internal/explain"
	"github.com/nexus-mcp/nexus/internal/lock"
	"github.com/nexus-mcp/nexus/internal/plugin"
	"github.com/nexus-mcp/nexus/internal/policy"
	"github.com/nexus-mcp/nexus/internal/registry"
	"github.com/nexus-mcp/nexus/internal/suggest"
	"github.com/nexus-mcp/nexus/internal/wasm"
	"github.com/nexus-mcp/nexus/internal/wire"
	"github.com/nexus-mcp/nexus/sdk/event"
)

// DefaultVersion is the Nexus version sent as clientInfo when
// Options.Version is empty (host.Version, which the release stamps,
// fills it).
const DefaultVersion = "0.1.0-dev"

// DefaultTimeout applies to each request when neither the caller nor the
// server's config sets one.
const DefaultTimeout = 30 * time.Second

// CLIAgent is the agent the command line acts as. Without an agent "cli"
// block it is trusted: a person at a terminal confirms each server once.
const CLIAgent = "cli"

// Options configure a Host. The zero value is usable.
type Options struct {
	Logger hclog.Logger
	// Version is the Nexus version sent as clientInfo (DefaultVersion
	// when empty).
	Version string
	// Timeout per request; a server's own `timeout` wins over it.
	Timeout time.Duration

	// Confirm asks a person before a trusted agent's first use of a server;
	// nil denies where it would ask.
	Confirm policy.Confirmer
	// Lock, when set, is the tool lockfile the host enforces: tools not
	// pinned as they are now are withheld (ReadLock reads it). SetLock
	// swaps it while the host runs; WatchLock follows the file.
	Lock *lock.Lock
	// Approvals remember a person's "always" answers across processes
	// (OpenApprovals keeps them in a file); nil: for this process.
	Approvals policy.Approvals
	// Links are the filters (WASM, plugins) that run after the built-in
	// permission check, in order.
	Links []policy.Entry

	// Handlers for requests servers send; nil leaves the capability out.
	// Roots defaults to the config's roots when it has any.
	Roots       mcp.RootsHandler
	Sampling    func(server string) mcp.SamplingHandler
	Elicitation func(server string) mcp.ElicitationHandler
	// OnLog receives server log notifications.
	OnLog func(server string, m mcp.LogMessage)
	// OnChange is told when a server's lists change or it (re)connects or dies.
	OnChange func(server string)
	// Audit, when set, is the audit log every decision point is recorded
	// in; nil opens the config's audit block's, if it has one.
	Audit *audit.Writer
	// Telemetry, when set, traces every request (one span, each link an
	// event on it or, with the telemetry block's link_spans, a child span;
	// continuing the traceparent, tracestate and baggage the request
	// carries and passing them upstream) and counts them for Prometheus.
	Telemetry *telemetry.Telemetry
	// OnToolDecision is told each time a tool's definition decides what
	// an agent gets: the lockfile or a tools/list policy withholds it (in
	// a listing or a call) or a policy flags it. Audit records them.
	OnToolDecision func(ToolDecision)

	// CloseGrace is how long a stdio server gets to exit after its stdin
	// closes, and again after SIGTERM (default 2 s).
	CloseGrace time.Duration
	// Dial replaces the built-in transports, for tests and embedders with
	// their own; nil uses stdio (and the others as they are configured).
	Dial registry.Dialer
	// Transport, if set, opens every server's connection instead of the
	// built-in transports; unlike Dial, the session on it is still made by
	// the host, with its handlers (sampling, elicitation, roots, hooks).
	Transport func(ctx context.Context, srv *config.Server) (mcp.Conn, error)
	// Auth configures the OAuth clients of HTTP servers (where tokens are
	// kept, how a person is shown an authorization URL).
	Auth AuthOptions
}

// Host connects to the configured servers and runs every call through the
// chain: permission check, filters, schema validation, the server, output
// checks, sanitizers.
//
// A host made by New owns its upstream connections, shared by every caller;
// NewSession makes hosts that share its configuration, chain and OAuth
// clients but connect upstream on their own (see NewSession).
type Host struct {
	*core
	hooks hooks
	reg   *registry.Registry
	root  bool // made by New: Close also stops the shared extensions

	cats registry.Catalogs // each agent's, rebuilt after any change

	mu       sync.Mutex
	listv    map[listKey]listVerdict // by agent, server and tool (listed.go)
	logLevel mcp.LoggingLevel        // set by SetLogLevel; servers that connect later get it too

	// Connections made in the background (Warm, a listing's wait that
	// passed) run under bgCtx; Close cancels it and waits for them.
	bgCtx    context.Context
	bgStop   context.CancelFunc
	bg       sync.WaitGroup
	bgClosed bool // under mu: no new background connection
}

// core is what a host and its sessions share.
type core struct {
	cfg  *config.Config
	opts Options
	// feed is handed each decision point's record as the audit log gets
	// it (arguments redacted as the log holds them), while it has
	// subscribers: the console's live stream (Feed).
	feed  *audit.Feed
	log   hclog.Logger
	perms *policy.Permissions
	chain *policy.Chain
	sch   schemas

	chainOnce sync.Once
	chainErr  error

	namerOnce sync.Once
	names     *registry.Namer

	lockv lockVerdicts
	// pins is the lockfile enforced now (Options.Lock at first; SetLock
	// swaps it), pinGen counts the swaps: a verdict reached on an older
	// lockfile is not used.
	pins   atomic.Pointer[lock.Lock]
	pinGen atomic.Uint64

	auditOnce sync.Once
	auditW    *audit.Writer // the audit block's log, opened on first use
	auditErr  error

	oauth authClients // OAuth clients of HTTP servers (auth.go)

	xmu     sync.Mutex
	plugins *plugin.Manager // started on first use
	wasm    *wasm.Runtime   // started on first use
}

// hooks are what a host's upstream sessions call back into.
type hooks struct {
	agent         string // whom server-initiated requests go to, for the chain's events
	session       string // the downstream session, for the audit log
	roots         mcp.RootsHandler
	rootsFor      func(server string) mcp.RootsHandler // instead of roots, when set
	sampling      func(server string) mcp.SamplingHandler
	elicitation   func(server string) mcp.ElicitationHandler
	raw           func(server string) mcp.RawHandler // instead of sampling's and elicitation's, when set
	onLog         func(server string, m mcp.LogMessage)
	onChange      func(server string)
	onListChanged func(server, kind string)
	onUpdated     func(server, uri string)
	callOf        func(ctx context.Context, server string) context.Context // the call a server's request belongs to, for its audit record
}

// New makes a host for cfg. Nothing connects until Start or first use.
func New(cfg *config.Config, opts Options) *Host {
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.Version == "" {
		opts.Version = DefaultVersion
	}
	// Every host has a feed, so a console can watch one it did not
	// make; a feed nobody watches costs an atomic load per decision.
	c := &core{cfg: cfg, opts: opts, log: opts.Logger, feed: audit.NewFeed()}
	c.pins.Store(opts.Lock)
	c.oauth.opts = opts.Auth
	c.sch.log = opts.Logger
	if opts.Roots == nil && len(cfg.Roots) > 0 {
		c.opts.Roots = configRoots(cfg.Roots)
	}
	var callsOnly []string
	for _, s := range cfg.Servers {
		if s.Confirm == config.ConfirmToolCalls {
			callsOnly = append(callsOnly, s.Name)
		}
	}
	c.perms = policy.NewPermissions(agents(cfg), policy.PermissionOptions{Confirm: opts.Confirm, Approvals: opts.Approvals, CallsOnly: callsOnly})
	return newHost(c, hooks{
		roots: c.opts.Roots, sampling: opts.Sampling, elicitation: opts.Elicitation,
		onLog: opts.OnLog, onChange: opts.OnChange,
	}, true)
}

func newHost(c *core, hk hooks, root bool) *Host {
	h := &Host{core: c, hooks: hk, root: root}
	h.bgCtx, h.bgStop = context.WithCancel(context.Background())
	dial := c.opts.Dial
	if dial == nil {
		dial = h.dial
	}
	h.reg = registry.New(dial, registry.Options{
		Logger:         c.log,
		ConnectTimeout: c.opts.Timeout,
		OnChange:       h.changed,
	})
	h.reg.Add(c.cfg.Servers...)
	return h
}

// NewSession returns a host with upstream connections of its own, made
// with o's handlers, that shares h's configuration, permissions, filters,
// schema cache and OAuth clients. It is for a caller whose servers'
// requests (sampling, elicitation, roots) and notifications must reach
// that caller alone: a gateway session whose client answers them. Its
// connections open on first use; Close ends them and nothing of h's.
func (h *Host) NewSession(o SessionOptions) *Host {
	return newHost(h.core, hooks{
		agent: o.Agent, session: o.Session, roots: o.Roots, rootsFor: o.RootsFor, sampling: o.Sampling, elicitation: o.Elicitation, raw: o.Raw,
		onLog: o.OnLog, onChange: o.OnChange, onListChanged: o.OnListChanged, onUpdated: o.OnResourceUpdated, callOf: o.CallOf,
	}, false)
}

// SetNotify sets the notification handlers of h's own upstream
// connections, for a caller that can make them only once it has the host
// (the gateway, for the connections its sessions share). Call it before
// anything connects; the request handlers stay those of Options.
func (h *Host) SetNotify(o SessionOptions) {
	if o.OnLog != nil {
		h.hooks.onLog = o.OnLog
	}
	if o.OnChange != nil {
		h.hooks.onChange = o.OnChange
	}
	h.hooks.onListChanged = o.OnListChanged
	h.hooks.onUpdated = o.OnResourceUpdated
}

// agents converts the config's agent blocks, adding the CLI's default.
func agents(cfg *config.Config) []policy.Agent {
	var out []policy.Agent
	hasCLI := false
	for _, a := range cfg.Agents {
		pa := policy.Agent{Name: a.Name, Permission: a.Permission, Servers: a.Servers,
			Allow: a.Allow, Deny: a.Deny, Source: a.Source.String(), ShadowRules: a.Mode == config.ModeShadow}
		if a.Source.File != "" && a.Source.Line > 0 {
			pa.Where = fmt.Sprintf("%s:%d", a.Source.File, a.Source.Line)
		}
		out = append(out, pa)
		hasCLI = hasCLI || a.Name == CLIAgent
	}
	if !hasCLI {
		out = append(out, policy.Agent{Name: CLIAgent, Permission: event.Trusted})
	}
	return out
}

func (h *Host) changed(server string) {
	h.cats.Invalidate()
	if m := h.opts.Telemetry.Metrics(); m != nil {
		m.Upstream(server, h.reg.Connected(server))
	}
	if h.hooks.onChange != nil {
		h.hooks.onChange(server)
	}
}

// Config is the configuration the host runs.
func (h *Host) Config() *config.Config { return h.cfg }

// Start connects every enabled server concurrently and returns when all
// have connected or failed; failures are kept for Servers.
func (h *Host) Start(ctx context.Context) { h.reg.Start(ctx) }

// Servers reports every configured server with its connection state.
func (h *Host) Servers() []registry.Status { return h.reg.Status() }

// Connect connects one server on behalf of agent (the shell's /mcp connect).
func (h *Host) Connect(ctx context.Context, agent, server string, shared bool) error {
	_, err := h.reg.Connect(ctx, server, agent, shared)
	return h.Explain(server, err)
}

// Disconnect closes one server's session.
func (h *Host) Disconnect(server string) { h.reg.Disconnect(server) }

// RetryTools lists a server's tools again.
func (h *Host) RetryTools(ctx context.Context, agent, server string) error {
	return h.Explain(server, h.reg.RetryTools(ctx, server, agent))
}

// CheckConnections reconnects dead sessions and returns the servers that
// stay down.
func (h *Host) CheckConnections(ctx context.Context) []string { return h.reg.CheckConnections(ctx) }

// Client returns the session to a server for agent, connecting it if
// needed. It skips the chain: for the host's own use and for tests.
func (h *Host) Client(ctx context.Context, agent, server string) (*mcp.Client, error) {
	c, err := h.reg.Client(ctx, server, agent)
	var nc *registry.NotConfiguredError
	if errors.As(err, &nc) {
		return nil, &registry.UnknownServerError{Name: server, Known: nc.Known}
	}
	return c, h.Explain(server, err)
}

// session checks agent may reach server at all and returns the session.
func (h *Host) session(ctx context.Context, agent, server, method string) (*mcp.Client, error) {
	if h.cfg.Server(server) == nil {
		// A mistyped name is said as such, with the nearest name the
		// agent may see, before any link asks to confirm its first use.
		return nil, &registry.UnknownServerError{Name: server, Known: h.visibleNames(agent)}
	}
	// A retry of a call decided on its first attempt is not asked again.
	if !Retried(ctx) {
		if err := h.perms.Check(ctx, policy.ConfirmRequest{Agent: agent, Server: server, Method: method}); err != nil {
			return nil, err
		}
	}
	c, err := h.reg.Client(ctx, server, agent)
	if err != nil {
		var nc *registry.NotConfiguredError
		if errors.As(err, &nc) {
			return nil, &registry.UnknownServerError{Name: server, Known: h.visibleNames(agent)}
		}
		return nil, h.Explain(server, err)
	}
	return c, nil
}

// Visible reports whether agent may see server at all: it is configured,
// enabled, and the agent's servers list (if any) names it.
func (h *Host) Visible(agent, server string) bool {
	s := h.cfg.Server(server)
	return s != nil && s.Enabled && h.perms.ServerVisible(agent, server) && h.reg.Visible(server, agent)
}

// Agent reports whether agent is known: configured, or the CLI's default.
func (h *Host) Agent(agent string) bool {
	_, ok := h.perms.Agent(agent)
	return ok
}

func (h *Host) visibleNames(agent string) []string {
	var out []string
	for _, s := range h.cfg.Servers {
		if h.perms.ServerVisible(agent, s.Name) && h.reg.Visible(s.Name, agent) {
			out = append(out, s.Name)
		}
	}
	return out
}

// each runs fn for every enabled server agent may see, concurrently,
// connecting as needed. Errors come back per server, joined.
func (h *Host) each(ctx context.Context, agent string, fn func(ctx context.Context, server string, c *mcp.Client) error) error {
	var names []string
	for _, s := range h.cfg.Servers {
		// Servers another agent connected privately are not there at all.
		if s.Enabled && h.perms.ServerVisible(agent, s.Name) && h.reg.Visible(s.Name, agent) {
			names = append(names, s.Name)
		}
	}
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	// With a list wait (WithListWait) a server that is not up
	// keeps connecting in the background, and the listing stops waiting
	// for it once the wait passes: one timer for all, no polling.
	passed := make(chan struct{})
	if d := ListWaitFrom(ctx); d > 0 {
		t := time.AfterFunc(d, func() { close(passed) })
		defer t.Stop()
	} else {
		passed = nil
	}
	for i, name := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := h.client(ctx, name, agent, passed)
			if err == nil {
				err = fn(ctx, name, c)
			}
			var se *StartingError
			switch {
			case errors.As(err, &se):
				errs[i] = err
			case err != nil:
				errs[i] = &registry.ServerError{Server: name, Err: h.Explain(name, err)}
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// client is agent's session to server, connecting it if needed. With
// passed set, a connection still being made when passed closes is left
// to finish in the background (bounded by the server's connect timeout
// and the host's Close, not ctx, so it is not cut short by the listing
// that started it) and
// a *StartingError comes back at once.
func (h *Host) client(ctx context.Context, server, agent string, passed <-chan struct{}) (*mcp.Client, error) {
	if passed == nil {
		return h.reg.Client(ctx, server, agent)
	}
	if c := h.reg.LiveClient(agent, server); c != nil {
		return c, nil
	}
	type res struct {
		c   *mcp.Client
		err error
	}
	ch := make(chan res, 1) // the connection may outlive this call
	if !h.background(func(bg context.Context) {
		c, err := h.reg.Client(bg, server, agent)
		ch <- res{c, err}
	}) {
		return nil, mcp.ErrClosed
	}
	select {
	case r := <-ch:
		return r.c, r.err
	case <-passed:
		h.log.Debug("a listing left out a server that is still starting", "server", server, "agent", agent)
		return nil, &StartingError{Server: server}
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Warm starts connecting, in the background, every enabled server the
// host's agent may see whose start option is eager (the default; see
// config.Server.Start), so the first listing finds them up or nearly
// so. A server that fails is logged with its explained error and
// reported as any failed connection is (Servers, /readyz); the next use
// retries it. Warm does not wait.
func (h *Host) Warm() {
	for _, s := range h.cfg.Servers {
		if !s.Enabled || s.Start == config.StartLazy || (h.hooks.agent != "" && !h.perms.ServerVisible(h.hooks.agent, s.Name)) {
			continue
		}
		h.background(func(bg context.Context) {
			if _, err := h.reg.Client(bg, s.Name, h.hooks.agent); err != nil && bg.Err() == nil {
				h.log.Warn("server did not start", "server", s.Name, "agent", h.hooks.agent, "error", h.Explain(s.Name, err))
			}
		})
	}
}

// background runs fn in a goroutine Close cancels and waits for; false
// once the host is closed.
func (h *Host) background(fn func(ctx context.Context)) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.bgClosed {
		return false
	}
	h.bg.Add(1)
	go func() {
		defer h.bg.Done()
		fn(h.bgCtx)
	}()
	return true
}

// Tools lists the tools agent may use on every server it can see, under
// their exposed names. Servers that fail are reported in the error; the
// others' tools are still returned.
func (h *Host) Tools(ctx context.Context, agent string) ([]Tool, error) {
	if err := h.mayList(ctx, agent, mcp.MethodToolsList); err != nil {
		return nil, err
	}
	if err := h.loadChain(ctx); err != nil {
		return nil, err
	}
	b, err := h.buildCatalog(ctx, agent)
	cat := b.Catalog
	var l *event.Listing
	var out []Tool
	for _, e := range cat.Entries {
		if !h.perms.ToolAllowed(agent, e.Server, e.Tool.Name) {
			continue
		}
		if why := h.withheld(e.Server, &e.Tool, b.Vers[e.Server]); why != "" {
			h.toolDecision(ToolDecision{Agent: agent, Server: e.Server, Tool: e.Tool.Name, Method: mcp.MethodToolsList, Link: "lock", Withheld: true, Reason: why})
			continue
		}
		if h.chain.Len() > 0 {
			if l == nil {
				l = listing(cat.Entries)
			}
			if h.listed(ctx, agent, e.Server, &e.Tool, func() *event.Listing { return l }, b.Gen, b.Vers[e.Server], true) != nil {
				continue
			}
		}
		out = append(out, Tool{Name: e.Name, Server: e.Server, Tool: e.Tool})
	}
	for _, c := range cat.Collisions {
		if c.Renamed == "" {
			h.log.Error("tool name collision", "detail", c.String())
		} else {
			h.log.Warn("tool name collision", "detail", c.String())
		}
	}
	return out, err
}

// mayList refuses listings to agents with no MCP access at all. Listing
// asks nobody: confirmation is for using a server.
func (h *Host) mayList(ctx context.Context, agent, method string) error {
	if a, ok := h.perms.Agent(agent); ok && a.Permission != "" && a.Permission != event.Sandboxed {
		return nil
	}
	return h.perms.Check(ctx, policy.ConfirmRequest{Agent: agent, Method: method})
}

// buildCatalog names the tools of every server agent can see (connecting
// them) and keeps the catalog for the agent's name lookups, so a name
// Tools returned resolves to that very tool.
func (h *Host) buildCatalog(ctx context.Context, agent string) (registry.Built, error) {
	gen := h.cats.Gen()
	var mu sync.Mutex
	lists := map[string][]mcp.Tool{}
	vers := map[string]uint64{}
	err := h.each(ctx, agent, func(ctx context.Context, server string, c *mcp.Client) error {
		if c.Capabilities().Tools == nil {
			return nil
		}
		tools, ver, err := c.ToolsVersion(ctx)
		if err != nil {
			return err
		}
		mu.Lock()
		lists[server], vers[server] = tools, ver
		mu.Unlock()
		return nil
	})
	b := registry.Built{Catalog: registry.NewCatalog(lists, h.namer()), Gen: gen, Vers: vers}
	h.cats.Put(agent, b)
	return b, err
}

// namer names the tools and prompts of the config's servers (see
// registry.Namer): by their prefixes, and the same whichever servers an
// agent sees or are up.
func (h *Host) namer() *registry.Namer {
	h.namerOnce.Do(func() {
		var prefixes map[string]string
		names := make([]string, 0, len(h.cfg.Servers))
		for _, s := range h.cfg.Servers {
			names = append(names, s.Name)
			if s.Prefix != nil {
				if prefixes == nil {
					prefixes = map[string]string{}
				}
				prefixes[s.Name] = *s.Prefix
			}
		}
		h.names = registry.NewNamer(names, prefixes)
	})
	return h.names
}

// ExposedName is the name a server's tool or prompt is exposed under: its
// prefix (by default mcp_<server>_) and its own name.
func (h *Host) ExposedName(server, name string) string { return h.namer().Name(server, name) }

// resolve finds the server and tool for a name: server.tool, or an exposed
// name looked up among the servers agent can see (connecting them).
func (h *Host) resolve(ctx context.Context, agent, name string) (server, tool string, err error) {
	if s, t, ok := cutDot(name); ok && h.cfg.Server(s) != nil {
		return s, t, nil
	}
	b, _, fresh := h.cats.Get(agent)
	if fresh {
		if e, ok := b.Catalog.Lookup(name); ok {
			return e.Server, e.Tool.Name, nil
		}
	}
	// First from the servers that are up, so a call to one of them does
	// not wait for others still starting; then waiting for every one.
	if ListWaitFrom(ctx) == 0 {
		b, _ = h.buildCatalog(WithListWait(ctx, time.Nanosecond), agent)
		if e, ok := b.Catalog.Lookup(name); ok {
			return e.Server, e.Tool.Name, nil
		}
	}
	b, _ = h.buildCatalog(ctx, agent)
	cat := b.Catalog
	if e, ok := cat.Lookup(name); ok {
		return e.Server, e.Tool.Name, nil
	}
	if s, t, ok := cutDot(name); ok {
		return "", "", &registry.UnknownServerError{Name: s + " (in " + s + "." + t + ")", Known: h.visibleNames(agent)}
	}
	return "", "", &registry.UnknownToolError{Name: name, Suggestions: nearest(name, cat)}
}

func cutDot(name string) (string, string, bool) {
	for i := 0; i < len(name); i++ {
		if name[i] == '.' {
			if i == 0 || i == len(name)-1 {
				return "", "", false
			}
			return name[:i], name[i+1:], true
		}
	}
	return "", "", false
}

// nearest returns up to three catalog tools close to name, by either of
// their names.
func nearest(name string, cat *registry.Catalog) []string {
	cands := make([][]string, len(cat.Entries))
	for i, e := range cat.Entries {
		cands[i] = []string{e.Ref.String(), e.Name}
	}
	return suggest.Ranked(name, cands)
}

// event builds the filter event for a call.
func (h *Host) event(agent, server, method string, tool *mcp.Tool) *event.Event {
	// One allocation for the event and what it points to: every filtered
	// call makes one.
	box := &struct {
		e    event.Event
		info event.Info
		tool event.Tool
		ann  event.Annotations
	}{}
	e := &box.e
	*e = event.Event{ABI: event.ABI, Method: method, Agent: event.Agent{ID: agent}, Server: event.Server{Name: server}}
	if a, ok := h.perms.Agent(agent); ok {
		e.Agent.Permission = a.Permission
	}
	if c := h.reg.LiveClient(agent, server); c != nil {
		info := c.ServerInfo()
		box.info = event.Info{Name: info.Name, Version: info.Version}
		e.Server.Info = &box.info
	}
	if tool != nil {
		box.tool = event.Tool{Name: tool.Name}
		e.Tool = &box.tool
		if a := tool.Annotations; a != nil {
			box.ann = event.Annotations{Title: a.Title, ReadOnlyHint: a.ReadOnlyHint,
				DestructiveHint: a.DestructiveHint, IdempotentHint: a.IdempotentHint, OpenWorldHint: a.OpenWorldHint}
			e.Tool.Annotations = &box.ann
		}
	}
	return e
}

// Explain turns an error from a server into one a person can act on (the
// server's config source, its command, stderr tail, likely causes, a fix).
// Errors it does not know pass through.
func (h *Host) Explain(server string, err error) error {
	if err == nil {
		return nil
	}
	srv := h.cfg.Server(server)
	if srv == nil {
		return err
	}
	// A handshake's timeout, the one error a stdio server's stderr tail
	// explains, was explained when the dial failed (dial).
	return explain.Server(srv, err, nil)
}

// RootsChanged tells every connected server that the roots changed, so
// servers that care ask for them again.
func (h *Host) RootsChanged(ctx context.Context) error {
	if h.hooks.roots == nil {
		return nil
	}
	var errs []error
	for name, c := range h.reg.Live("") {
		if err := c.RootsChanged(ctx); err != nil {
			errs = append(errs, fmt.Errorf("server %q: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

// Close ends every session and stops every server process.
func (h *Host) Close() error {
	h.mu.Lock()
	h.bgClosed = true
	h.mu.Unlock()
	h.bgStop()
	h.reg.Close()
	h.bg.Wait()
	if h.root {
		h.closeExtensions(context.Background())
		h.auditOnce.Do(func() {}) // a log not opened yet stays closed; one opened is seen
		if h.auditW != nil {
			if err := h.auditW.Close(); err != nil {
				h.log.Error("closing the audit log", "error", err)
			}
		}
	}
	return nil
}

func configRoots(dirs []string) mcp.RootsHandler {
	roots := make([]mcp.Root, len(dirs))
	for i, d := range dirs {
		roots[i] = mcp.Root{URI: "file://" + d, Name: d}
	}
	return func(context.Context) ([]mcp.Root, error) { return roots, nil }
}

// rawArgs encodes call arguments once: a json.RawMessage passes through.
func rawArgs(args any) (json.RawMessage, error) {
	switch a := args.(type) {
	case nil:
		return json.RawMessage("{}"), nil
	case json.RawMessage:
		// Checked here, once: it is spliced into the request as it is.
		if !wire.ValidJSON(a) {
			return nil, errors.New("encoding arguments: the json.RawMessage given as arguments is not one valid JSON value")
		}
		return a, nil
	case CheckedArgs:
		return json.RawMessage(a), nil
	}
	// The protocol's client encodes arguments with the same encoder, so
	// the same value reaches a server as the same bytes either way.
	b, err := wire.AppendAny(nil, args)
	if err != nil {
		return nil, fmt.Errorf("encoding arguments: %w", err)
	}
	return b, nil
}

// Fingerprints are what each of cfg's servers is for a remembered approval
// (OpenApprovals): its transport and what it runs or reaches. A
// server whose command, arguments, working directory, URL or transport
// plugin changed is a different server, asked about again.
func Fingerprints(cfg *config.Config) map[string]string {
	out := make(map[string]string, len(cfg.Servers))
	for _, s := range cfg.Servers {
		parts := []string{s.Type}
		switch {
		case len(s.Command) > 0:
			parts = append(append(parts, s.Command...), "cwd="+s.Stdio.Cwd)
		case s.Plugin != nil:
			b, _ := json.Marshal(s.Plugin.Config) // map keys sorted: stable
			parts = append(parts, s.Plugin.Name, string(b))
		default:
			parts = append(parts, s.URL)
		}
		out[s.Name] = policy.Fingerprint(parts...)
	}
	return out
}
