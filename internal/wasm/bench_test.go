package wasm_test

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/nexus-mcp/nexus/internal/wasm"
	"github.com/nexus-mcp/nexus/sdk/event"
	"github.com/nexus-mcp/nexus/sdk/filter/filtertest"
)

// BenchmarkMinimal is the per-call cost of the runtime itself: the
// hand-written guest of testdata/minimal.wat (no Go runtime, no JSON in
// the guest) with the time limit enforced, against the same "allow" in
// native Go and over a pipe to a native process.
func BenchmarkMinimal(b *testing.B) {
	rt := filtertest.Runtime(b, wasm.Options{})
	f := load(b, rt, wasm.Spec{Path: "testdata/minimal.wasm"})
	e := toolCall()
	pipe := filtertest.StartPipe(b, filtertest.BuildNative(b, "testdata/goguest"), []byte(`{"mode":"allow"}`))
	ctx := context.Background()
	filtertest.Compare(b, func() error {
		_, err := f.Handle(ctx, e)
		return err
	}, filtertest.Baselines{
		Native: func() { sink = allowNative(e) },
		OOP: func() error {
			_, err := pipe.CallEvent(e) // the hop has to send the event
			return err
		},
	})
}

// sink keeps the native baseline's result, so the call is not dropped.
var sink event.Decision

// allowNative is the minimal guest's logic in native Go: look at the
// event, allow it. Not inlined, so the baseline pays a call as the others
// do.
//
//go:noinline
func allowNative(e *event.Event) event.Decision {
	if e.Tool == nil {
		return event.Decision{Action: event.Allow, Reason: "no tool"}
	}
	return event.Decision{Action: event.Allow}
}

// BenchmarkLoadWarmCache is a filter compiled from the warm on-disk cache
// plus its first instance started and configured: what a host pays per
// filter at startup. go-sdk is the runtime's Go test guest, which links
// encoding/json and fmt for its test modes on top of the Go SDK (3.4 MB of
// WASM); redact-secrets is a first-party filter as the SDK builds it (2.9
// MB, most of it the Go runtime); minimal is the hand-written guest. It
// reports the cold compile (empty cache) and the start of the same filter
// as a native process, in the same run. The time grows with the size of
// the module: wazero decodes, validates and hashes all of it before it
// looks in the cache.
func BenchmarkLoadWarmCache(b *testing.B) {
	b.Run("go-sdk", func(b *testing.B) {
		benchLoad(b, filtertest.Build(b, "testdata/goguest"), json.RawMessage(`{"mode":"allow"}`), filtertest.BuildNative(b, "testdata/goguest"))
	})
	b.Run("redact-secrets", func(b *testing.B) {
		const dir = "../../filters/redact-secrets"
		benchLoad(b, filtertest.Build(b, dir), nil, filtertest.BuildNative(b, dir))
	})
	b.Run("minimal", func(b *testing.B) { benchLoad(b, "testdata/minimal.wasm", nil, "") })
}

func benchLoad(b *testing.B, mod string, cfg json.RawMessage, native string) {
	cache := filepath.Join(b.TempDir(), "cache")
	ctx := context.Background()
	loadOnce := func(opts wasm.Options) time.Duration {
		start := time.Now()
		rt, err := wasm.NewRuntime(ctx, opts)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := rt.Load(ctx, wasm.Spec{Path: mod, Config: cfg, Pool: 1}); err != nil {
			b.Fatal(err)
		}
		d := time.Since(start)
		rt.Close(ctx)
		return d
	}
	cold := loadOnce(wasm.Options{CacheDir: cache}) // fills the cache
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		loadOnce(wasm.Options{CacheDir: cache})
	}
	b.StopTimer()
	warm := b.Elapsed() / time.Duration(b.N)
	b.ReportMetric(float64(warm.Microseconds())/1000, "warm-ms")
	b.ReportMetric(float64(cold.Microseconds())/1000, "cold-ms")
	b.ReportMetric(float64(cold)/float64(warm), "cold/warm")
	if native == "" {
		return
	}
	start := time.Now()
	cmd := exec.Command(native)
	cmd.Env = []string{"NEXUS_FILTER_PIPE=1"}
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	in.Write([]byte{0, 0, 0, 4, 'n', 'u', 'l', 'l'})
	var hdr [6]byte
	out.Read(hdr[:])
	proc := time.Since(start)
	in.Close()
	cmd.Wait()
	b.ReportMetric(float64(proc.Microseconds())/1000, "process-ms")
}
