//go:build !wasip1

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/nexus-mcp/nexus/sdk/event"
	"github.com/nexus-mcp/nexus/sdk/filter"
	"github.com/nexus-mcp/nexus/sdk/filter/filtertest"
)

// The filter's own code imports only sdk/filter and sdk/event. Its tests
// are the host's harness around it: they build the real .wasm and run it
// in the real runtime, beside the same code run natively.

func TestNative(t *testing.T) {
	for _, s := range filtertest.LoadCases(t, "testdata/cases.json") {
		if err := filter.Configure(s.Config); err != nil {
			t.Fatal(err)
		}
		for _, c := range s.Cases {
			c.Check(t, filtertest.DecodeDecision(t, filter.Call(c.Event)))
		}
	}
}

func TestWASM(t *testing.T) {
	filtertest.RunWASM(t, "redact-secrets", filtertest.Build(t, "."), "testdata/cases.json")
}

// benchResult is a 2 KB tool result: log lines with two secrets in them.
func benchResult() json.RawMessage {
	var b strings.Builder
	for i := 0; b.Len() < 1900; i++ {
		fmt.Fprintf(&b, "2026-11-21T10:%02d:00Z INFO request %d served in %dms path=/api/v1/items/%d user=ada\n", i%60, i, i*7%90, i)
		if i == 5 {
			b.WriteString("config loaded: AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE region=eu-west-1\n")
		}
		if i == 12 {
			b.WriteString("auth header: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk\n")
		}
	}
	r, _ := json.Marshal(map[string]any{"content": []any{map[string]any{"type": "text", "text": b.String()}}})
	return r
}

// BenchmarkRedactSecrets2KB is one sanitizer call on a 2 KB result, built
// with the Go SDK, against the same code in native Go and out of process.
func BenchmarkRedactSecrets2KB(b *testing.B) {
	f, err := filtertest.Load(b, filtertest.Build(b, "."), filtertest.Spec{})
	if err != nil {
		b.Fatal(err)
	}
	e := &event.Event{ABI: 1, Phase: event.PhaseResponse, Method: "tools/call", Agent: event.Agent{ID: "cli", Permission: "trusted"},
		Server: event.Server{Name: "logs"}, Tool: &event.Tool{Name: "tail"}, Params: json.RawMessage(`{"name":"tail","arguments":{"n":40}}`), Result: benchResult()}
	b.SetBytes(int64(len(e.Result)))
	if err := filter.Configure(nil); err != nil {
		b.Fatal(err)
	}
	pipe := filtertest.StartPipe(b, filtertest.BuildNative(b, "."), nil)
	ctx := context.Background()
	filtertest.Compare(b, func() error {
		d, err := f.Handle(ctx, e)
		if err == nil && d.Action != event.Modify {
			b.Fatalf("decision %+v", d)
		}
		return err
	}, filtertest.Baselines{
		Native: func() { filter.CallEvent(e) },
		OOP: func() error {
			_, err := pipe.CallEvent(e)
			return err
		},
	})
}
