package engine

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/config"
	"github.com/nexus-mcp/nexus/internal/explain"
	httptransport "github.com/nexus-mcp/nexus/internal/transport/http"
	"github.com/nexus-mcp/nexus/internal/transport/stdio"
)

// dial opens a session to srv over its configured transport.
func (h *Host) dial(ctx context.Context, srv *config.Server) (*mcp.Client, error) {
	conn, err := h.transport(ctx, srv)
	if err != nil {
		return nil, explain.Server(srv, err, nil)
	}
	c, err := mcp.Connect(ctx, conn, h.clientOptions(srv))
	if err != nil {
		conn.Close()
		sc, _ := conn.(*stdio.Conn)
		if errors.Is(err, context.DeadlineExceeded) {
			err = &mcp.TimeoutError{Method: mcp.MethodInitialize, After: h.timeout(srv)}
		}
		var tail []string
		if sc != nil {
			tail = sc.Stderr()
		}
		return nil, explain.Server(srv, err, tail)
	}
	h.mu.Lock()
	level := h.logLevel
	h.mu.Unlock()
	if level != "" && c.Capabilities().Logging != nil {
		if err := c.SetLogLevel(ctx, level); err != nil {
			h.log.Warn("setting the log level of a new session failed", "server", srv.Name, "error", err)
		}
	}
	return c, nil
}

// selfCommand runs a server whose command is "nexus" (the built-in test
// server of the default config, nexus serve in a client config) with this
// very binary when no nexus is on PATH: right after `make build`, before
// bin/ is on PATH, the default config works. Only the nexus binary does
// this; a program that embeds the host is not nexus.
func selfCommand(cmd []string) []string {
	if len(cmd) == 0 || cmd[0] != "nexus" {
		return cmd
	}
	if _, err := exec.LookPath("nexus"); err == nil {
		return cmd
	}
	self, err := os.Executable()
	if err != nil || strings.TrimSuffix(filepath.Base(self), ".exe") != "nexus" {
		return cmd
	}
	return append([]string{self}, cmd[1:]...)
}

// transport starts the server's transport.
func (h *Host) transport(ctx context.Context, srv *config.Server) (mcp.Conn, error) {
	if h.opts.Transport != nil {
		return h.opts.Transport(ctx, srv)
	}
	switch srv.Type {
	case config.TypeStdio:
		return stdio.Start(ctx, stdio.Config{
			Server:     srv.Name,
			Command:    selfCommand(srv.Command),
			Options:    srv.Stdio,
			Logger:     h.log.Named(srv.Name),
			CloseGrace: h.opts.CloseGrace,
		})
	case config.TypeHTTP, config.TypeSSE:
		return h.dialHTTP(ctx, srv)
	case config.TypePlugin:
		t, err := h.pluginManager().Transport(ctx, h.cfg, srv)
		if err != nil {
			return nil, err
		}
		return t.Dial(ctx)
	}
	return nil, explain.UnsupportedTransport(srv)
}

// dialHTTP prepares a streamable HTTP (or legacy SSE) transport, with the
// server's OAuth client as its authorizer.
func (h *Host) dialHTTP(ctx context.Context, srv *config.Server) (mcp.Conn, error) {
	cfg := httptransport.Config{
		Server:    srv.Name,
		URL:       srv.URL,
		Options:   srv.HTTP,
		LegacySSE: srv.Type == config.TypeSSE || srv.LegacySSE,
		Timeout:   h.timeout(srv),
		Logger:    h.log.Named(srv.Name),
	}
	a, err := h.authClient(srv, false)
	if err != nil {
		return nil, err
	}
	if a != nil {
		cfg.Authorizer = a
	}
	return httptransport.Dial(ctx, cfg)
}

func (h *Host) timeout(srv *config.Server) time.Duration {
	if srv.Timeout > 0 {
		return srv.Timeout
	}
	return h.opts.Timeout
}

func (h *Host) clientOptions(srv *config.Server) mcp.ClientOptions {
	opts := mcp.ClientOptions{
		Info:    mcp.Implementation{Name: "nexus", Version: h.opts.Version},
		Logger:  h.log.Named(srv.Name),
		Timeout: h.timeout(srv),
		// The shell's /cd changes the roots; servers hear about it.
		RootsListChanged: h.hooks.roots != nil,
	}
	name := srv.Name
	if h.hooks.rootsFor != nil {
		opts.Roots = h.guardRoots(name, h.hooks.rootsFor(name))
	} else if h.hooks.roots != nil {
		opts.Roots = h.guardRoots(name, h.hooks.roots)
	}
	if h.hooks.sampling != nil {
		if f := h.hooks.sampling(name); f != nil {
			opts.Sampling = guarded(h, name, mcp.MethodSamplingCreateMessage, f)
		}
	}
	if h.hooks.elicitation != nil {
		if f := h.hooks.elicitation(name); f != nil {
			opts.Elicitation = guarded(h, name, mcp.MethodElicitationCreate, f)
			opts.ElicitationURL = true
		}
	}
	if h.hooks.raw != nil && (opts.Sampling != nil || opts.Elicitation != nil) {
		if f := h.hooks.raw(name); f != nil {
			opts.Raw = guardedRaw(h, name, f)
		}
	}
	if h.hooks.onLog != nil {
		opts.OnLog = func(m mcp.LogMessage) { h.hooks.onLog(name, m) }
	}
	if h.hooks.onUpdated != nil {
		opts.OnResourceUpdated = func(uri string) { h.hooks.onUpdated(name, uri) }
	}
	opts.OnListChanged = func(kind string) {
		h.changed(name)
		if h.hooks.onListChanged != nil {
			h.hooks.onListChanged(name, kind)
		}
	}
	return opts
}
