package host

import (
	"context"
	"io"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/auth"
	"github.com/nexus-mcp/nexus/internal/config"
	"github.com/nexus-mcp/nexus/internal/engine"
	"github.com/nexus-mcp/nexus/internal/telemetry"
)

// Options configure a Host. The zero value is usable. New converts them
// to the engine's once.
type Options struct {
	Logger hclog.Logger
	// Version is the clientInfo version the host sends (Version when
	// empty).
	Version string
	// Timeout per request; a server's own `timeout` wins over it.
	Timeout time.Duration

	// Confirm asks a person before a trusted agent's first use of a
	// server; nil denies where it would ask.
	Confirm Confirmer
	// Lock, when set, is the tool lockfile the host enforces: tools not
	// pinned as they are now are withheld (ReadLock reads it). SetLock
	// swaps it while the host runs; WatchLock follows the file.
	Lock *Lock
	// Approvals remember a person's "always" answers across processes
	// (OpenApprovals keeps them in a file); nil: for this process.
	Approvals Approvals
	// Links are the program's own links, after the built-in permission
	// check and the config's filters, in order.
	Links []Entry

	// Handlers for requests servers send; nil leaves the capability out.
	// Roots defaults to the config's roots when it has any.
	Roots       mcp.RootsHandler
	Sampling    func(server string) mcp.SamplingHandler
	Elicitation func(server string) mcp.ElicitationHandler
	// OnLog receives server log notifications.
	OnLog func(server string, m mcp.LogMessage)
	// OnChange is told when a server's lists change or it (re)connects or
	// dies.
	OnChange func(server string)
	// Audit, when set, is the audit log every decision point is recorded
	// in; nil opens the config's audit block's, if it has one.
	Audit *AuditLog
	// Telemetry, when set, traces every request and counts them for
	// Prometheus (OpenTelemetry makes one).
	Telemetry *Telemetry
	// OnToolDecision is told each time a tool's definition decides what
	// an agent gets: the lockfile or a tools/list policy withholds it (in
	// a listing or a call) or a policy flags it.
	OnToolDecision func(ToolDecision)

	// CloseGrace is how long a stdio server gets to exit after its stdin
	// closes, and again after SIGTERM (default 2 s).
	CloseGrace time.Duration
	// Dial replaces the built-in transports, for tests and embedders with
	// their own; nil uses each server's configured transport.
	Dial Dialer
	// Transport, if set, opens every server's connection instead of the
	// built-in transports; unlike Dial, the session on it is still made by
	// the host, with its handlers (sampling, elicitation, roots).
	Transport func(ctx context.Context, srv *Server) (mcp.Conn, error)
	// Auth configures the OAuth clients of HTTP servers.
	Auth AuthOptions
}

// AuthOptions configure the OAuth clients of HTTP servers: where tokens
// are kept, how a person is shown an authorization URL.
type AuthOptions struct {
	// TokenDir replaces ~/.nexus/tokens.
	TokenDir string
	// NoStore keeps tokens in memory only.
	NoStore bool
	// Opener shows an authorization URL to the person; Out receives the
	// default Opener's instructions.
	Opener Opener
	Out    io.Writer
}

// Dialer opens a session to one server and runs the initialize handshake
// (Options.Dial); its errors should already say which server.
type Dialer func(ctx context.Context, srv *Server) (*mcp.Client, error)

// ToolDecision is a decision about a tool that rests on its definition
// (Options.OnToolDecision): the lockfile (Link "lock") or a tools/list
// policy withheld it from an agent, or a policy flagged it and let it
// through.
type ToolDecision struct {
	Agent, Server, Tool string
	Method              string // tools/list, or tools/call for a call refused
	Link                string // "lock", or the filter or plugin that decided
	Withheld            bool
	Reason              string
	Flags               []string // the link's findings
}

// engine is o as the engine takes it, made once in New.
func (o Options) engine() engine.Options {
	e := engine.Options{
		Logger: o.Logger, Version: o.Version, Timeout: o.Timeout,
		Confirm: confirmer(o.Confirm), Lock: o.Lock.lock(), Approvals: o.Approvals, Links: entries(o.Links),
		Roots: o.Roots, Sampling: o.Sampling, Elicitation: o.Elicitation, OnLog: o.OnLog, OnChange: o.OnChange,
		Audit: o.Audit.writer(), Telemetry: o.Telemetry.in(),
		CloseGrace: o.CloseGrace,
		Auth:       engine.AuthOptions{TokenDir: o.Auth.TokenDir, NoStore: o.Auth.NoStore, Opener: auth.Opener(o.Auth.Opener), Out: o.Auth.Out},
	}
	if d := o.Dial; d != nil {
		e.Dial = func(ctx context.Context, s *config.Server) (*mcp.Client, error) { return d(ctx, server(s)) }
	}
	if t := o.Transport; t != nil {
		e.Transport = func(ctx context.Context, s *config.Server) (mcp.Conn, error) { return t(ctx, server(s)) }
	}
	if f := o.OnToolDecision; f != nil {
		e.OnToolDecision = func(d engine.ToolDecision) { f(ToolDecision(d)) }
	}
	return e
}

// Telemetry traces requests with OpenTelemetry and counts them for
// Prometheus (Options.Telemetry); a Gateway serves the metrics
// (GatewayOptions.Metrics). Shutdown sends the spans still queued. A nil
// *Telemetry traces and counts nothing.
type Telemetry struct{ t *telemetry.Telemetry }

// Tracing reports whether spans are made: the config's telemetry block or
// the OTEL_* variables name an exporter.
func (t *Telemetry) Tracing() bool { return t.in().Tracing() }

// Shutdown sends the spans still queued and stops the exporter.
func (t *Telemetry) Shutdown(ctx context.Context) error { return hostErr(t.in().Shutdown(ctx)) }

// in is the telemetry t holds; nil for a nil t, which the engine takes as
// none.
func (t *Telemetry) in() *telemetry.Telemetry {
	if t == nil {
		return nil
	}
	return t.t
}

// OpenTelemetry sets up tracing as cfg's telemetry block and the standard
// OTEL_* environment variables say (none: no exporter, and tracing costs
// nothing), and Prometheus metrics when metrics is true.
func OpenTelemetry(cfg *Config, metrics bool) (*Telemetry, error) {
	o := telemetry.Options{Metrics: metrics}
	if c := internalConfig(cfg); c != nil && c.Telemetry != nil {
		b := c.Telemetry
		o.Tracing, o.Endpoint, o.Protocol, o.ServiceName, o.LinkSpans = true, b.Endpoint, b.Protocol, b.ServiceName, b.LinkSpans
	}
	t, err := telemetry.New(context.Background(), o)
	if err != nil {
		return nil, hostErr(err)
	}
	return &Telemetry{t}, nil
}
