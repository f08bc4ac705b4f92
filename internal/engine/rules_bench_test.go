package engine_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/nexus-mcp/nexus/internal/engine"
	"github.com/nexus-mcp/nexus/internal/policy"
	"github.com/nexus-mcp/nexus/internal/rules"
	"github.com/nexus-mcp/nexus/internal/wasm"
	"github.com/nexus-mcp/nexus/sdk/filter/filtertest"
)

// regoAllowlist is the Rego allowlist of examples/policies, built by OPA.
const regoAllowlist = `package policies.allowlist

import rego.v1

deny contains sprintf("server %s is not in the allowlist", [input.server.name]) if {
	not input.server.name in data.servers
}
`

// BenchmarkPolicyLanguages: engine.CallTool with one CEL rule, and with the
// Rego allowlist compiled by OPA, against the same call with neither,
// interleaved block by block, on the in-process test server and on the
// test server over stdio (what a real server is). It reports what each
// adds per call in wall time and in this process's CPU time (targets: a
// CEL rule 2 µs, the Rego allowlist 20 µs).
func BenchmarkPolicyLanguages(b *testing.B) {
	rule, err := rules.Compile(rules.Spec{Name: "no-deletes-for-ci", When: rules.Expr{Text: "agent.id == 'ci' && tool.name.startsWith('delete_')"}, Action: rules.Deny})
	if err != nil {
		b.Fatal(err)
	}
	rt := filtertest.Runtime(b, wasm.Options{})
	rego, err := rt.Load(context.Background(), wasm.Spec{Name: "allowlist", Path: filtertest.BuildRego(b, regoAllowlist, "policies/allowlist/deny"),
		Config: json.RawMessage(`{"servers": ["ts"]}`), Timeout: benchWASMTimeout})
	if err != nil {
		b.Fatal(err)
	}
	links := [][]policy.Entry{nil, {{Link: rule, Kind: policy.KindPolicy}}, {{Link: rego, Kind: policy.KindPolicy}}}
	args := json.RawMessage(`{"message":"hello"}`)
	run := func(b *testing.B, newHost func(links []policy.Entry) *engine.Host) {
		var calls []func()
		for _, l := range links {
			h := newHost(l)
			calls = append(calls, func() {
				if res, err := h.CallTool(ctx, "bench", "mcp_ts_echo", args, nil); err != nil || res.IsError {
					b.Fatal(err, res)
				}
			})
		}
		s := interleaved(b, calls)
		plainMicros(b, s)
		added(b, s, 1, "cel")
		added(b, s, 2, "rego")
	}
	b.Run("in-process", func(b *testing.B) {
		w := tsWorld()
		run(b, func(links []policy.Entry) *engine.Host { return w.host(b, benchAgent, engine.Options{Links: links}) })
	})
	b.Run("stdio", func(b *testing.B) {
		doc := `{"mcpServers": {"ts": ` + testserverEntry(b) + `}, "agents": ` + benchAgent + `}`
		run(b, func(links []policy.Entry) *engine.Host { return newHostTB(b, doc, engine.Options{Links: links}) })
	})
}
