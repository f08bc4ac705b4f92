package engine_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nexus-mcp/nexus/internal/engine"
	"github.com/nexus-mcp/nexus/internal/policy"
	"github.com/nexus-mcp/nexus/internal/wasm"
	"github.com/nexus-mcp/nexus/sdk/filter/filtertest"
)

// benchWASMTimeout is the filters' per-call limit in the benchmarks: a
// benchmark measures the cost, not the limit, and make test runs every
// benchmark once race-built on a loaded machine, where redacting 64 KB
// can pass the 100 ms production default.
const benchWASMTimeout = 30 * time.Second

// BenchmarkFiltersInChain: engine.CallTool on the in-process test server's
// echo with each WASM filter of the tree in the chain, against the same
// call with no filter, interleaved block by block. It reports what each
// adds per call, end to end (targets: a raw-ABI guest 5 µs,
// tool-allowlist 10 µs, deny-destructive 15 µs, redact-secrets 100 µs on
// a 2 KB result and 1.5 ms on 64 KB, the four together no more than the
// sum of each alone).
func BenchmarkFiltersInChain(b *testing.B) {
	w := tsWorld()
	rt := filtertest.Runtime(b, wasm.Options{})
	load := func(name, path, config string) policy.Link {
		f, err := rt.Load(context.Background(), wasm.Spec{Name: name, Path: path, Config: json.RawMessage(config), Timeout: benchWASMTimeout})
		if err != nil {
			b.Fatal(err)
		}
		return f
	}
	raw := policy.Entry{Link: load("raw", "../wasm/testdata/minimal.wasm", "null"), Kind: policy.KindPolicy}
	allowlist := policy.Entry{Link: load("tool-allowlist", filtertest.Build(b, "../../filters/tool-allowlist"), `{"allow": ["ts.*"]}`), Kind: policy.KindPolicy}
	destructive := policy.Entry{Link: load("deny-destructive", filtertest.Build(b, "../../filters/deny-destructive"), `{"tools": ["*.drop_*", "rm_rf"], "assume_destructive": false}`), Kind: policy.KindPolicy}
	redact := policy.Entry{Link: load("redact-secrets", filtertest.Build(b, "../../filters/redact-secrets"), `{}`), Kind: policy.KindSanitizer}
	hostWith := func(links ...policy.Entry) *engine.Host { return w.host(b, benchAgent, engine.Options{Links: links}) }
	plain := hostWith()
	call := func(h *engine.Host, args json.RawMessage) func() {
		return func() {
			if res, err := h.CallTool(ctx, "bench", "mcp_ts_echo", args, nil); err != nil || res.IsError {
				b.Fatal(err, res)
			}
		}
	}
	// A result of about n bytes of log-like text with a secret in it, so
	// redact-secrets has work to do.
	payload := func(n int) json.RawMessage {
		line := "2026-11-25T08:00:00Z INFO request served in 12ms by worker 7 for tenant acme; "
		msg := strings.Repeat(line, n/len(line)) + "password=hunter22"
		raw, _ := json.Marshal(map[string]string{"message": msg})
		return raw
	}
	small := json.RawMessage(`{"message":"hello"}`)
	b.Run("small", func(b *testing.B) {
		s := interleaved(b, []func(){call(plain, small), call(hostWith(raw), small), call(hostWith(allowlist), small),
			call(hostWith(destructive), small), call(hostWith(redact), small), call(hostWith(raw, allowlist, destructive, redact), small)})
		plainMicros(b, s)
		added(b, s, 1, "raw")
		added(b, s, 2, "allowlist")
		added(b, s, 3, "destructive")
		added(b, s, 4, "redact")
		added(b, s, 5, "four")
	})
	for _, size := range []struct {
		name string
		n    int
	}{{"2KB", 2 << 10}, {"64KB", 64 << 10}} {
		b.Run(size.name, func(b *testing.B) {
			args := payload(size.n)
			s := interleaved(b, []func(){call(plain, args), call(hostWith(redact), args)})
			plainMicros(b, s)
			added(b, s, 1, "redact")
		})
	}
}
