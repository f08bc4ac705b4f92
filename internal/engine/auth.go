package engine

import (
	"context"
	"fmt"
	"github.com/nexus-mcp/nexus/internal/registry"
	"io"
	"net"
	"net/url"
	"strings"
	"sync"

	"github.com/nexus-mcp/nexus/internal/auth"
	"github.com/nexus-mcp/nexus/internal/config"
	"github.com/nexus-mcp/nexus/internal/diag"
	"github.com/nexus-mcp/nexus/internal/explain"
)

// AuthOptions configure the OAuth clients of HTTP servers. The zero value
// stores tokens in ~/.nexus/tokens and shows authorization URLs on stderr
// (opening a browser where there is one).
type AuthOptions struct {
	// TokenDir replaces ~/.nexus/tokens.
	TokenDir string
	// NoStore keeps tokens in memory only.
	NoStore bool
	// Opener shows an authorization URL to the person; Out receives the
	// default Opener's instructions.
	Opener auth.Opener
	Out    io.Writer
}

// authClients holds one OAuth client per HTTP server, made on first use and
// kept for the host's life, so that tokens and registrations survive
// reconnects. Its zero value is ready.
type authClients struct {
	mu      sync.Mutex
	opts    AuthOptions
	clients map[string]*auth.Client
}

// NotHTTPServerError says an auth command named a server that is not
// reached over HTTP, where OAuth does not apply.
type NotHTTPServerError struct {
	Server string
	Type   string
}

func (e *NotHTTPServerError) Error() string {
	return fmt.Sprintf("server %q is a %s server; OAuth applies to http and sse servers only", e.Server, e.Type)
}

// AuthLogin authorizes Nexus at server now, without waiting for a 401: it
// runs discovery and the configured grant (for people: a browser login)
// and stores the token.
func (h *Host) AuthLogin(ctx context.Context, server string) error {
	c, srv, err := h.authFor(server)
	if err != nil {
		return err
	}
	if err := c.Login(ctx); err != nil {
		return explain.Server(srv, err, nil)
	}
	return nil
}

// AuthLogout forgets server's token (revoking it where the authorization
// server allows) and any client registered for it.
func (h *Host) AuthLogout(ctx context.Context, server string) error {
	c, srv, err := h.authFor(server)
	if err != nil {
		return err
	}
	if err := c.Logout(ctx); err != nil {
		return explain.Server(srv, err, nil)
	}
	return nil
}

// AuthStatus reports what is stored for server, without secrets.
func (h *Host) AuthStatus(server string) (auth.Status, error) {
	c, _, err := h.authFor(server)
	if err != nil {
		return auth.Status{}, err
	}
	return c.Status(), nil
}

// authFor is the OAuth client of a named HTTP server, for the auth
// commands: unlike a connection, they need one even when the URL is plain
// http to a remote host, where auth.New explains why that cannot work.
func (h *Host) authFor(name string) (*auth.Client, *config.Server, error) {
	srv := h.cfg.Server(name)
	if srv == nil {
		var known []string
		for _, s := range h.cfg.Servers {
			known = append(known, s.Name)
		}
		return nil, nil, &registry.UnknownServerError{Name: name, Known: known}
	}
	if srv.Type != config.TypeHTTP && srv.Type != config.TypeSSE {
		return nil, srv, &NotHTTPServerError{Server: srv.Name, Type: srv.Type}
	}
	c, err := h.authClient(srv, true)
	return c, srv, err
}

// authClient returns the server's OAuth client, making it on first use.
// Every HTTP server gets one when its URL is https or on loopback (the
// only places OAuth tokens may go), so that a 401 starts discovery even
// without an oauth block; required reports why there is none otherwise.
// (nil, nil) means the server is reached without OAuth.
func (h *Host) authClient(srv *config.Server, required bool) (*auth.Client, error) {
	a := &h.oauth
	a.mu.Lock()
	defer a.mu.Unlock()
	if c := a.clients[srv.Name]; c != nil {
		return c, nil
	}
	if srv.OAuth == nil && !required && !oauthCapable(srv.URL) {
		return nil, nil
	}
	cfg, err := authConfig(srv, a.opts)
	if err != nil {
		return nil, err
	}
	cfg.Logger = h.log.Named(srv.Name)
	c, err := auth.New(cfg)
	if err != nil {
		return nil, err
	}
	if a.clients == nil {
		a.clients = map[string]*auth.Client{}
	}
	a.clients[srv.Name] = c
	return c, nil
}

// oauthCapable: tokens only ever go to https URLs and to loopback, and
// never to a URL with user information: that server authenticates with
// the credentials in it (basic authentication, which the transport sends),
// and an OAuth resource URL has none.
func oauthCapable(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil || u.User != nil {
		return false
	}
	if u.Scheme == "https" {
		return true
	}
	h := u.Hostname()
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return u.Scheme == "http" && ip != nil && ip.IsLoopback()
}

// authConfig maps a server's config (its oauth block, when it has one) to
// the OAuth client's.
func authConfig(srv *config.Server, o AuthOptions) (auth.Config, error) {
	cfg := auth.Config{
		ServerName:           srv.Name,
		ServerURL:            srv.URL,
		AllowPrivateNetworks: srv.HTTP.AllowPrivateNetworks,
		TokenDir:             o.TokenDir,
		NoStore:              o.NoStore,
		Opener:               o.Opener,
		Out:                  o.Out,
		Diag:                 diag.Context{Server: srv.Name, Source: srv.Source, URL: srv.URL},
	}
	oa := srv.OAuth
	if oa == nil {
		return cfg, nil
	}
	if err := oa.Apply(&cfg); err != nil {
		return cfg, &auth.Error{Kind: auth.ErrConfig, Server: srv.Name, URL: srv.URL, Op: "read the oauth block", Err: err, Diag: cfg.Diag}
	}
	return cfg, nil
}
