package registry

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/config"
)

// Dialer opens a session to one server: it starts the transport and runs
// the initialize handshake. Errors should already carry the server's context.
type Dialer func(ctx context.Context, srv *config.Server) (*mcp.Client, error)

// Options tune a Registry.
type Options struct {
	Logger hclog.Logger
	// ConnectTimeout bounds one connection attempt when the server's config
	// sets no timeout (default 30 s).
	ConnectTimeout time.Duration
	// BackoffBase and BackoffMax shape the wait between reconnection
	// attempts to a server that keeps failing (defaults 500 ms and 30 s).
	BackoffBase, BackoffMax time.Duration
	// StableAfter is how long a session must last to count as a successful
	// connection (default 10 s). A server that dies before its tools are
	// listed is a failed attempt like a failed dial. One that dies later
	// but sooner than StableAfter may reconnect at once the first time;
	// if it keeps doing so the backoff grows as for failed dials, so a
	// crash loop cannot turn every use into a new process.
	StableAfter time.Duration
	// OnChange is called after a server's tools, resources or prompts
	// changed, or it (re)connected or died.
	OnChange func(server string)
	now      func() time.Time
}

// Registry holds the live connections to the configured servers.
type Registry struct {
	dial Dialer
	opts Options
	log  hclog.Logger

	mu      sync.Mutex
	entries map[string]*entry
	closed  bool
}

// entry is one server: its connection, or why there is none.
type entry struct {
	cfg *config.Server

	// dialMu makes concurrent users of a dead server wait for one
	// reconnection instead of each starting a process.
	dialMu sync.Mutex

	mu        sync.Mutex
	client    *mcp.Client
	err       error     // last connection error
	toolsErr  error     // last tools/list error (the server is connected anyway)
	failures  int       // consecutive failed attempts
	before    int       // failures before the current session connected
	nextTry   time.Time // no attempt before this
	owner     string    // agent that made the connection; "" for config servers
	shared    bool      // visible to every agent
	connected time.Time
	removed   bool
	// version is the protocol version the server spoke when last
	// connected: its era, remembered for the next connection.
	version string
}

// New makes a registry that connects with dial.
func New(dial Dialer, opts Options) *Registry {
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	if opts.ConnectTimeout <= 0 {
		opts.ConnectTimeout = 30 * time.Second
	}
	if opts.BackoffBase <= 0 {
		opts.BackoffBase = 500 * time.Millisecond
	}
	if opts.BackoffMax <= 0 {
		opts.BackoffMax = 30 * time.Second
	}
	if opts.StableAfter <= 0 {
		opts.StableAfter = 10 * time.Second
	}
	if opts.now == nil {
		opts.now = time.Now
	}
	return &Registry{dial: dial, opts: opts, log: opts.Logger, entries: map[string]*entry{}}
}

// Add registers servers without connecting them. Disabled servers are
// kept, so they can be reported, but never connected.
func (r *Registry) Add(servers ...*config.Server) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range servers {
		if _, ok := r.entries[s.Name]; !ok {
			r.entries[s.Name] = &entry{cfg: s, shared: true}
		}
	}
}

// Start connects every enabled server concurrently, each with its own
// timeout. One failing does not hold up or fail the others: its error is
// kept for Status. Start returns when every attempt has finished.
func (r *Registry) Start(ctx context.Context) {
	var wg sync.WaitGroup
	for _, e := range r.list() {
		if !e.cfg.Enabled {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := r.connect(ctx, e, true); err != nil {
				r.log.Warn("server did not connect", "server", e.cfg.Name, "error", firstLine(err))
			}
		}()
	}
	wg.Wait()
}

func (r *Registry) list() []*entry {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*entry, 0, len(r.entries))
	for _, e := range r.entries {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].cfg.Name < out[j].cfg.Name })
	return out
}

func (r *Registry) get(name string) *entry {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.entries[name]
}

// NotConfiguredError names a server the registry does not know.
type NotConfiguredError struct {
	Name  string
	Known []string
}

func (e *NotConfiguredError) Error() string {
	return fmt.Sprintf("no server named %q is configured (configured: %v)", e.Name, e.Known)
}

// DisabledError is a server that is configured but disabled.
type DisabledError struct{ Server *config.Server }

func (e *DisabledError) Error() string {
	return fmt.Sprintf("server %q is disabled in its config", e.Server.Name)
}

// BackoffError is returned while a failing server waits before the next
// reconnection attempt; Err is the last failure.
type BackoffError struct {
	Server string
	Retry  time.Duration
	Err    error
}

func (e *BackoffError) Error() string {
	return fmt.Sprintf("server %q is unavailable (next reconnection attempt in %s): %v", e.Server, e.Retry.Round(time.Millisecond), e.Err)
}

func (e *BackoffError) Unwrap() error { return e.Err }

// Client returns the session to server for agent, reconnecting a dead one.
// A server that keeps failing is retried with exponential backoff; between
// attempts the last error comes back at once, so a crash loop cannot turn
// into a busy loop.
func (r *Registry) Client(ctx context.Context, server, agent string) (*mcp.Client, error) {
	e := r.get(server)
	if e == nil || !e.visibleTo(agent) {
		return nil, &NotConfiguredError{Name: server, Known: r.Names(agent)}
	}
	if !e.cfg.Enabled {
		return nil, &DisabledError{Server: e.cfg}
	}
	if c := e.alive(); c != nil {
		return c, nil
	}
	return r.connect(ctx, e, false)
}

func (e *entry) alive() *mcp.Client {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.client != nil && e.client.Err() == nil {
		return e.client
	}
	return nil
}

func (e *entry) visibleTo(agent string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.shared || e.owner == "" || e.owner == agent
}

// connect dials e unless it is in backoff. force ignores the backoff (the
// first start, an explicit retry).
func (r *Registry) connect(ctx context.Context, e *entry, force bool) (*mcp.Client, error) {
	e.dialMu.Lock()
	defer e.dialMu.Unlock()
	if c := e.alive(); c != nil {
		return c, nil // someone else reconnected while we waited
	}
	e.mu.Lock()
	dead := e.client
	e.mu.Unlock()
	if dead != nil {
		r.ended(e, dead, false) // before watch gets to it, so the backoff below is right
	}
	e.mu.Lock()
	if e.removed {
		e.mu.Unlock()
		return nil, &NotConfiguredError{Name: e.cfg.Name}
	}
	wait := e.nextTry.Sub(r.opts.now())
	lastErr := e.err
	e.mu.Unlock()
	if !force && wait > 0 && lastErr != nil {
		return nil, &BackoffError{Server: e.cfg.Name, Retry: wait, Err: lastErr}
	}
	if r.isClosed() {
		return nil, mcp.ErrClosed
	}

	timeout := e.cfg.Timeout
	if timeout <= 0 {
		timeout = r.opts.ConnectTimeout
	}
	dctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	e.mu.Lock()
	version := e.version
	e.mu.Unlock()
	if version != "" {
		// The era the server spoke last time: a legacy one is not probed
		// again (mcp.WithRememberedVersion).
		dctx = mcp.WithRememberedVersion(dctx, version)
	}
	c, err := r.dial(dctx, e.cfg)

	e.mu.Lock()
	if err != nil {
		e.failures++
		e.err = err
		e.nextTry = r.opts.now().Add(r.backoff(e.failures))
		e.mu.Unlock()
		r.changed(e.cfg.Name)
		return nil, err
	}
	if r.isClosed() || e.removed {
		e.mu.Unlock()
		c.Close()
		return nil, mcp.ErrClosed
	}
	e.client, e.err, e.connected = c, nil, r.opts.now()
	e.version = c.ProtocolVersion()
	e.before, e.failures = e.failures, 0
	e.mu.Unlock()

	// Learn the tools now, so a server whose tools/list fails is found out
	// at connect time and, with fail_if_no_tools, refused.
	if err := r.fetchTools(ctx, e, c); err != nil && e.cfg.FailIfNoTools {
		c.Close()
		e.mu.Lock()
		e.client = nil
		e.failures = e.before + 1
		e.err = &NoToolsError{Server: e.cfg.Name, Err: err}
		e.nextTry = r.opts.now().Add(r.backoff(e.failures))
		err = e.err
		e.mu.Unlock()
		return nil, err
	}
	if c.Err() != nil {
		// It died during the listing: a failed attempt, so the next use
		// waits out a backoff. This caller still gets the session, whose
		// next request fails with what killed it. Recorded before watch
		// starts, which would otherwise see the same death first and
		// take it for a healthy session's (reconnect at once).
		r.ended(e, c, true)
	}
	go r.watch(e, c)
	r.changed(e.cfg.Name)
	return c, nil
}

// NoToolsError refuses a server with fail_if_no_tools whose tools/list failed.
type NoToolsError struct {
	Server string
	Err    error
}

func (e *NoToolsError) Error() string {
	return fmt.Sprintf("server %q: listing its tools failed and fail_if_no_tools is set: %v", e.Server, e.Err)
}

func (e *NoToolsError) Unwrap() error { return e.Err }

func (r *Registry) fetchTools(ctx context.Context, e *entry, c *mcp.Client) error {
	var err error
	if c.Capabilities().Tools != nil {
		_, err = c.ListTools(ctx)
	}
	e.mu.Lock()
	e.toolsErr = err
	e.mu.Unlock()
	if err != nil {
		r.log.Warn("listing tools failed; the server stays connected with no tools", "server", e.cfg.Name, "error", err)
	}
	return err
}

// backoff is the wait after n consecutive failures: exponential from the
// base, capped, with up to 20% jitter so a fleet does not retry in step.
func (r *Registry) backoff(n int) time.Duration {
	d := r.opts.BackoffBase
	for i := 1; i < n && d < r.opts.BackoffMax; i++ {
		d *= 2
	}
	d = min(d, r.opts.BackoffMax)
	return d + time.Duration(rand.Int64N(int64(d)/5+1))
}

// watch notices a session ending so Status and OnChange see it at once.
func (r *Registry) watch(e *entry, c *mcp.Client) {
	<-c.Done()
	if r.ended(e, c, false) && !r.isClosed() {
		r.log.Warn("server session ended; it reconnects on next use", "server", e.cfg.Name, "error", c.Err())
		r.changed(e.cfg.Name)
	}
}

// ended records that c, e's session, is over; connecting says it died
// before connect was done with it. A session that ended soon after
// connecting counts as a failed attempt and sets the backoff; one that ran
// for a while may reconnect at once. It reports whether c was still e's
// session (watch and connect may both see the same death).
func (r *Registry) ended(e *entry, c *mcp.Client, connecting bool) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.client != c {
		return false
	}
	e.client = nil
	e.err = c.Err()
	switch now := r.opts.now(); {
	case errors.Is(e.err, mcp.ErrClosed):
		e.err = nil
	case connecting || now.Sub(e.connected) < r.opts.StableAfter:
		// It crashed right after connecting: a failed attempt. Only a
		// server that was healthy before and got as far as serving its
		// tools list may try again at once (it may have died of one bad
		// call); if that happens again it backs off.
		e.failures = e.before + 1
		wait := r.backoff(e.failures)
		if !connecting && e.before == 0 {
			wait = 0
		}
		e.nextTry = now.Add(wait)
	default:
		e.nextTry = time.Time{} // it ran fine for a while: reconnect at once
	}
	return true
}

func (r *Registry) changed(server string) {
	if r.opts.OnChange != nil {
		r.opts.OnChange(server)
	}
}

func (r *Registry) isClosed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.closed
}

// Connect connects a configured server on behalf of agent; unless shared
// it is then visible to that agent only. An already live session is kept.
func (r *Registry) Connect(ctx context.Context, server, agent string, shared bool) (*mcp.Client, error) {
	e := r.get(server)
	if e == nil {
		return nil, &NotConfiguredError{Name: server, Known: r.Names("")}
	}
	if !e.cfg.Enabled {
		return nil, &DisabledError{Server: e.cfg}
	}
	e.mu.Lock()
	e.owner, e.shared = agent, shared
	e.mu.Unlock()
	return r.connect(ctx, e, true)
}

// Disconnect closes a server's session; it reconnects on next use.
func (r *Registry) Disconnect(server string) {
	e := r.get(server)
	if e == nil {
		return
	}
	e.mu.Lock()
	c := e.client
	e.client = nil
	e.mu.Unlock()
	if c != nil {
		c.Close()
	}
}

// RetryTools lists a server's tools again, for a server whose listing
// failed. It is an explicit retry: a server that is down (refused by
// fail_if_no_tools, say) is reconnected without waiting out its backoff.
func (r *Registry) RetryTools(ctx context.Context, server, agent string) error {
	e := r.get(server)
	if e == nil || !e.visibleTo(agent) {
		return &NotConfiguredError{Name: server, Known: r.Names(agent)}
	}
	if !e.cfg.Enabled {
		return &DisabledError{Server: e.cfg}
	}
	if c := e.alive(); c != nil {
		return r.fetchTools(ctx, e, c)
	}
	if _, err := r.connect(ctx, e, true); err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.toolsErr
}

// CheckConnections drops the sessions that have died and cannot come back
// (their last reconnection attempt failed too) and returns their names.
// They are retried on next use after their backoff.
func (r *Registry) CheckConnections(ctx context.Context) []string {
	var dead []string
	for _, e := range r.list() {
		if !e.cfg.Enabled || e.alive() != nil {
			continue
		}
		e.mu.Lock()
		wasConnected := !e.connected.IsZero()
		e.mu.Unlock()
		if !wasConnected {
			continue
		}
		if _, err := r.connect(ctx, e, false); err != nil {
			dead = append(dead, e.cfg.Name)
		}
	}
	return dead
}

// Visible reports whether agent may see server: it is configured and not
// connected privately by another agent.
func (r *Registry) Visible(server, agent string) bool {
	e := r.get(server)
	return e != nil && (agent == "" || e.visibleTo(agent))
}

// Names lists the servers agent can see.
func (r *Registry) Names(agent string) []string {
	var out []string
	for _, e := range r.list() {
		if agent == "" || e.visibleTo(agent) {
			out = append(out, e.cfg.Name)
		}
	}
	return out
}

// Status is what `nexus servers` shows of one server.
type Status struct {
	Config    *config.Server
	Connected bool
	Err       error // why it is not connected
	ToolsErr  error // why its tool list is empty
	Info      mcp.Implementation
	Version   string // protocol version
	Era       string // "modern" (per-request metadata) or "legacy" (initialize)
	Caps      mcp.ServerCapabilities
	Tools     int
	Owner     string
	Shared    bool
	Failures  int
}

// Status reports every server, sorted by name.
func (r *Registry) Status() []Status {
	var out []Status
	for _, e := range r.list() {
		e.mu.Lock()
		s := Status{Config: e.cfg, Err: e.err, ToolsErr: e.toolsErr, Owner: e.owner, Shared: e.shared, Failures: e.failures}
		c := e.client
		e.mu.Unlock()
		if c != nil && c.Err() == nil {
			s.Connected = true
			s.Info, s.Version, s.Caps, s.Era = c.ServerInfo(), c.ProtocolVersion(), c.Capabilities(), c.Era()
			if tools, err := c.Tools(context.Background()); err == nil {
				s.Tools = len(tools)
			}
		}
		out = append(out, s)
	}
	return out
}

// Connected reports whether server's session is up, without asking it
// anything.
func (r *Registry) Connected(server string) bool {
	e := r.get(server)
	if e == nil {
		return false
	}
	e.mu.Lock()
	c := e.client
	e.mu.Unlock()
	return c != nil && c.Err() == nil
}

// Live returns the connected sessions agent can see, by server name.
func (r *Registry) Live(agent string) map[string]*mcp.Client {
	out := map[string]*mcp.Client{}
	for _, e := range r.list() {
		if !e.visibleTo(agent) {
			continue
		}
		if c := e.alive(); c != nil {
			out[e.cfg.Name] = c
		}
	}
	return out
}

// LiveClient is the live session of one server visible to agent, or nil:
// Live without building the map, for a call that needs one server's.
func (r *Registry) LiveClient(agent, server string) *mcp.Client {
	e := r.get(server)
	if e == nil || !e.visibleTo(agent) {
		return nil
	}
	return e.alive()
}

// Close ends every session and stops every server process, in parallel.
func (r *Registry) Close() {
	r.mu.Lock()
	r.closed = true
	entries := r.entries
	r.mu.Unlock()
	var wg sync.WaitGroup
	for _, e := range entries {
		e.mu.Lock()
		c := e.client
		e.client = nil
		e.removed = true
		e.mu.Unlock()
		if c != nil {
			wg.Add(1)
			go func() { defer wg.Done(); c.Close() }()
		}
	}
	wg.Wait()
}

func firstLine(err error) string {
	s := err.Error()
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			return s[:i]
		}
	}
	return s
}
