//go:build !wasip1

package main

import (
	"testing"

	"github.com/nexus-mcp/nexus/sdk/filter"
	"github.com/nexus-mcp/nexus/sdk/filter/filtertest"
)

// TestNative runs the cases on the filter's code compiled for this
// machine: fast, and a debugger works.
func TestNative(t *testing.T) {
	for _, s := range filtertest.LoadCases(t, "testdata/cases.json") {
		words = nil
		if err := filter.Configure(s.Config); err != nil {
			t.Fatal(err)
		}
		for _, c := range s.Cases {
			c.Check(t, filtertest.DecodeDecision(t, filter.Call(c.Event)))
		}
	}
}

// TestWASM builds the real .wasm and runs the same cases in the runtime
// Nexus uses, with its limits.
func TestWASM(t *testing.T) {
	filtertest.RunWASM(t, "filter-template", filtertest.Build(t, "."), "testdata/cases.json")
}
