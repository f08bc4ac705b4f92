package gateway

import (
	"context"
	"crypto/rand"
	"errors"
	"sort"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/engine"
	"github.com/nexus-mcp/nexus/internal/telemetry"
)

// Options tune a Gateway. The zero value is usable.
type Options struct {
	Logger hclog.Logger
	// PageSize is how many items one page of a list holds (default 100).
	PageSize int
	// Instructions are sent to clients at initialize.
	Instructions string
	// Timeout bounds each request the gateway sends a client (sampling,
	// elicitation, roots; default 5 minutes: a person may be answering).
	Timeout time.Duration
	// MaxRequests bounds the requests one session serves at once (default
	// 64); beyond it the client is told to retry.
	MaxRequests int
	// Metrics, when set, counts the sessions.
	Metrics *telemetry.Metrics
	// Version is the serverInfo version clients see at initialize
	// (host.NewGateway gives the host's).
	Version string
	// MaxOwnSessions bounds, per agent, the sessions with upstream
	// connections of their own (clients that declare sampling,
	// elicitation or roots; each starts its own server processes):
	// default 32 (the official conformance suite opens about 30 such
	// sessions and ends none: a client that does not end its sessions
	// holds its slots until session_idle_timeout). An initialize beyond
	// it is refused (see the package doc).
	MaxOwnSessions int
	// ListWait is how long a list request waits for servers that are
	// still starting (default 1 s): those not up by then are left out of
	// that answer, and the sessions that listed without them get
	// list_changed once they are up (see the package doc).
	ListWait time.Duration
	// CacheTTL is the ttlMs modern clients (MCP 2026-07-28) are given for
	// the lists and server/discover (gateway `cache_ttl`, default 1
	// minute): how long they may use a list without asking again. Lists
	// are per agent, so always cacheScope "private"; a list that left out
	// servers still starting gets 0, and a resources/read no more than its
	// server gave (0 when it gave none). subscriptions/listen tells of
	// changes sooner.
	CacheTTL time.Duration
	// Eager starts the servers whose start option is eager (the default)
	// when an agent's first session initializes, and Warm starts them
	// before any does (`nexus serve`): the first list finds them up or
	// starting. Without it servers connect on first use.
	Eager bool
	// StateKey seals the requestState the gateway hands modern agents
	// when a legacy server asks them something mid-call (32 bytes; gateway
	// `state_key`, or NEXUS_STATE_KEY): replicas that share it can each
	// check the others'. Nil: a random key of this process's, with a
	// warning (another replica cannot open its states).
	StateKey []byte
	// ReplicaID names this process among the replicas in the states it
	// seals (a retry that names another is not served here); default
	// random.
	ReplicaID [8]byte
	// InputTTL is how long a call a server asked input of waits for the
	// agent's retry before it is cancelled upstream (default 5 minutes);
	// MaxParked and MaxParkedPerAgent bound how many wait at once
	// (default 1024 and 64).
	InputTTL          time.Duration
	MaxParked         int
	MaxParkedPerAgent int
	// UpstreamIdle ends an agent's connection to a server that its modern
	// requests used, once none has for this long (default 10 minutes; a
	// later request opens it again). MaxUpstreams and
	// MaxUpstreamsPerAgent bound how many such connections the gateway
	// keeps (default 4096 and 64): a modern call that would open one past
	// a bound is refused, saying which.
	UpstreamIdle         time.Duration
	MaxUpstreams         int
	MaxUpstreamsPerAgent int
}

// Gateway serves a host to MCP clients. It is safe for concurrent use.
type Gateway struct {
	h    *engine.Host
	log  hclog.Logger
	opts Options

	mu       sync.Mutex
	sessions map[*session]struct{}
	agents   map[string]*engine.Host // each agent's shared upstream connections (see the package doc)
	own      map[string]int          // sessions with connections of their own, by agent
	warmed   map[string]bool         // agents whose shared connections Warm started
	ownMax   int
	modMax   int  // requests one agent's modern session serves at once (serveModern)
	ownKey   bool // no state key was given: this process made its own (HTTPHandler warns with replicas)
	wg       sync.WaitGroup
	closed   bool
	br       *bridge // modern agents' calls to legacy servers (bridge.go)
}

// New makes a gateway in front of h. Sessions use connections h makes
// with NewSession: one set per agent that they share, and a set of its
// own for a session whose client answers server requests; h's own
// connections serve /readyz only.
func New(h *engine.Host, o Options) *Gateway {
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	if o.PageSize <= 0 {
		o.PageSize = 100
	}
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Minute
	}
	if o.MaxRequests <= 0 {
		o.MaxRequests = 64
	}
	if o.Version == "" {
		o.Version = "dev"
	}
	if o.MaxOwnSessions <= 0 {
		o.MaxOwnSessions = 32
	}
	if o.ListWait <= 0 {
		o.ListWait = time.Second
	}
	if o.CacheTTL <= 0 {
		o.CacheTTL = time.Minute
	}
	if o.InputTTL <= 0 {
		o.InputTTL = defaultInputTTL
	}
	if o.MaxParked <= 0 {
		o.MaxParked = defaultMaxParked
	}
	if o.MaxParkedPerAgent <= 0 {
		o.MaxParkedPerAgent = defaultMaxParkedPer
	}
	if o.UpstreamIdle <= 0 {
		o.UpstreamIdle = defaultUpstreamIdle
	}
	if o.MaxUpstreams <= 0 {
		o.MaxUpstreams = defaultMaxUpstreams
	}
	if o.MaxUpstreamsPerAgent <= 0 {
		o.MaxUpstreamsPerAgent = defaultMaxUpstreamsPer
	}
	if o.ReplicaID == ([8]byte{}) {
		rand.Read(o.ReplicaID[:])
	}
	key := o.StateKey
	if key == nil {
		// Enough for one process; replicas must share one (HTTPHandler
		// says so when a session store makes this one of several).
		key = make([]byte, 32)
		rand.Read(key)
	}
	g := &Gateway{h: h, log: o.Logger, opts: o, ownKey: o.StateKey == nil, ownMax: o.MaxOwnSessions, sessions: map[*session]struct{}{},
		agents: map[string]*engine.Host{}, own: map[string]int{}, warmed: map[string]bool{}}
	br, err := newBridge(g, key, o.ReplicaID)
	if err != nil {
		// A bad key is the caller's to catch (config.ParseStateKey); this one
		// still works, for itself.
		o.Logger.Error("the requestState key is unusable; using a random one", "error", err)
		key = make([]byte, 32)
		rand.Read(key)
		br, _ = newBridge(g, key, o.ReplicaID)
	}
	g.br = br
	g.watchLock()
	return g
}

// Host is the host the gateway serves.
func (g *Gateway) Host() *engine.Host { return g.h }

// agentHost is agent's shared upstream connections, made on first use:
// what they carry that no request claims (a log line, list_changed,
// resources/updated) can reach that agent's sessions only.
// Called with g.mu held.
func (g *Gateway) agentHost(agent string) *engine.Host {
	if up := g.agents[agent]; up != nil {
		return up
	}
	up := g.h.NewSession(g.bridgeOptions(agent, engine.SessionOptions{
		Agent:             agent,
		OnLog:             func(server string, m mcp.LogMessage) { g.sharedLog(agent, server, m) },
		OnListChanged:     func(server, kind string) { g.shared(agent, func(s *session) { s.listChanged(server, kind) }) },
		OnResourceUpdated: func(server, uri string) { g.shared(agent, func(s *session) { s.updated(server, uri) }) },
		OnChange:          func(server string) { g.shared(agent, func(s *session) { s.serverChanged(server) }) },
	}))
	g.agents[agent] = up
	return up
}

// Warm starts agent's shared connections to the servers whose start
// option is eager, in the background, once per agent: `nexus serve`
// calls it for the agent it serves before a client connects, and with
// Options.Eager an agent's first session does. It does not wait; a
// server that fails is logged and shows in /readyz.
func (g *Gateway) Warm(agent string) {
	g.mu.Lock()
	if g.closed || g.warmed[agent] {
		g.mu.Unlock()
		return
	}
	g.warmed[agent] = true
	up := g.agentHost(agent)
	g.mu.Unlock()
	warm(up)
}

// serverDown is a server whose last start failed, for /readyz.
type serverDown struct {
	Server string `json:"server"`
	Agent  string `json:"agent,omitempty"` // whose shared connection; "" for the gateway's own
	Error  string `json:"error"`
}

// notStarted lists the servers whose last connection attempt failed, on
// the gateway's own connections and on each agent's shared ones.
func (g *Gateway) notStarted() []serverDown {
	g.mu.Lock()
	ups := make(map[string]*engine.Host, len(g.agents))
	for a, up := range g.agents {
		ups[a] = up
	}
	g.mu.Unlock()
	var out []serverDown
	add := func(agent string, up *engine.Host) {
		for _, st := range up.Servers() {
			if !st.Connected && st.Err != nil {
				out = append(out, serverDown{Server: st.Config.Name, Agent: agent, Error: oneLine(st.Err)})
			}
		}
	}
	add("", g.h)
	names := make([]string, 0, len(ups))
	for a := range ups {
		names = append(names, a)
	}
	sort.Strings(names)
	for _, a := range names {
		add(a, ups[a])
	}
	return out
}

// warm starts up's eager servers (the host's Warm).
func warm(up *engine.Host) { up.Warm() }

// sessionsOf is agent's sessions on its shared connections.
func (g *Gateway) sessionsOf(agent string) []*session {
	g.mu.Lock()
	list := make([]*session, 0, len(g.sessions))
	for s := range g.sessions {
		if s.agent == agent {
			list = append(list, s)
		}
	}
	g.mu.Unlock()
	out := list[:0]
	for _, s := range list {
		if !s.isOwn() {
			out = append(out, s)
		}
	}
	return out
}

// usedBySessions reports whether a session of agent on its shared
// connections is using server: a request in flight to it, a
// subscription there, or a subscriptions/listen stream watching it.
func (g *Gateway) usedBySessions(agent, server string) bool {
	for _, s := range g.sessionsOf(agent) {
		if s.busyWith(server) {
			return true
		}
		s.mu.Lock()
		used := false
		for _, srv := range s.subs {
			used = used || srv == server
		}
		for l := range s.listeners {
			for _, srv := range l.resources {
				used = used || srv == server
			}
		}
		s.mu.Unlock()
		if used {
			return true
		}
	}
	return false
}

// shared runs fn for every session on agent's shared connections.
func (g *Gateway) shared(agent string, fn func(*session)) {
	for _, s := range g.sessionsOf(agent) {
		fn(s)
	}
}

// sharedLog passes on a log message of agent's shared connection to
// server. One the server sent on a request's response stream (streamable
// HTTP) is that request's: it goes to the session whose call it was, on
// that call's stream, or nowhere once the call has ended. For the rest
// (stdio, the standalone stream) the protocol does not say which request
// a message belongs to, so the gateway goes by who is waiting on the
// server: the one session with requests in flight to it gets it (on such
// a request's stream); with none, every session of the agent gets it;
// with several, nobody does, since sending it to each would put one
// call's log (its arguments, often) on every other call's answer: gap 1
// of issue 37 made a 9.5 MB echo's answer 85.5 MB that way.
//
// A bridged call (a modern request's, bridge.go) is one of those who
// wait: its messages go to its current attempt (bcall.log), whichever
// request, session or replica that is.
func (g *Gateway) sharedLog(agent, server string, m mcp.LogMessage) {
	if m.Related {
		if c := bcallOf(m.Call); c != nil && c.br == g.br && c.agent == agent {
			c.log(server, m)
			return
		}
		if s := callSession(m.Call); s != nil && s.g == g && s.agent == agent && !s.isOwn() {
			s.forwardLog(server, m)
		} else {
			g.log.Debug("a log message of a request that has ended was dropped", "agent", agent, "server", server)
		}
		return
	}
	list := g.sessionsOf(agent)
	var busy []*session
	for _, s := range list {
		if s.busyWith(server) {
			busy = append(busy, s)
		}
	}
	calls := g.br.running(agent, server)
	switch {
	case len(busy)+len(calls) > 1:
		g.log.Debug("a log message of a shared connection was dropped: several calls wait on the server, and it does not say whose it is", "agent", agent, "server", server)
	case len(calls) == 1:
		calls[0].log(server, m)
	case len(busy) == 1:
		busy[0].forwardLog(server, m)
	default: // nobody waits
		for _, s := range list {
			s.forwardLog(server, m)
		}
	}
}

// takeOwn counts a session with upstream connections of its own against
// its agent's cap; false when the agent is at it.
func (g *Gateway) takeOwn(agent string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.own[agent] >= g.ownMax {
		return false
	}
	g.own[agent]++
	return true
}

func (g *Gateway) dropOwn(agent string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.own[agent]--; g.own[agent] <= 0 {
		delete(g.own, agent)
	}
}

// setOwnMax sets the cap takeOwn enforces (the HTTP listener's limits).
func (g *Gateway) setOwnMax(n int) {
	if n > 0 {
		g.mu.Lock()
		g.ownMax = n
		g.mu.Unlock()
	}
}

// ErrClosed is returned by Serve once the gateway is closed.
var ErrClosed = errors.New("gateway: closed")

// Serve runs one downstream session over conn as agent until the client
// goes, conn fails or ctx ends. The session's own upstream connections, if
// it has any, close with it; its requests in flight are cancelled.
func (g *Gateway) Serve(ctx context.Context, conn mcp.Conn, agent string) error {
	return g.serve(ctx, conn, agent, nil, false, nil, 0)
}

// serveModern runs a session every message of which is a modern request
// (MCP 2026-07-28) carrying its own _meta: the internal session
// httpserver keeps per principal for them (httpserver.Session.Modern).
// It never initializes, never has connections of its own and never
// sends a request to the client: nobody could answer it.
func (g *Gateway) serveModern(ctx context.Context, conn mcp.Conn, agent string) error {
	if g.opts.Eager {
		// What an initialize would warm: the agent's shared connections.
		g.Warm(agent)
	}
	return g.serve(ctx, conn, agent, nil, false, func(s *session) func() {
		s.modernOnly = true
		return func() {}
	}, 0)
}

// ServeDrain is Serve for a client whose end of input is not its going
// away, as a Unix filter's is not (`nexus serve` on stdio): the requests
// it has sent are answered, within drain (then cancelled), before the
// session ends.
func (g *Gateway) ServeDrain(ctx context.Context, conn mcp.Conn, agent string, drain time.Duration) error {
	return g.serve(ctx, conn, agent, nil, false, nil, drain)
}

// serve is Serve for a session whose state the replicas share in st;
// restored says another replica opened it; track, if set, is told of the
// session and returns what to call when it ends; drain > 0 answers the
// requests read before the end of input (ServeDrain).
func (g *Gateway) serve(ctx context.Context, conn mcp.Conn, agent string, st *stored, restored bool, track func(*session) func(), drain time.Duration) error {
	s := newSession(g, agent)
	s.stored = st
	if track != nil {
		defer track(s)()
	}
	handlers := g.opts.MaxRequests
	if s.modernOnly {
		// One session carries all of an agent's modern requests: the
		// HTTP listener's per-agent cap bounds them, not a session's.
		handlers = g.modernLimit()
	}
	s.peer = mcp.NewPeer(conn, mcp.PeerOptions{
		Logger:      g.log.With("agent", agent),
		Handler:     s,
		Timeout:     g.opts.Timeout,
		MaxHandlers: handlers,
		MaxQueue:    handlers,
		// Without drain, a client that closed its side is gone: its calls
		// are cancelled upstream.
		NoDrain:      drain <= 0,
		DrainTimeout: drain,
	})
	s.setServed("") // the transport; initialize adds the version
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		conn.Close()
		return ErrClosed
	}
	g.sessions[s] = struct{}{}
	s.up = g.agentHost(agent)
	g.wg.Add(1)
	g.mu.Unlock()
	if restored {
		// Before the peer reads the request that brought the session here.
		if err := s.restore(); err != nil {
			g.log.Warn("cannot restore a session another replica opened; it is served as uninitialized", "error", oneLine(err))
		}
	}
	g.opts.Metrics.Sessions(1)
	defer func() {
		g.opts.Metrics.Sessions(-1)
		g.mu.Lock()
		delete(g.sessions, s)
		g.mu.Unlock()
		s.close()
		g.wg.Done()
	}()
	s.peer.Start()
	select {
	case <-s.peer.Done():
		err := s.peer.Err()
		conn.Close()
		return err
	case <-ctx.Done():
		s.peer.Close()
		return ctx.Err()
	}
}

// Sessions is the number of live downstream sessions.
func (g *Gateway) Sessions() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := 0
	for s := range g.sessions {
		// An agent's internal session for its stateless (2026-07-28)
		// requests is no client's session: a probe such as server/discover
		// opens one.
		if !s.modernOnly {
			n++
		}
	}
	return n
}

// Close ends every session and waits for them; the host is the caller's
// to close.
func (g *Gateway) Close() error {
	g.mu.Lock()
	g.closed = true
	list := make([]*session, 0, len(g.sessions))
	for s := range g.sessions {
		list = append(list, s)
	}
	g.mu.Unlock()
	for _, s := range list {
		s.peer.Close()
	}
	g.wg.Wait()
	g.br.close()
	g.mu.Lock()
	agents := g.agents
	g.agents = map[string]*engine.Host{}
	g.mu.Unlock()
	for _, up := range agents {
		up.Close()
	}
	return nil
}

// setModernMax sets how many requests an agent's modern session serves
// at once: the HTTP listener's per-agent request cap.
func (g *Gateway) setModernMax(n int) {
	g.mu.Lock()
	g.modMax = n
	g.mu.Unlock()
}

func (g *Gateway) modernLimit() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return max(g.modMax, g.opts.MaxRequests)
}

func (g *Gateway) ownLimit() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.ownMax
}
