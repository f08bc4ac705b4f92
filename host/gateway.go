package host

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/config"
	webconsole "github.com/nexus-mcp/nexus/internal/console"
	"github.com/nexus-mcp/nexus/internal/gateway"
	"github.com/nexus-mcp/nexus/internal/gateway/store"
)

// Gateway serves a host to MCP clients, as `nexus serve` does: one catalog
// of every server the client's agent may see, each request through the
// chain, server-initiated requests back to the session that caused them.
// NewGateway sets it up from the config's gateway and console blocks;
// Run serves it as they say (streamable HTTP, or stdio, with the console
// and metrics beside it), or an embedder takes the pieces: Serve runs one
// session over any mcp.Conn, Handler is the streamable HTTP handler.
// Safe for concurrent use; Close ends every session and what NewGateway
// opened.
type Gateway struct {
	h      *Host
	g      *gateway.Gateway
	o      GatewayOptions // resolved against the config
	log    hclog.Logger
	con    *webconsole.Console // nil: no console
	conTLS bool                // the console serves HTTPS
	rep    io.Closer           // this replica's status for the others' consoles, without a console

	mu     sync.Mutex
	http   *gateway.HTTPHandler // nil without a listen address, until Handler
	st     store.Store          // the store replicas share; nil: none
	closed bool
}

// GatewayOptions tune a Gateway. The zero value serves what the config's
// gateway block says; a field set here wins over the block's option of
// the same name, as `nexus serve`'s flags do.
type GatewayOptions struct {
	Logger hclog.Logger
	// Version is the serverInfo version clients see (Version when empty).
	Version string
	// Agent every session acts as: over HTTP a request then needs no
	// token (without it, each request's token names its agent); over
	// stdio the agent the one session acts as (default CLIAgent).
	Agent string

	// Listen is the streamable HTTP listener's address (host:port; the
	// block's listen); with none, Run serves stdio.
	Listen string
	// Stdio serves stdio even where the block has a listen address: a
	// client starting `nexus serve --listen ""` from a project whose
	// nexus.hcl serves HTTP. Listen is then ignored.
	Stdio bool
	// TLSCert and TLSKey serve HTTPS (the block's tls { cert, key }):
	// both or neither.
	TLSCert, TLSKey string
	// Metrics is where Run serves Prometheus metrics (host:port, at
	// /metrics; the block's metrics). The host must count them: make its
	// Telemetry with OpenTelemetry(cfg, true).
	Metrics string
	// SessionStore is where replicas share sessions over HTTP: "memory"
	// (this process only) or redis://host:6379 (the block's
	// session_store).
	SessionStore string
	// Console is the web console's address (the console block's listen,
	// whose tokens or single sign-on it needs).
	Console string
	// Grace is how long calls in flight get to finish once Run's ctx
	// ends (the block's limits { shutdown_grace }; default 10 s); Drain
	// how long, at the end of stdio's input, the requests read get to be
	// answered (limits { drain_timeout }; default 30 s).
	Grace, Drain time.Duration

	// PageSize is how many items one page of a list holds (default 100).
	PageSize int
	// Instructions are sent to clients at initialize.
	Instructions string
	// Timeout bounds each request the gateway sends a client (sampling,
	// elicitation, roots; default 5 minutes: a person may be answering).
	Timeout time.Duration
	// MaxRequests bounds the requests one session serves at once
	// (default 64).
	MaxRequests int
	// Lazy connects servers on first use; by default an agent's first
	// session (and Run, for Agent) starts its servers whose start option
	// is eager, so its first list finds them up or starting.
	Lazy bool

	// Ready, if set, is told where Run serves each listener once it
	// listens: what is "metrics", "console" or "mcp" (streamable HTTP).
	Ready func(what, url string)
}

// Resolve is o with the config's gateway and console blocks under it:
// each field o leaves empty takes the block's value. NewGateway resolves
// its options itself; a caller resolves them first to know what will be
// served before it makes the host (a listen address, metrics to count).
func (o GatewayOptions) Resolve(cfg *Config) GatewayOptions {
	c := internalConfig(cfg)
	if gw := c.Gateway; gw != nil {
		o.Listen = cmp.Or(o.Listen, gw.Listen)
		o.TLSCert = cmp.Or(o.TLSCert, gw.TLSCert)
		o.TLSKey = cmp.Or(o.TLSKey, gw.TLSKey)
		o.Metrics = cmp.Or(o.Metrics, gw.Metrics)
		o.SessionStore = cmp.Or(o.SessionStore, gw.SessionStore)
		o.Grace = cmp.Or(o.Grace, gw.Limits.ShutdownGrace)
		o.Drain = cmp.Or(o.Drain, gw.Limits.DrainTimeout)
	}
	if b := webconsole.Block(c); b != nil {
		o.Console = cmp.Or(o.Console, b.Listen)
	}
	if o.Stdio {
		o.Listen = ""
	}
	return o
}

// LocalAgent makes agent, when cfg configures no agent of that name, the
// one local user a client serves itself over stdio (`nexus serve --agent
// NAME`): the built-in default permission, trusted, so each server's
// first use is confirmed through the client (ClientConfirmer). It
// says whether it added one, for the caller to warn; call it before New.
func LocalAgent(cfg *Config, agent string) bool {
	c := internalConfig(cfg)
	if agent == CLIAgent || c.Agent(agent) != nil {
		return false
	}
	c.Agents = append(c.Agents, &config.Agent{Name: agent, Permission: "trusted"})
	return true
}

// NewGateway makes a gateway in front of h as h's config's gateway block
// and o say: the agents' tokens, the OAuth resource server (the block's
// oauth: access tokens mapped to agents), the session store replicas
// share, the limits, the requestState key (the block's state_key, else
// NEXUS_STATE_KEY) and the console (the console block, with its single
// sign-on at the gateway's issuer). An error is the config's, said with
// its fix; nothing is left open. Its sessions connect upstream through
// hosts h.NewSession makes (one per agent that its sessions share, and
// one per session whose client answers server requests), so a server's
// notifications reach only the agent they concern.
func NewGateway(h *Host, o GatewayOptions) (*Gateway, error) {
	o = o.Resolve(h.Config())
	if o.Version == "" {
		o.Version = Version
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	g := &Gateway{h: h, o: o, log: o.Logger}
	gw := g.block()
	if err := gateway.CheckTLS(o.TLSCert, o.TLSKey); err != nil {
		return nil, hostErr(err)
	}
	key, err := stateKey(gw)
	if err != nil {
		return nil, hostErr(err)
	}
	metrics := h.e.Telemetry().Metrics()
	if o.Metrics != "" && metrics == nil {
		return nil, fmt.Errorf("metrics at %s: the host counts none; make its Options.Telemetry with OpenTelemetry(cfg, true)", o.Metrics)
	}
	if a := g.stdioAgent(); o.Listen == "" && !h.Agent(a) {
		return nil, fmt.Errorf("agent %q is not configured: add an agent %q block, or pass --agent with the name of one", a, a)
	}
	g.g = gateway.New(h.e, gateway.Options{Logger: o.Logger.Named("gateway"), Metrics: metrics, Eager: !o.Lazy, StateKey: key,
		Version: o.Version, PageSize: o.PageSize, Instructions: o.Instructions, Timeout: o.Timeout, MaxRequests: o.MaxRequests,
		ListWait: gw.ListWait, CacheTTL: gw.CacheTTL, InputTTL: gw.InputTTL,
		MaxUpstreams: gw.Limits.MaxBridgedUpstreams, MaxUpstreamsPerAgent: gw.Limits.MaxBridgedUpstreamsPerAgent})
	if err := g.open(gw); err != nil {
		g.Close()
		return nil, hostErr(err)
	}
	return g, nil
}

// open opens what the gateway serves over HTTP, with a listen address,
// and its console.
func (g *Gateway) open(gw *config.Gateway) error {
	if g.o.Listen != "" {
		if err := g.openHTTP(gw); err != nil {
			return err
		}
	}
	return g.openConsole(gw)
}

// openHTTP makes the HTTP handler and opens the store replicas share.
// Called with mu held, or before the gateway is returned.
func (g *Gateway) openHTTP(gw *config.Gateway) error {
	o := g.o
	ho := gateway.HTTPOptions{Agent: o.Agent, AllowedOrigins: gw.AllowedOrigins, AllowedHosts: gw.AllowedHosts, Required: gw.RequiredServers, Limits: gw.Limits}
	if u, err := url.Parse(gw.PublicURL); err == nil && u.Host != "" {
		ho.AllowedHosts = append(slices.Clip(ho.AllowedHosts), u.Host) // never into the config's array
	}
	if err := gateway.OAuth(gw, gw.PublicURL, &ho); err != nil {
		return err
	}
	if o.SessionStore != "" && o.SessionStore != "memory" {
		st, err := openStore(o.SessionStore, g.log)
		if err != nil {
			return err
		}
		g.st, ho.Store, ho.StoreName = st, st, store.Name(o.SessionStore)
	}
	hh, err := g.g.HTTP(ho)
	if err != nil {
		if g.st != nil {
			g.st.Close()
			g.st = nil
		}
		return err
	}
	g.http = hh
	return nil
}

// Handler is the streamable HTTP handler (/mcp, the legacy HTTP+SSE
// endpoints /sse and /messages, /healthz and /readyz), for an embedder's
// own server: made by NewGateway with a listen address, else on first
// call (its error is the config's: no agent has tokens, say). Run serves
// it itself. Once the gateway is closed it is ErrGatewayClosed.
func (g *Gateway) Handler() (http.Handler, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return nil, ErrGatewayClosed
	}
	if g.http == nil {
		if err := g.openHTTP(g.block()); err != nil {
			return nil, hostErr(err)
		}
	}
	return g.http, nil
}

// stdioAgent is whom Run's stdio session acts as.
func (g *Gateway) stdioAgent() string { return cmp.Or(g.o.Agent, CLIAgent) }

// block is the config's gateway block, or an empty one.
func (g *Gateway) block() *config.Gateway {
	if gw := g.h.e.Config().Gateway; gw != nil {
		return gw
	}
	return &config.Gateway{}
}

// Serve runs one session over conn as agent until the client ends it or
// ctx ends (mcp.StdioConn() for a client that started this process);
// ErrGatewayClosed once the gateway is closed.
func (g *Gateway) Serve(ctx context.Context, conn mcp.Conn, agent string) error {
	return hostErr(g.g.Serve(ctx, conn, agent))
}

// ErrGatewayClosed is what a Gateway's Handler and Serve return once it is
// closed (errors.Is).
var ErrGatewayClosed = gateway.ErrClosed

// ServeDrain is Serve for a conn whose input ends when the client is
// done (stdio): the requests read by then are answered, within drain,
// before it returns.
func (g *Gateway) ServeDrain(ctx context.Context, conn mcp.Conn, agent string, drain time.Duration) error {
	return hostErr(g.g.ServeDrain(ctx, conn, agent, drain))
}

// Warm starts agent's servers now, so its first list finds them up or
// starting (Run does it for GatewayOptions.Agent).
func (g *Gateway) Warm(agent string) { g.g.Warm(agent) }

// Sessions is how many sessions the gateway serves now.
func (g *Gateway) Sessions() int { return g.g.Sessions() }

// Run serves until ctx ends, as the options and the config say: with a
// listen address, streamable HTTP there (each request as its token's
// agent, or as Agent); without one, one session over this process's
// stdin and stdout as Agent, which ends with the input once what was
// asked is answered (within Drain). Beside either: the metrics and the
// console, if asked for; the lockfile beside the config followed, so
// that what another replica's console accepts (or `nexus lock` writes)
// is enforced here too; and, with a shared session store and no console,
// this replica's status for the others' consoles. A listener that
// cannot listen is the error; ctx's end and the input's are not.
func (g *Gateway) Run(ctx context.Context) error { return hostErr(g.run(ctx)) }

func (g *Gateway) run(ctx context.Context) error {
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	if g.o.Metrics != "" {
		addr, done, err := serveMetrics(ctx, g.o.Metrics, g.h.e.Telemetry().Metrics().Handler(), g.log.Error)
		if err != nil {
			return err
		}
		defer func() { stop(); <-done }()
		g.ready("metrics", "http://"+addr.String()+"/metrics")
	}
	watched := make(chan struct{})
	go func() { defer close(watched); g.h.e.WatchLock(ctx, LockPath(g.h.Config()), lockWatch) }()
	defer func() { stop(); <-watched }()
	if g.con != nil {
		done, err := g.serveConsole(ctx)
		if err != nil {
			return err
		}
		defer func() { stop(); <-done }()
	}
	g.mu.Lock()
	hh := g.http
	g.mu.Unlock()
	if g.o.Listen == "" {
		agent := g.stdioAgent()
		g.Warm(agent) // the client's first tools/list finds its servers up or starting
		g.log.Info("serving MCP on stdin and stdout", "agent", agent)
		// At the end of input, what was asked is answered first, as a
		// Unix filter does.
		err := g.g.ServeDrain(ctx, mcp.StdioConn(), agent, cmp.Or(g.o.Drain, 30*time.Second))
		if err != nil && ctx.Err() == nil && !errors.Is(err, io.EOF) && !errors.Is(err, mcp.ErrClosed) {
			return err
		}
		return nil
	}
	return hh.ListenAndServe(ctx, gateway.ListenOptions{
		Addr: g.o.Listen, TLSCert: g.o.TLSCert, TLSKey: g.o.TLSKey, Grace: g.o.Grace,
		Ready: func(addr net.Addr) {
			if g.o.Agent != "" {
				g.Warm(g.o.Agent) // once listening: a failed listen starts nothing
			}
			g.ready("mcp", gateway.URLFor(addr, g.o.TLSCert != ""))
		},
	})
}

func (g *Gateway) ready(what, url string) {
	if g.o.Ready != nil {
		g.o.Ready(what, url)
	}
}

// Close ends every session, the console and the session store's
// connection. The host is the caller's to close.
func (g *Gateway) Close() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return nil
	}
	g.closed = true
	if g.con != nil {
		g.con.Close()
	}
	if g.rep != nil {
		g.rep.Close()
	}
	if g.http != nil {
		g.http.Close()
	}
	err := g.g.Close()
	if g.st != nil {
		g.st.Close()
	}
	return hostErr(err)
}

// openStore opens the session store a URL names.
func openStore(u string, log hclog.Logger) (store.Store, error) {
	if strings.HasPrefix(u, "redis") || strings.HasPrefix(u, "unix://") {
		return store.NewRedis(store.RedisOptions{URL: u, Logger: log.Named("store")})
	}
	return store.Open(u)
}

// stateKey is the key sealing the requestState modern agents hold while
// a legacy server waits for their input: the gateway's state_key, else
// NEXUS_STATE_KEY, else nil (the gateway makes one and warns). The key
// is never shown.
func stateKey(gw *config.Gateway) ([]byte, error) {
	text, from := gw.StateKey, "the gateway's state_key"
	if text == "" {
		text, from = os.Getenv(config.StateKeyEnv), config.StateKeyEnv
	}
	if text == "" {
		return nil, nil
	}
	key, err := config.ParseStateKey(text)
	if err != nil {
		return nil, fmt.Errorf("%s: %v; make one with: openssl rand -hex 32", from, err)
	}
	return key, nil
}

// lockWatch is how often a gateway looks at its lockfile for a change
// another replica (or nexus lock) made: a stat, so cheap; soon enough
// that an accepted tool works everywhere within a couple of seconds.
const lockWatch = time.Second

// serveMetrics serves h at http://addr/metrics until ctx ends, then
// closes done. It returns once the listener is up, or with why it cannot
// be.
func serveMetrics(ctx context.Context, addr string, h http.Handler, logErr func(msg string, args ...any)) (net.Addr, <-chan struct{}, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("metrics: cannot listen on %s: %w (another process on the port? pick another with --metrics)", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", h)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second, MaxHeaderBytes: 64 << 10}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logErr("serving metrics failed", "addr", addr, "error", err)
		}
	}()
	done := make(chan struct{})
	go func() {
		defer close(done)
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}()
	return ln.Addr(), done, nil
}

// internalConfig is the config a Config holds: the one place host reads
// the blocks the gateway serves.
func internalConfig(cfg *Config) *config.Config {
	if cfg == nil {
		return nil
	}
	return cfg.c
}
