package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/nexus-mcp/nexus/host"
)

// telemetry sets up traces as the config's telemetry block and the
// OTEL_* variables say (none without either: then nothing is traced) and,
// with metrics, Prometheus metrics. Spans still queued are sent when the command ends, for at most
// five seconds.
func (a *app) telemetry(cfg *host.Config, metrics bool) (*host.Telemetry, error) {
	t, err := host.OpenTelemetry(cfg, metrics)
	if err != nil {
		return nil, &exitError{exitUsage, err}
	}
	if t.Tracing() {
		a.atExit = append(a.atExit, func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := t.Shutdown(ctx); err != nil {
				fmt.Fprintf(a.stderr, "Warning: sending the last traces failed: %v\n", err)
			}
		})
	}
	return t, nil
}

// metrics is what serveMetrics serves: the host's Telemetry's Metrics.
type metrics interface{ Handler() http.Handler }

// serveMetrics serves m at http://addr/metrics until ctx ends. It returns
// once the listener is up, or with why it cannot be.
func serveMetrics(ctx context.Context, addr string, m metrics, logErr func(msg string, args ...any)) (net.Addr, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics: cannot listen on %s: %w (another process on the port? pick another with --metrics)", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", m.Handler())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second, MaxHeaderBytes: 64 << 10}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logErr("serving metrics failed", "addr", addr, "error", err)
		}
	}()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}()
	return ln.Addr(), nil
}
