package host

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nexus-mcp/nexus/host/config"
	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/host/transport/stdio"
)

// Version is the Nexus version sent as clientInfo.
var Version = "0.1.0-dev"

// DefaultTimeout applies to each request when neither the caller nor the
// server's config sets one.
const DefaultTimeout = 30 * time.Second

// Options configure a Host. The zero value is usable.
type Options struct {
	Logger hclog.Logger
	// Timeout per request; a server's own `timeout` wins over it.
	Timeout time.Duration

	// Handlers for requests servers send; nil leaves the capability out.
	Roots       mcp.RootsHandler
	Sampling    func(server string) mcp.SamplingHandler
	Elicitation func(server string) mcp.ElicitationHandler
	// OnLog receives server log notifications.
	OnLog func(server string, m mcp.LogMessage)

	// CloseGrace is how long a stdio server gets to exit after its stdin
	// closes, and again after SIGTERM (default 2 s).
	CloseGrace time.Duration
}

// Host connects to the configured servers on first use and keeps the
// sessions until Close.
type Host struct {
	cfg  *config.Config
	opts Options
	log  hclog.Logger

	mu     sync.Mutex
	conns  map[string]*conn
	closed bool
}

type conn struct {
	client *mcp.Client
	stdio  *stdio.Conn
}

// New makes a host for cfg. Nothing connects until a server is used.
func New(cfg *config.Config, opts Options) *Host {
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	return &Host{cfg: cfg, opts: opts, log: opts.Logger, conns: map[string]*conn{}}
}

// Config is the configuration the host runs.
func (h *Host) Config() *config.Config { return h.cfg }

// Servers lists the enabled servers, sorted by name.
func (h *Host) Servers() []*config.Server {
	var out []*config.Server
	for _, s := range h.cfg.Servers {
		if s.Enabled {
			out = append(out, s)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// UnknownServerError names a server that is not configured.
type UnknownServerError struct {
	Name  string
	Known []string
}

func (e *UnknownServerError) Error() string {
	return fmt.Sprintf("no server named %q is configured (configured: %v)", e.Name, e.Known)
}

// Client returns the session for a server, connecting it on first use. A
// session that died is replaced by a new connection.
func (h *Host) Client(ctx context.Context, name string) (*mcp.Client, error) {
	srv := h.cfg.Server(name)
	if srv == nil {
		return nil, &UnknownServerError{Name: name, Known: h.cfg.Names()}
	}
	if !srv.Enabled {
		return nil, explainDisabled(srv)
	}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil, mcp.ErrClosed
	}
	if c := h.conns[name]; c != nil {
		if c.client.Err() == nil {
			h.mu.Unlock()
			return c.client, nil
		}
		delete(h.conns, name)
		go c.client.Close()
	}
	h.mu.Unlock()

	c, err := h.connect(ctx, srv)
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		c.client.Close()
		return nil, mcp.ErrClosed
	}
	if old := h.conns[name]; old != nil && old.client.Err() == nil {
		// Another caller connected first; keep one session.
		go c.client.Close()
		return old.client, nil
	}
	h.conns[name] = c
	return c.client, nil
}

func (h *Host) timeout(srv *config.Server) time.Duration {
	if srv.Timeout > 0 {
		return srv.Timeout
	}
	return h.opts.Timeout
}

func (h *Host) connect(ctx context.Context, srv *config.Server) (*conn, error) {
	if srv.Type != "stdio" {
		return nil, explainUnsupportedTransport(srv)
	}
	log := h.log.Named(srv.Name)
	sc, err := stdio.Start(ctx, stdio.Config{
		Server:         srv.Name,
		Command:        srv.Command,
		Env:            srv.Environ(),
		EnvPassthrough: srv.EnvPassthrough,
		Dir:            srv.Cwd,
		Logger:         log,
		CloseGrace:     h.opts.CloseGrace,
	})
	if err != nil {
		return nil, explain(srv, err, nil)
	}
	opts := mcp.ClientOptions{
		Info:    mcp.Implementation{Name: "nexus", Version: Version},
		Logger:  log,
		Timeout: h.timeout(srv),
		Roots:   h.opts.Roots,
	}
	if h.opts.Sampling != nil {
		opts.Sampling = h.opts.Sampling(srv.Name)
	}
	if h.opts.Elicitation != nil {
		opts.Elicitation = h.opts.Elicitation(srv.Name)
		opts.ElicitationURL = true
	}
	if h.opts.OnLog != nil {
		name := srv.Name
		opts.OnLog = func(m mcp.LogMessage) { h.opts.OnLog(name, m) }
	}
	hctx, cancel := context.WithTimeout(ctx, h.timeout(srv))
	defer cancel()
	client, err := mcp.Connect(hctx, sc, opts)
	if err != nil {
		sc.Close()
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			err = &mcp.TimeoutError{Method: mcp.MethodInitialize, After: h.timeout(srv)}
		}
		return nil, explain(srv, err, sc)
	}
	return &conn{client: client, stdio: sc}, nil
}

// Explain turns an error from a call on server's session into one a person
// can act on (the server's config source, its command, stderr tail, likely
// causes, a fix). Errors it does not know pass through.
func (h *Host) Explain(server string, err error) error {
	srv := h.cfg.Server(server)
	if srv == nil || err == nil {
		return err
	}
	h.mu.Lock()
	var sc *stdio.Conn
	if c := h.conns[server]; c != nil {
		sc = c.stdio
	}
	h.mu.Unlock()
	return explain(srv, err, sc)
}

// Close ends every session and stops every server process.
func (h *Host) Close() error {
	h.mu.Lock()
	h.closed = true
	conns := h.conns
	h.conns = map[string]*conn{}
	h.mu.Unlock()
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.client.Close()
		}()
	}
	wg.Wait()
	return nil
}
