package main

import (
	"context"
	"fmt"
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
