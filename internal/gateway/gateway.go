package gateway

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/hostapi"
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
}

// Gateway serves a host to MCP clients. It is safe for concurrent use.
type Gateway struct {
	h    Upstream
	log  hclog.Logger
	opts Options

	mu       sync.Mutex
	sessions map[*session]struct{}
	wg       sync.WaitGroup
	closed   bool
}

// New makes a gateway in front of h. It takes over h's notification
// handlers (log messages, list changes, resource updates of the
// connections sessions share); create it before anything connects.
func New(h Upstream, o Options) *Gateway {
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
	g := &Gateway{h: h, log: o.Logger, opts: o, sessions: map[*session]struct{}{}}
	h.SetNotify(hostapi.SessionOptions{
		OnLog:             func(server string, m mcp.LogMessage) { g.shared(func(s *session) { s.forwardLog(server, m) }) },
		OnListChanged:     func(server, kind string) { g.shared(func(s *session) { s.listChanged(server, kind) }) },
		OnResourceUpdated: func(server, uri string) { g.shared(func(s *session) { s.updated(server, uri) }) },
		OnChange:          func(server string) { g.shared(func(s *session) { s.serverChanged(server) }) },
	})
	return g
}

// Host is the host the gateway serves.
func (g *Gateway) Host() Upstream { return g.h }

// shared runs fn for every session on the shared connections.
func (g *Gateway) shared(fn func(*session)) {
	g.mu.Lock()
	list := make([]*session, 0, len(g.sessions))
	for s := range g.sessions {
		if !s.isOwn() {
			list = append(list, s)
		}
	}
	g.mu.Unlock()
	for _, s := range list {
		fn(s)
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
	s.peer = mcp.NewPeer(conn, mcp.PeerOptions{
		Logger:      g.log.With("agent", agent),
		Handler:     s,
		Timeout:     g.opts.Timeout,
		MaxHandlers: g.opts.MaxRequests,
		MaxQueue:    g.opts.MaxRequests,
		// Without drain, a client that closed its side is gone: its calls
		// are cancelled upstream.
		NoDrain:      drain <= 0,
		DrainTimeout: drain,
	})
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		conn.Close()
		return ErrClosed
	}
	g.sessions[s] = struct{}{}
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
	return len(g.sessions)
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
	return nil
}
