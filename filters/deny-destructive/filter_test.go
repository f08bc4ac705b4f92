//go:build !wasip1

package main

import (
	"testing"

	"github.com/nexus-mcp/nexus/host/wasm"
	"github.com/nexus-mcp/nexus/host/wasm/wasmtest"
	"github.com/nexus-mcp/nexus/sdk/filter"
)

// The filter's own code imports only sdk/filter and sdk/event. Its tests
// are the host's harness around it: they build the real .wasm and run it
// in the real runtime, beside the same code run natively.

func TestNative(t *testing.T) {
	for _, s := range wasmtest.LoadCases(t, "testdata/cases.json") {
		if err := filter.Configure(s.Config); err != nil {
			t.Fatal(err)
		}
		for _, c := range s.Cases {
			c.Check(t, wasmtest.DecodeDecision(t, filter.Call(c.Event)))
		}
	}
}

func TestWASM(t *testing.T) {
	rt := wasmtest.Runtime(t, wasm.Options{})
	wasmtest.RunSuites(t, rt, "deny-destructive", wasmtest.Build(t, "."), "testdata/cases.json")
}
