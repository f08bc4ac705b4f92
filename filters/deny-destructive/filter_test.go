//go:build !wasip1

package main

import (
	"testing"

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
	filtertest.RunWASM(t, "deny-destructive", filtertest.Build(t, "."), "testdata/cases.json")
}
