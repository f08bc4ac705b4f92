//go:build !wasip1

package main

import (
	"context"
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
		filter.SetSession(s.Session)
		if err := filter.Configure(s.Config); err != nil {
			t.Fatal(err)
		}
		for _, c := range s.Cases {
			c.Check(t, filtertest.DecodeDecision(t, filter.Call(c.Event)))
		}
	}
}

func TestWASM(t *testing.T) {
	filtertest.RunWASM(t, "spotlight", filtertest.Build(t, "."), "testdata/cases.json")
}

// The marker is random per session: two runtimes (two sessions) mark the
// same result differently, and neither marker is the session id.
func TestMarkerPerSession(t *testing.T) {
	mod := filtertest.Build(t, ".")
	e := &event.Event{Phase: event.PhaseResponse, Method: "tools/call", Server: event.Server{Name: "web"}, Tool: &event.Tool{Name: "fetch"},
		Result: []byte(`{"content":[{"type":"text","text":"hello"}]}`)}
	var seen []string
	for _, session := range []string{"0c1d5e8a4b7f92e3", "7e2a9c4d1f0b8356"} {
		f, err := filtertest.Load(t, mod, filtertest.Spec{Session: session})
		if err != nil {
			t.Fatal(err)
		}
		d1, err1 := f.Handle(context.Background(), e)
		d2, err2 := f.Handle(context.Background(), e)
		if err1 != nil || err2 != nil || string(d1.Result) != string(d2.Result) {
			t.Fatalf("one session, two markers: %s %s %v %v", d1.Result, d2.Result, err1, err2)
		}
		if strings.Contains(string(d1.Result), session) {
			t.Fatal("the marker is the session id")
		}
		seen = append(seen, string(d1.Result))
	}
	if seen[0] == seen[1] {
		t.Fatalf("two sessions, one marker: %s", seen[0])
	}
}
