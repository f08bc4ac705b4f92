package filtertest

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
// same run, the baselines, interleaved block by block so that load and
// drift hit all alike, each warmed up first. Besides ns/op (the WASM calls
// alone; the baselines run with the timer stopped) it reports:
//
//	p50-ns, p99-ns   latency of one WASM call
//	native-ns        the same logic in native Go (the median over blocks of
//	                 a block's mean: one call is below the clock's grain)
//	oop-ns           the out-of-process round trip (p50)
//	x-native         WASM p50 / native: the cost of the sandbox
//	oop/wasm         out-of-process p50 / WASM p50: how much faster in-process WASM is
//	failed           calls that failed (a loaded machine can push one past
//	                 its time limit); more than 1% fails the benchmark
//
// The native baseline must do the work it stands for, not return a
// constant the compiler can fold: give it the same event, decode and all.
func Compare(b *testing.B, call func() error, base Baselines) {
	b.Helper()
	for range 100 { // warm the pool, the caches and the pipe
		if err := call(); err != nil {
			b.Fatal(err)
		}
		if base.Native != nil {
			base.Native()
		}
		if base.OOP != nil {
			if err := base.OOP(); err != nil {
				b.Fatal(err)
			}
		}
	}
	const block = 50
	lat := make([]time.Duration, 0, b.N)
	var native, oop []time.Duration
	failed := 0
	var lastErr error
	b.ReportAllocs()
	b.ResetTimer()
	for done := 0; done < b.N; {
		n := min(block, b.N-done)
		for range n {
			t0 := time.Now()
			if err := call(); err != nil {
				failed++
				lastErr = err
			}
			lat = append(lat, time.Since(t0))
		}
		done += n
		if base.Native == nil && base.OOP == nil {
			continue
		}
		b.StopTimer()
		if base.Native != nil {
			t0 := time.Now()
			for range n {
				base.Native()
			}
			native = append(native, time.Since(t0)/time.Duration(n))
		}
		if base.OOP != nil {
			for range n {
				t0 := time.Now()
				if err := base.OOP(); err != nil {
					b.Fatal(err)
				}
				oop = append(oop, time.Since(t0))
			}
		}
		b.StartTimer()
	}
	b.StopTimer()
	if failed*100 > b.N {
		b.Fatalf("%d of %d calls failed, the last with: %v", failed, b.N, lastErr)
	}
	b.ReportMetric(float64(failed), "failed")
	p50, p99 := percentile(lat, 50), percentile(lat, 99)
	b.ReportMetric(float64(p50.Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(p99.Nanoseconds()), "p99-ns")
	if len(native) > 0 {
		n := percentile(native, 50)
		b.ReportMetric(float64(n.Nanoseconds()), "native-ns")
		b.ReportMetric(float64(p50)/float64(max(n, 1)), "x-native")
	}
	if len(oop) > 0 {
		o := percentile(oop, 50)
		b.ReportMetric(float64(o.Nanoseconds()), "oop-ns")
		b.ReportMetric(float64(o)/float64(max(p50, 1)), "oop/wasm")
	}
	b.StartTimer()
}

// percentile is the p-th percentile of d.
func percentile(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*p/100)]
}
