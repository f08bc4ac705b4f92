package engine_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/engine"
	"github.com/nexus-mcp/nexus/internal/lock"
)

// BenchmarkLockfileCheck: listing a catalog of 1,000 tools with a
// lockfile that pins them all, every tool checked anew (the verdict cache
// emptied first: what the first listing after a connect or a
// list_changed costs), against listing the same catalog without a
// lockfile, interleaved call by call. It reports check-ms, what the
// lockfile adds to one listing (target 5 ms), and ratio, locked over
// plain.
func BenchmarkLockfileCheck(b *testing.B) {
	const n = 1000
	tools := make([]mcp.Tool, n)
	for i := range tools {
		yes := true
		tools[i] = mcp.Tool{
			Name:        fmt.Sprintf("tool_%04d", i),
			Title:       fmt.Sprintf("Tool %d", i),
			Description: fmt.Sprintf("Tool number %d of the catalog: it reads a record by id and returns it as JSON, with its history when asked.", i),
			InputSchema: json.RawMessage(`{"type":"object","properties":{"id":{"type":"string","description":"The record's id."},` +
				`"history":{"type":"boolean","description":"Include the record's history.","default":false},"limit":{"type":"integer","minimum":1,"maximum":100}},"required":["id"]}`),
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: &yes},
		}
	}
	w := newWorld()
	w.server("big", tools...)
	pinned, err := lock.Pin("big", mcp.Implementation{}, tools, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	l := &lock.Lock{}
	l.Put(pinned)
	plain := w.host(b, yolo, engine.Options{})
	locked := w.host(b, yolo, engine.Options{Lock: l})
	list := func(h *engine.Host) time.Duration {
		start := time.Now()
		got, err := h.Tools(ctx, "y")
		if err != nil || len(got) != n {
			b.Fatalf("%d tools, %v", len(got), err)
		}
		return time.Since(start)
	}
	list(plain) // connect and warm both
	list(locked)
	b.ResetTimer()
	var tPlain, tLocked time.Duration
	for b.Loop() {
		tPlain += list(plain)
		locked.ForgetLockVerdicts()
		tLocked += list(locked)
	}
	b.ReportMetric(float64(tLocked-tPlain)/float64(b.N)/1e6, "check-ms")
	b.ReportMetric(float64(tLocked)/float64(tPlain), "ratio")
	b.ReportMetric(float64(tPlain)/float64(b.N)/1e6, "plain-ms")
}
