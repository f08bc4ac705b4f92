package main

import (
	"context"
	"fmt"

	"github.com/hashicorp/go-hclog"

	"github.com/nexus-mcp/nexus/host"
	"github.com/nexus-mcp/nexus/internal/audit"
	"github.com/nexus-mcp/nexus/internal/config"
	webconsole "github.com/nexus-mcp/nexus/internal/console"
	"github.com/nexus-mcp/nexus/internal/gateway"
	"github.com/nexus-mcp/nexus/internal/gateway/store"
	"github.com/nexus-mcp/nexus/internal/lock"
	"github.com/nexus-mcp/nexus/internal/registry"
)

// consoleOptions is the console block with --console over its listen; nil
// when neither asks for a console.
func consoleOptions(cfg *config.Config, addr string) *webconsole.Options {
	var o webconsole.Options
	if b := webconsole.Block(cfg); b != nil {
		o = *b
	}
	if addr != "" {
		o.Listen = addr
	}
	if o.Listen == "" {
		return nil
	}
	return &o
}

// startConsole serves the console until ctx ends or stop is called; stop
// waits for it to finish (serve may return, on a listener's error, before
// its ctx ends). Without a console, a replica that shares a session store
// still reports its status there, for the other replicas' consoles.
func (a *app) startConsole(ctx context.Context, o *webconsole.Options, feed *audit.Feed, h *host.Host, g *gateway.Gateway, sessionStore string, shared store.Store, log hclog.Logger) (stop func(), err error) {
	if o == nil {
		if shared == nil {
			return func() {}, nil
		}
		// No console here, but the others' show this replica.
		r, err := webconsole.Report(webconsole.Config{Servers: consoleServers{h, g}, Sessions: g, Feed: feed,
			Logger: log.Named("console"), Store: store.Name(sessionStore), Shared: shared})
		if err != nil {
			return nil, err
		}
		return func() { r.Close() }, nil
	}
	var sso webconsole.SSO
	if o.OIDCClientID != "" && a.cfg.Gateway != nil && a.cfg.Gateway.OAuth != nil {
		l, err := gateway.NewLogin(a.cfg.Gateway, a.cfg.Gateway.PublicURL)
		if err != nil {
			return nil, &exitError{exitUsage, fmt.Errorf("the console's single sign-on: %w", err)}
		}
		sso = l
	}
	k, err := webconsole.New(webconsole.Config{SSO: sso, Options: *o, Servers: consoleServers{h, g}, Sessions: g, Feed: feed, Record: h.RecordAction,
		Lockfile: consoleLock{h, host.LockPath(a.cfg)}, Continuations: g,
		Logger: log.Named("console"), Store: store.Name(sessionStore), Shared: shared})
	if err != nil {
		return nil, &exitError{exitUsage, err}
	}
	ln, err := k.Listen()
	if err != nil {
		k.Close()
		return nil, &exitError{exitConnection, err}
	}
	scheme := "http"
	if o.TLSCert != "" {
		scheme = "https"
	}
	fmt.Fprintf(a.stderr, "nexus: serving the console at %s://%s/\n", scheme, ln.Addr())
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := k.Serve(ctx, ln); err != nil {
			log.Error("the console stopped", "error", err)
		}
	}()
	return func() { cancel(); <-done; k.Close() }, nil
}

// consoleServers is the host as the console reads it, with the servers'
// state as the gateway's agents see it.
type consoleServers struct {
	*host.Host
	g *gateway.Gateway
}

func (c consoleServers) Servers() []registry.Status { return c.g.Servers() }

// consoleLock is the host's lockfile as the console reads and changes it.
type consoleLock struct {
	h    *host.Host
	path string
}

func (c consoleLock) Enforcing() bool { return c.h.Lockfile() != nil }
func (c consoleLock) Drift(ctx context.Context) ([]lock.Drift, error) {
	return c.h.Drift(ctx)
}
func (c consoleLock) Accept(ctx context.Context, server, tool, sha256 string) (lock.Drift, error) {
	return c.h.AcceptTool(ctx, c.path, server, tool, sha256)
}
