package host

import (
	"context"
	"fmt"

	"github.com/nexus-mcp/nexus/internal/config"
	webconsole "github.com/nexus-mcp/nexus/internal/console"
	"github.com/nexus-mcp/nexus/internal/engine"
	"github.com/nexus-mcp/nexus/internal/gateway"
	"github.com/nexus-mcp/nexus/internal/gateway/store"
	"github.com/nexus-mcp/nexus/internal/lock"
	"github.com/nexus-mcp/nexus/internal/registry"
)

// openConsole makes the web console the console block asks for (at its
// listen, or GatewayOptions.Console), its single sign-on at the gateway
// block's OAuth issuer; it listens in Run. Without a console, a replica
// that shares a session store still reports its status there, for the
// other replicas' consoles.
func (g *Gateway) openConsole(gw *config.Gateway) error {
	var o webconsole.Options
	if b := webconsole.Block(g.h.e.Config()); b != nil {
		o = *b
	}
	o.Listen = g.o.Console
	c := webconsole.Config{Servers: consoleServers{g.h.e, g.g}, Sessions: g.g, Feed: g.h.e.Feed(),
		Logger: g.log.Named("console"), Store: store.Name(g.o.SessionStore), Shared: g.st}
	if o.Listen == "" {
		if g.st == nil {
			return nil
		}
		r, err := webconsole.Report(c)
		if err != nil {
			return err
		}
		g.rep = r
		return nil
	}
	if o.OIDCClientID != "" && gw.OAuth != nil {
		l, err := gateway.NewLogin(gw, gw.PublicURL)
		if err != nil {
			return fmt.Errorf("the console's single sign-on: %w", err)
		}
		c.SSO = l
	}
	c.Options, c.Record, c.Continuations = o, g.h.e.RecordAction, g.g
	c.Lockfile = consoleLock{g.h.e, LockPath(g.h.Config())}
	k, err := webconsole.New(c)
	if err != nil {
		return err
	}
	g.con, g.conTLS = k, o.TLSCert != ""
	return nil
}

// serveConsole listens and serves the console until ctx ends; done is
// closed once it has stopped.
func (g *Gateway) serveConsole(ctx context.Context) (done <-chan struct{}, err error) {
	ln, err := g.con.Listen()
	if err != nil {
		return nil, err
	}
	scheme := "http"
	if g.conTLS {
		scheme = "https"
	}
	g.ready("console", fmt.Sprintf("%s://%s/", scheme, ln.Addr()))
	d := make(chan struct{})
	go func() {
		defer close(d)
		if err := g.con.Serve(ctx, ln); err != nil {
			g.log.Error("the console stopped", "error", err)
		}
	}()
	return d, nil
}

// consoleServers is the host as the console reads it, with the servers'
// state as the gateway's agents see it.
type consoleServers struct {
	*engine.Host
	g *gateway.Gateway
}

func (c consoleServers) Servers() []registry.Status { return c.g.Servers() }

// consoleLock is the host's lockfile as the console reads and changes it.
type consoleLock struct {
	h    *engine.Host
	path string
}

func (c consoleLock) Enforcing() bool { return c.h.Lockfile() != nil }
func (c consoleLock) Drift(ctx context.Context) ([]lock.Drift, error) {
	return c.h.Drift(ctx)
}
func (c consoleLock) Accept(ctx context.Context, server, tool, sha256 string) (lock.Drift, error) {
	return c.h.AcceptTool(ctx, c.path, server, tool, sha256)
}
