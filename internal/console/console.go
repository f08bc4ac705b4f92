package console

import (
	"context"
	"crypto/tls"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nexus-mcp/nexus/internal/audit"
	"github.com/nexus-mcp/nexus/internal/gateway"
	"github.com/nexus-mcp/nexus/internal/gateway/store"
	"github.com/nexus-mcp/nexus/internal/registry"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Servers is what the console reads of the engine's servers.
type Servers interface {
	// Servers is every configured server's state, sorted by name.
	Servers() []registry.Status
	// Explain turns a server's error into the report with its fix
	// (a *diag.Report), as the CLI shows it.
	Explain(server string, err error) error
	// ExposedName is the name agents see a server's tool by.
	ExposedName(server, tool string) string
}

// Sessions is what the console reads of the gateway's downstream
// sessions and does to them (*gateway.Gateway).
type Sessions interface {
	List() []gateway.SessionInfo
	End(id string) bool
}

// Continuations is what the console reads of the gateway's calls that
// wait for their agents' input (MRTR), and ends (*gateway.Gateway).
type Continuations interface {
	Continuations() []gateway.Continuation
	EndContinuation(id string) bool
}

// Config is what a Console serves.
type Config struct {
	Options
	Servers  Servers
	Sessions Sessions // nil: no gateway sessions to show
	Lockfile Lockfile // nil: no lockfile to show
	// Continuations are the calls waiting for their agents' input (the
	// bridge's); nil: none to show.
	Continuations Continuations
	// SSO is the gateway's OAuth issuer, for the OpenID Connect login
	// (Options.OIDCClientID); nil: tokens only.
	SSO SSO
	// Feed is where decisions come from, as the audit log gets them.
	Feed *audit.Feed
	// Record writes what a person did in the console to the audit log; an
	// error refuses the action (a fail-closed log that cannot record it).
	Record func(audit.Record) error
	Logger hclog.Logger
	// Replica names this process among the gateway's replicas (default:
	// its host name and pid); Store names the session store they share
	// ("memory": none), as pages show it.
	Replica, Store string
	// Shared is that store, when replicas share one: the console reports
	// this replica's status there every ReportEvery (default 2 s), and
	// the overview shows every live replica's (replicas.go). nil: this
	// replica alone.
	Shared      store.Store
	ReportEvery time.Duration
	// Keep is how many recent decisions are kept for their explain trace
	// (default 2000); Buffer how many a live page may fall behind before
	// it loses some (default 256).
	Keep, Buffer int
}

// Console is the web console: an http.Handler on a listener of its own.
type Console struct {
	c     Config
	log   hclog.Logger
	pages map[string]*template.Template
	mux   *http.ServeMux

	logins   logins
	recent   *recent
	rejected rejections
	pending  pendingLogins
	sub      *audit.Sub
	done     chan struct{}
	decoded  decodedStatuses // the other replicas' (replicas.go)
	stop     chan struct{}   // closed by Close: the reports stop
	reported chan struct{}   // closed when they have
	once     sync.Once
}

// New makes a console and starts keeping the feed's decisions; Close
// stops it.
func New(c Config) (*Console, error) {
	if len(c.Tokens) == 0 && len(c.ReadOnly) == 0 && c.OIDCClientID == "" {
		return nil, errors.New("the console has no tokens, so nobody could log in: add console { tokens = [var.console_admin] } (a sensitive variable holding a long random value) to the config, or its oidc_client_id to log in at the gateway's OAuth issuer")
	}
	if c.OIDCClientID != "" {
		switch {
		case c.RoleClaim == "" || len(c.AdminRoles)+len(c.ReadOnlyRoles) == 0:
			return nil, errors.New("the console's oidc_client_id needs role_claim (the ID token's claim that holds a person's console role) and admin_roles or readonly_roles (its values that make an admin or a read-only login): nobody gets a role by default")
		case c.SSO == nil:
			return nil, errors.New("the console's oidc_client_id needs the gateway's OAuth issuer: add gateway { oauth { issuer = \"https://...\" } }")
		}
	}
	c.defaults()
	pages, err := parsePages()
	if err != nil {
		return nil, err
	}
	k := c.start()
	k.pages = pages
	k.logins.init()
	k.routes()
	return k, nil
}

// Report reports this replica's status to the session store the
// replicas share (c.Shared), as a console does, for a replica that
// serves no console: the other replicas' consoles show it. It needs
// c.Servers, c.Sessions and c.Feed (whose decisions make the calls per
// minute); Close stops it and removes the status from the store.
func Report(c Config) (io.Closer, error) {
	if c.Shared == nil || c.Servers == nil {
		return nil, errors.New("console.Report needs the session store the replicas share and the servers to report")
	}
	c.defaults()
	return c.start(), nil
}

func (c *Config) defaults() {
	if c.Logger == nil {
		c.Logger = hclog.NewNullLogger()
	}
	if c.Feed == nil {
		c.Feed = audit.NewFeed()
	}
	if c.Keep <= 0 {
		c.Keep = 2000
	}
	if c.Buffer <= 0 {
		c.Buffer = 256
	}
	if c.Record == nil {
		c.Record = func(audit.Record) error { return nil }
	}
	if c.ReportEvery <= 0 {
		c.ReportEvery = 2 * time.Second
	}
	if c.Replica == "" {
		h, _ := os.Hostname()
		c.Replica = fmt.Sprintf("%s (pid %d)", h, os.Getpid())
	}
}

// start keeps the feed's decisions and, with a store, reports the
// replica's status; Close stops both.
func (c Config) start() *Console {
	k := &Console{c: c, log: c.Logger, recent: newRecent(c.Keep), done: make(chan struct{}),
		stop: make(chan struct{}), reported: make(chan struct{})}
	k.sub = c.Feed.Subscribe(4096)
	go k.keep()
	if c.Shared != nil {
		go k.reportLoop()
	} else {
		close(k.reported)
	}
	return k
}

// keep records the feed's decisions for explain traces and rates, on a
// tick (as the stream does): a decision wakes nobody.
func (k *Console) keep() {
	defer close(k.done)
	tick := time.NewTicker(streamTick)
	defer tick.Stop()
	for range tick.C {
		for {
			select {
			case d, ok := <-k.sub.C:
				if !ok {
					return
				}
				k.recent.add(d)
				continue
			default:
			}
			break
		}
	}
}

// Close stops keeping decisions, and removes this replica's status from
// the session store.
func (k *Console) Close() error {
	k.once.Do(func() {
		close(k.stop)
		k.sub.Close()
		<-k.done
		<-k.reported
	})
	return nil
}

func (k *Console) routes() {
	m := http.NewServeMux()
	static, _ := fs.Sub(staticFS, "static")
	m.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	m.HandleFunc("GET /login", k.loginPage)
	m.HandleFunc("POST /login", k.login)
	m.HandleFunc("GET /login/oidc", k.oidcStart)
	m.HandleFunc("GET /login/callback", k.oidcCallback)
	m.HandleFunc("POST /logout", k.change(roleRead, k.logout))
	m.HandleFunc("GET /{$}", k.page(k.overview))
	m.HandleFunc("GET /decisions", k.page(k.decisions))
	m.HandleFunc("GET /decisions/stream", k.auth(k.stream))
	m.HandleFunc("GET /decisions/{id}", k.page(k.explain))
	m.HandleFunc("GET /sessions", k.page(k.sessions))
	m.HandleFunc("POST /sessions/end", k.change(roleAdmin, k.endSession))
	m.HandleFunc("POST /sessions/continuation/end", k.change(roleAdmin, k.endContinuation))
	m.HandleFunc("GET /lockfile", k.page(k.lockfile))
	m.HandleFunc("POST /lockfile/accept", k.change(roleAdmin, k.acceptDrift))
	m.HandleFunc("POST /lockfile/reject", k.change(roleAdmin, k.rejectDrift))
	k.mux = m
}

// ServeHTTP serves the console, with the headers every answer carries.
func (k *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	// Scripts and styles come from the console alone (no inline script,
	// nothing from the internet); nothing may frame it.
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin") // not no-referrer: with it, a browser sends Origin: null on the console's own forms
	h.Set("Cache-Control", "no-store")
	h.Set("X-Frame-Options", "DENY")
	if !k.hostAllowed(r.Host) {
		http.Error(w, "console: this Host header is not the console's address (a DNS rebinding attempt?); open the console by the address it listens on", http.StatusMisdirectedRequest)
		return
	}
	k.mux.ServeHTTP(w, r)
}

// hostAllowed refuses, on a loopback console, a Host that names another
// machine: a page on another site that rebinds its name to 127.0.0.1
// must not reach the console.
func (k *Console) hostAllowed(host string) bool {
	if !Loopback(k.c.Listen) {
		return true
	}
	h, _, err := net.SplitHostPort(host)
	if err != nil {
		h = host
	}
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// secure says whether the session cookie carries Secure: always, but on
// a plain-HTTP loopback console, where a browser would not send it back.
func (k *Console) secure() bool {
	return k.c.TLSCert != "" || !Loopback(k.c.Listen)
}

// Listen checks the console's address and opens its listener: plain HTTP
// only on loopback.
func (k *Console) Listen() (net.Listener, error) {
	if k.c.Listen == "" {
		return nil, errors.New("the console has no address: pass --console 127.0.0.1:8760 or set console { listen = \"...\" }")
	}
	if !Loopback(k.c.Listen) && k.c.TLSCert == "" {
		return nil, fmt.Errorf("console listen %q is not a loopback address and the console block has no tls_cert and tls_key: its login cookie is Secure, and a browser sends it back over HTTPS only; set tls_cert and tls_key, or listen on 127.0.0.1", k.c.Listen)
	}
	ln, err := net.Listen("tcp", k.c.Listen)
	if err != nil {
		return nil, fmt.Errorf("the console cannot listen on %s: %w (is another process using the port?)", k.c.Listen, err)
	}
	if k.c.TLSCert != "" {
		cert, err := tls.LoadX509KeyPair(k.c.TLSCert, k.c.TLSKey)
		if err != nil {
			ln.Close()
			return nil, fmt.Errorf("console tls_cert %s and tls_key %s: %w", k.c.TLSCert, k.c.TLSKey, err)
		}
		ln = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	}
	return ln, nil
}

// Serve serves the console on ln until ctx ends; then it closes the
// streams and waits a little for answers in flight.
func (k *Console) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{Handler: k, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second, IdleTimeout: 2 * time.Minute,
		MaxHeaderBytes: 64 << 10, BaseContext: func(net.Listener) context.Context { return ctx }}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	srv.Shutdown(sctx)
	srv.Close()
	<-errc
	return nil
}
