package wasmtest

import (
	"slices"
	"testing"
	"time"
)

// Baselines are the same logic run other ways, for Compare: in native Go
// in this process, and out of process (a pipe round trip to the filter
// built natively). Either may be nil.
type Baselines struct {
	Native func()
	OOP    func() error
}

// Compare benchmarks call (one WASM filter call per iteration) and, in the
// same run, the baselines. Besides ns/op it reports:
//
//	p50-ns, p99-ns   latency of one WASM call
//	native-ns        the same logic in native Go (p50)
//	oop-ns           the out-of-process round trip (p50)
//	x-native         WASM p50 / native p50: the cost of the sandbox
//	oop/wasm         out-of-process p50 / WASM p50: how much faster in-process WASM is
//	failed           calls that failed (a loaded machine can push one past
//	                 its time limit); more than 1% fails the benchmark
func Compare(b *testing.B, call func() error, base Baselines) {
	b.Helper()
	for range 100 { // warm the pool and the caches
		if err := call(); err != nil {
			b.Fatal(err)
		}
	}
	lat := make([]time.Duration, 0, b.N)
	failed := 0
	var lastErr error
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		if err := call(); err != nil {
			failed++
			lastErr = err
		}
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	if failed*100 > b.N {
		b.Fatalf("%d of %d calls failed, the last with: %v", failed, b.N, lastErr)
	}
	b.ReportMetric(float64(failed), "failed")
	p50, p99 := percentile(lat, 50), percentile(lat, 99)
	b.ReportMetric(float64(p50.Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(p99.Nanoseconds()), "p99-ns")
	if base.Native != nil {
		n := Sample(func() error { base.Native(); return nil }, 200*time.Millisecond)
		b.ReportMetric(float64(n.Nanoseconds()), "native-ns")
		b.ReportMetric(float64(p50)/float64(max(n, 1)), "x-native")
	}
	if base.OOP != nil {
		o := Sample(base.OOP, 300*time.Millisecond)
		b.ReportMetric(float64(o.Nanoseconds()), "oop-ns")
		b.ReportMetric(float64(o)/float64(max(p50, 1)), "oop/wasm")
	}
	b.StartTimer()
}

// Sample runs fn for about d and returns the median time of one call. Fast
// functions are timed in batches, so the clock's own cost does not count.
func Sample(fn func() error, d time.Duration) time.Duration {
	batch := 1
	for {
		t0 := time.Now()
		for range batch {
			fn()
		}
		if time.Since(t0) >= 20*time.Microsecond || batch >= 1<<20 {
			break
		}
		batch *= 2
	}
	var per []time.Duration
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) || len(per) < 5 {
		t0 := time.Now()
		for range batch {
			if err := fn(); err != nil {
				panic(err)
			}
		}
		per = append(per, time.Since(t0)/time.Duration(batch))
	}
	return percentile(per, 50)
}

func percentile(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*p/100)]
}
