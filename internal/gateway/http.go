package gateway

import (
	"cmp"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/config"
	"github.com/nexus-mcp/nexus/internal/gateway/store"
	"github.com/nexus-mcp/nexus/internal/transport/httpserver"
)

// Paths the HTTP listener serves.
const (
	EndpointPath = "/mcp"      // streamable HTTP
	SSEPath      = "/sse"      // legacy HTTP+SSE: the stream
	MessagesPath = "/messages" // legacy HTTP+SSE: where messages are POSTed
	HealthPath   = "/healthz"  // alive
	ReadyPath    = "/readyz"   // config loaded, session store and required servers reachable
)

// Verifier maps an OAuth access token to an agent (the gateway's resource
// server mode). A refusal it returns as an *httpserver.AuthError keeps its
// status and headers.
type Verifier interface {
	Agent(ctx context.Context, token string) (string, error)
}

// HTTPOptions configure the gateway's HTTP listener.
type HTTPOptions struct {
	// Agent, if set, serves every request as this agent, with no token.
	Agent string
	// Verifier accepts OAuth access tokens besides the agents' tokens;
	// Challenge is the WWW-Authenticate value sent with a 401 (for OAuth:
	// Bearer resource_metadata="...").
	Verifier  Verifier
	Challenge string
	// Metadata, if set, is served at MetadataPath (RFC 9728 document).
	Metadata     http.Handler
	MetadataPath string
	// AllowedOrigins are browser origins allowed besides loopback ones.
	AllowedOrigins []string
	// AllowedHosts are the Host values a request without Origin may name
	// besides IP addresses and localhost (see checkHost): "name" (any port) or
	// "name:port". host.NewGateway adds the public URL's host.
	AllowedHosts []string
	// Required servers must be reachable for /readyz to say ready.
	Required []string
	Limits   config.GatewayLimits
	// Store is the session store replicas share: any replica serves any
	// request of a session another opened (see httpserver.Shared), and
	// /readyz says not ready while it does not answer. nil: sessions live
	// in this process only.
	Store store.Store
	// StoreName is the store as people know it (its URL without a
	// password), for /readyz.
	StoreName string
}

// HTTPHandler is the gateway's HTTP listener: /mcp, the legacy endpoints,
// /healthz and /readyz. Close ends every session.
type HTTPHandler struct {
	g      *Gateway
	mux    *http.ServeMux
	mcp    *httpserver.Handler
	tokens []tokenEntry
	opts   HTTPOptions
	shared *store.Shared // nil without a store

	mu     sync.Mutex
	states map[string]*session // sessions whose state is in the store, by HTTP session id

	listen atomic.Pointer[netip.AddrPort] // where Serve listens; nil before
}

type tokenEntry struct {
	sum   [32]byte
	agent string
}

// HTTP makes the gateway's HTTP handler. Agents' tokens come from the
// config's agent blocks; only their hashes are kept.
func (g *Gateway) HTTP(o HTTPOptions) (*HTTPHandler, error) {
	hh := &HTTPHandler{g: g, mux: http.NewServeMux(), opts: o}
	for _, a := range g.h.Config().Agents {
		for _, t := range a.Tokens {
			if t == "" {
				return nil, fmt.Errorf("agent %q has an empty token; set the variable it comes from, or remove it", a.Name)
			}
			hh.tokens = append(hh.tokens, tokenEntry{sha256.Sum256([]byte(t)), a.Name})
		}
	}
	if o.Agent != "" && !g.h.Agent(o.Agent) {
		return nil, fmt.Errorf("agent %q is not configured: add an agent %q block, or pass the name of one that exists", o.Agent, o.Agent)
	}
	if o.Agent == "" && len(hh.tokens) == 0 && o.Verifier == nil {
		return nil, errors.New("nobody could use the gateway: no agent block has tokens, no oauth block is configured and no --agent was given; " +
			"add tokens = [var.some_token] to an agent block, or pass --agent NAME to serve every request as that agent")
	}
	origins := map[string]bool{}
	for _, o := range o.AllowedOrigins {
		origins[strings.ToLower(strings.TrimRight(o, "/"))] = true
	}
	l := o.Limits
	var sh httpserver.Shared
	if o.Store != nil {
		idle := l.SessionIdleTimeout
		if idle <= 0 {
			idle = 30 * time.Minute
		}
		hh.shared = store.NewShared(o.Store, "", idle)
		sh = hh.shared
		g.log.Info("sessions are shared with the other replicas through the session store", "replica", hh.shared.Replica(), "store", o.StoreName)
		// A retry of a call waiting for its input on another replica
		// reaches it over the store's bus (relay.go).
		g.br.startRelay(o.Store)
		if g.ownKey {
			g.log.Warn("no requestState key is configured (gateway state_key, or " + config.StateKeyEnv + "): this replica made its own, so another replica cannot take up a call waiting for a client's input here; set one shared by the replicas")
		}
	}
	g.setOwnMax(l.MaxUpstreamSessionsPerAgent)
	// httpserver's default per-principal cap, unless the config sets one.
	g.setModernMax(cmp.Or(l.MaxRequestsPerAgent, 1024))
	// Serving everyone as one agent, an agent's share is the whole (the
	// handler lowers a share to its global cap).
	single := func(n int) int {
		if n == 0 && o.Agent != "" {
			return math.MaxInt32
		}
		return n
	}
	hh.mcp = httpserver.New(hh.serve, httpserver.Options{
		Shared:                sh,
		Changed:               hh.changed,
		Logger:                g.log.Named("http"),
		MaxBodyBytes:          l.MaxBodyBytes,
		MaxSessions:           l.MaxSessions,
		MaxRequests:           l.MaxRequests,
		MaxRequestsPerSession: l.MaxRequestsPerSession,
		ReplayEvents:          l.MaxSSEEvents,
		IdleTimeout:           l.SessionIdleTimeout,
		AllowOrigin: func(origin string) bool {
			return httpserver.LoopbackOrigin(origin) || origins[strings.ToLower(origin)]
		},
		CheckHost:      hh.checkHost,
		BodyTimeout:    l.BodyTimeout,
		MinBodyRate:    l.MinBodyRate,
		Authenticate:   hh.authenticate,
		Raise:          raise,
		LegacyEndpoint: MessagesPath,

		// An agent is the principal: each has its own share (see the
		// package doc).
		MaxSessionsPerPrincipal:      single(l.MaxSessionsPerAgent),
		MaxRequestsPerPrincipal:      single(l.MaxRequestsPerAgent),
		MaxInflightBytes:             int64(l.MaxInflightBytes),
		MaxInflightBytesPerPrincipal: int64(single(l.MaxInflightBytesPerAgent)),
	})
	hh.mux.Handle(EndpointPath, hh.mcp)
	hh.mux.HandleFunc(SSEPath, hh.mcp.LegacySSE)
	hh.mux.HandleFunc(MessagesPath, hh.mcp.LegacyMessage)
	hh.mux.HandleFunc(HealthPath, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"status":"alive"}` + "\n"))
	})
	hh.mux.HandleFunc(ReadyPath, hh.ready)
	if o.Metadata != nil && o.MetadataPath != "" {
		hh.mux.Handle(o.MetadataPath, o.Metadata)
	}
	hh.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		httpserver.WriteError(w, http.StatusNotFound, mcp.CodeInvalidRequest, "not found: the Nexus gateway's MCP endpoint is "+EndpointPath+" (legacy HTTP+SSE clients: "+SSEPath+")")
	})
	return hh, nil
}

// raise says how to raise a gateway limit.
func raise(limit string) string {
	return "raise it in the config: gateway { limits { " + limit + " = ... } }"
}

func (hh *HTTPHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) { hh.mux.ServeHTTP(w, r) }

// Close ends every HTTP session.
func (hh *HTTPHandler) Close() error { return hh.mcp.Close() }

// InFlight is the number of requests in progress.
func (hh *HTTPHandler) InFlight() int { return hh.mcp.InFlight() }

func (hh *HTTPHandler) serve(ctx context.Context, conn mcp.Conn, s *httpserver.Session) error {
	if s.Modern {
		// Stateless: no session store, whatever the replicas share.
		return hh.g.serveModern(ctx, conn, s.Principal)
	}
	if hh.shared == nil || s.Legacy {
		return hh.g.Serve(ctx, conn, s.Principal)
	}
	st := &stored{st: hh.shared.Store, id: s.ID, ttl: hh.shared.TTL, announce: hh.mcp.Announce}
	return hh.g.serve(ctx, conn, s.Principal, st, s.Restored, func(gs *session) func() {
		hh.mu.Lock()
		if hh.states == nil {
			hh.states = map[string]*session{}
		}
		hh.states[s.ID] = gs
		hh.mu.Unlock()
		return func() {
			hh.mu.Lock()
			if hh.states[s.ID] == gs {
				delete(hh.states, s.ID)
			}
			hh.mu.Unlock()
		}
	}, 0)
}

// changed reloads a session whose state another replica changed.
func (hh *HTTPHandler) changed(id string) {
	hh.mu.Lock()
	s := hh.states[id]
	hh.mu.Unlock()
	if s != nil {
		go s.reload()
	}
}

// authenticate names the agent a request acts as: the --agent, the agent
// whose token it carries, or the one its OAuth access token maps to.
func (hh *HTTPHandler) authenticate(r *http.Request) (string, error) {
	if hh.opts.Agent != "" {
		return hh.opts.Agent, nil
	}
	challenge := hh.opts.Challenge
	if challenge == "" {
		challenge = `Bearer realm="nexus"`
	}
	unauthorized := func(msg string) error {
		return &httpserver.AuthError{Status: http.StatusUnauthorized, Header: http.Header{"Www-Authenticate": {challenge}}, Message: msg}
	}
	authz := r.Header.Get("Authorization")
	if authz == "" {
		return "", unauthorized("this gateway needs Authorization: Bearer TOKEN (a token from an agent block's tokens, or an OAuth access token)")
	}
	scheme, token, ok := strings.Cut(authz, " ")
	token = strings.TrimSpace(token)
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
		return "", unauthorized("the Authorization header must be Bearer TOKEN")
	}
	if len(token) > 8<<10 {
		return "", unauthorized("the bearer token is over 8 KiB")
	}
	sum := sha256.Sum256([]byte(token))
	agent := ""
	for _, t := range hh.tokens {
		// Every entry is compared, so the time taken says nothing of which.
		if subtle.ConstantTimeCompare(sum[:], t.sum[:]) == 1 {
			agent = t.agent
		}
	}
	if agent != "" {
		return agent, nil
	}
	if hh.opts.Verifier != nil {
		a, err := hh.opts.Verifier.Agent(r.Context(), token)
		if err != nil {
			var ae *httpserver.AuthError
			if errors.As(err, &ae) {
				return "", ae
			}
			return "", unauthorized("the access token was refused: " + err.Error())
		}
		if !hh.g.h.Agent(a) {
			return "", &httpserver.AuthError{Status: http.StatusForbidden, Message: fmt.Sprintf("the token maps to agent %q, which is not configured", a)}
		}
		return a, nil
	}
	return "", unauthorized("unknown bearer token")
}

// checkHost admits the Host of a request without Origin. DNS rebinding
// makes a browser send a name the attacker controls, resolved to this
// gateway; so a name must be one the gateway is known by: a host of
// AllowedHosts (with its port, or any), or localhost when the gateway
// listens on loopback or every interface (or before Serve says where).
// An IP address is no such name and passes, as does any port: proxies
// forward their own (nginx's $host drops it), and the name is what
// rebinding cannot fake.
func (hh *HTTPHandler) checkHost(host string) error {
	name := host
	if h, _, err := net.SplitHostPort(host); err == nil {
		name = h
	}
	name = strings.ToLower(strings.Trim(name, "[]"))
	if _, err := netip.ParseAddr(name); err == nil {
		return nil
	}
	for _, a := range hh.opts.AllowedHosts {
		a = strings.ToLower(a)
		if a == strings.ToLower(host) || strings.Trim(a, "[]") == name {
			return nil
		}
	}
	ln := hh.listen.Load()
	local := ln == nil || ln.Addr().Unmap().IsLoopback() || ln.Addr().IsUnspecified()
	if name == "localhost" && local {
		return nil
	}
	where := "this gateway"
	if ln != nil {
		where = "this gateway (listening on " + ln.String() + ")"
	}
	return fmt.Errorf("the Host %q is not a name %s is known by: a request without Origin must name it by an IP address, by localhost when it listens on loopback, "+
		"or by a host in gateway { allowed_hosts = [...] } or public_url. This protects against DNS rebinding; if clients reach the gateway by that name, add it to allowed_hosts", host, where)
}

// ready answers 200 when every required server is reachable, else 503
// naming those that are not.
func (hh *HTTPHandler) ready(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	type failure struct {
		Server string `json:"server,omitempty"`
		Store  string `json:"store,omitempty"`
		Error  string `json:"error"`
	}
	var failed []failure
	if st := hh.opts.Store; st != nil {
		sctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		err := st.Ping(sctx)
		cancel()
		if err != nil {
			failed = append(failed, failure{Store: hh.opts.StoreName, Error: oneLine(err)})
		}
	}
	for _, name := range hh.opts.Required {
		c, err := hh.g.h.Client(ctx, "", name)
		if err == nil {
			_, err = c.Ping(ctx)
		}
		if err != nil {
			failed = append(failed, failure{Server: name, Error: oneLine(err)})
		}
	}
	w.Header().Set("Content-Type", "application/json")
	down := hh.g.notStarted()
	if len(failed) > 0 {
		w.WriteHeader(http.StatusServiceUnavailable)
		json.NewEncoder(w).Encode(map[string]any{"status": "not ready", "failed": failed, "servers_down": down})
		return
	}
	out := map[string]any{"status": "ready", "sessions": hh.g.Sessions()}
	if len(down) > 0 {
		// Not required, so still ready; but say so, or a server that
		// cannot start is noticed only as tools that never appear.
		out["servers_down"] = down
	}
	json.NewEncoder(w).Encode(out)
}

// ListenOptions configure ListenAndServe.
type ListenOptions struct {
	Addr            string
	TLSCert, TLSKey string
	// Grace is how long in-flight requests get once ctx ends (default 10 s).
	Grace time.Duration
	// Ready, if set, is called with the listener's address once it listens.
	Ready func(addr net.Addr)
}

// ListenAndServe serves hh on o.Addr until ctx ends, then stops accepting,
// lets requests in flight finish within o.Grace, ends every session and
// returns nil.
func (hh *HTTPHandler) ListenAndServe(ctx context.Context, o ListenOptions) error {
	ln, err := net.Listen("tcp", o.Addr)
	if err != nil {
		fix := "give --listen (or the gateway block's listen) as host:port, for example 127.0.0.1:8750"
		if errors.Is(err, syscall.EADDRINUSE) {
			fix = "another process is using the port: stop it, or pick another port with --listen"
		} else if errors.Is(err, syscall.EADDRNOTAVAIL) {
			fix = "this machine has no such address: use one of its own, or 127.0.0.1"
		}
		return fmt.Errorf("cannot listen on %s: %w; %s", o.Addr, err, fix)
	}
	return hh.Serve(ctx, ln, o)
}

// Serve is ListenAndServe on a listener the caller made.
func (hh *HTTPHandler) Serve(ctx context.Context, ln net.Listener, o ListenOptions) error {
	if o.Grace <= 0 {
		o.Grace = 10 * time.Second
	}
	srv := &http.Server{
		Handler:           hh,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          hh.g.log.StandardLogger(nil),
	}
	tlsOn := o.TLSCert != "" || o.TLSKey != ""
	if err := CheckTLS(o.TLSCert, o.TLSKey); err != nil {
		ln.Close()
		return err
	}
	if tlsOn {
		cert, err := tls.LoadX509KeyPair(o.TLSCert, o.TLSKey)
		if err != nil {
			ln.Close()
			return fmt.Errorf("loading the TLS certificate %s and key %s: %w", o.TLSCert, o.TLSKey, err)
		}
		srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
		ln = tls.NewListener(ln, srv.TLSConfig)
	}
	if !IsLoopback(ln.Addr()) {
		if hh.opts.Agent != "" {
			hh.g.log.Warn("SERVING EVERY REQUEST AS ONE AGENT BEYOND LOOPBACK: anyone who can reach this address acts as that agent, with no token",
				"addr", ln.Addr().String(), "agent", hh.opts.Agent)
		}
		if !tlsOn {
			hh.g.log.Warn("listening beyond loopback without TLS: tokens travel in the clear; set gateway { tls { cert = ... key = ... } }", "addr", ln.Addr().String())
		}
	}
	if ap, err := netip.ParseAddrPort(ln.Addr().String()); err == nil {
		hh.listen.Store(&ap)
	}
	if o.Ready != nil {
		o.Ready(ln.Addr())
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		hh.Close()
		return err
	case <-ctx.Done():
	}
	// Stop accepting, give requests in flight the grace period, then end
	// the sessions (their streams would keep Shutdown waiting).
	sctx, cancel := context.WithTimeout(context.Background(), o.Grace)
	defer cancel()
	shut := make(chan struct{})
	go func() { srv.Shutdown(sctx); close(shut) }()
	tick := time.NewTicker(20 * time.Millisecond)
	for hh.InFlight() > 0 && sctx.Err() == nil {
		<-tick.C
	}
	tick.Stop()
	hh.Close()
	select {
	case <-shut:
	case <-sctx.Done():
	}
	srv.Close()
	<-errc
	return nil
}

// CheckTLS says what is missing when a certificate is given without its
// key or a key without its certificate; both or neither is no error.
func CheckTLS(cert, key string) error {
	if (cert == "") == (key == "") {
		return nil
	}
	given, missing := "certificate "+cert, "key"
	if cert == "" {
		given, missing = "key "+key, "certificate"
	}
	return fmt.Errorf("TLS has a %s but no %s: HTTPS needs both; set the gateway's tls { cert, key } (or --tls-cert and --tls-key), or neither to serve plain HTTP", given, missing)
}

// IsLoopback reports whether addr is a loopback address.
func IsLoopback(addr net.Addr) bool {
	ap, err := netip.ParseAddrPort(addr.String())
	return err == nil && ap.Addr().Unmap().IsLoopback()
}

// URLFor is the MCP endpoint's URL on a listener's address.
func URLFor(addr net.Addr, tls bool) string {
	u := url.URL{Scheme: "http", Host: addr.String(), Path: EndpointPath}
	if tls {
		u.Scheme = "https"
	}
	return u.String()
}
