package testserver

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/transport/httpserver"
)

// The test server over Streamable HTTP (MCP 2025-11-25, transports): the
// transport is internal/transport/httpserver's, each session an mcp.Server.Serve.
// Concurrent calls each get their own sampling, elicitation and log
// messages on their own stream (mcp.RelatedRequest).

// HTTPOption tunes an HTTPHandler.
type HTTPOption func(*httpConfig)

type httpConfig = httpserver.Options

// WithPolling makes the server close every SSE connection after it wrote
// events messages, announcing retry first, as SEP-1699 lets servers do; the
// client resumes with GET and Last-Event-ID. For resumption tests.
func WithPolling(events int, retry time.Duration) HTTPOption {
	return func(c *httpConfig) { c.PollAfter, c.PollRetry = events, retry }
}

// WithReplayBuffer sets how many events each stream keeps for replay
// (default 256).
func WithReplayBuffer(events int) HTTPOption {
	return func(c *httpConfig) { c.ReplayEvents = events }
}

// WithMaxSessions bounds concurrent sessions (default 1000); initialize
// beyond it gets 503.
func WithMaxSessions(n int) HTTPOption {
	return func(c *httpConfig) { c.MaxSessions = n }
}

// WithSessionIdleTimeout ends sessions with no request and no open stream
// for d (default 30 minutes).
func WithSessionIdleTimeout(d time.Duration) HTTPOption {
	return func(c *httpConfig) { c.IdleTimeout = d }
}

// HTTPHandler serves the test server at one MCP endpoint; mount it at the
// path of your choice. It is safe for concurrent use.
type HTTPHandler struct {
	srv *mcp.Server
	*httpserver.Handler
}

// NewHTTPHandler returns the test server as an http.Handler serving
// Streamable HTTP with sessions. Close it to end every session.
func NewHTTPHandler(o Options, opts ...HTTPOption) *HTTPHandler {
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	cfg := httpConfig{Logger: o.Logger}
	for _, opt := range opts {
		opt(&cfg)
	}
	srv := New(o)
	serve := func(ctx context.Context, conn mcp.Conn, _ *httpserver.Session) error { return srv.Serve(ctx, conn) }
	return &HTTPHandler{srv: srv, Handler: httpserver.New(serve, cfg)}
}

// Server is the MCP server behind the handler, for tests that change what
// it serves (which notifies sessions) or call ResourceUpdated.
func (h *HTTPHandler) Server() *mcp.Server { return h.srv }

// Close ends the sessions and the tasks still running.
func (h *HTTPHandler) Close() error {
	err := h.Handler.Close()
	h.srv.EndTasks()
	return err
}

// ServeHTTP listens on addr exactly as given (bind to 127.0.0.1 unless
// you mean to expose the server: it has no authentication) and serves the
// MCP endpoint at /mcp until ctx ends, then shuts down and returns
// ctx.Err(), as ServeStdio does.
func ServeHTTP(ctx context.Context, o Options, addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("testserver: cannot listen on %s: %w", addr, err)
	}
	return ServeListener(ctx, o, ln)
}

// EndpointPath is where ServeHTTP and ServeListener serve MCP.
const EndpointPath = "/mcp"

// ServeListener is ServeHTTP on a listener the caller made (for port 0:
// the URL is "http://" + ln.Addr().String() + EndpointPath).
func ServeListener(ctx context.Context, o Options, ln net.Listener, opts ...HTTPOption) error {
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	if err := o.waitStart(ctx); err != nil {
		ln.Close()
		return err
	}
	h := NewHTTPHandler(o, opts...)
	mux := http.NewServeMux()
	mux.Handle(EndpointPath, h)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "not found: the MCP endpoint of the Nexus test server is "+EndpointPath, http.StatusNotFound)
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ErrorLog: o.Logger.StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true})}
	if ap, err := netip.ParseAddrPort(ln.Addr().String()); err == nil && !ap.Addr().Unmap().IsLoopback() {
		o.Logger.Warn("the test server listens beyond loopback and has no authentication", "addr", ln.Addr().String())
	}
	o.Logger.Info("serving MCP over streamable HTTP", "url", "http://"+ln.Addr().String()+EndpointPath)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case <-ctx.Done():
		h.Close()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
		<-errc
		return ctx.Err()
	case err := <-errc:
		h.Close()
		return err
	}
}
