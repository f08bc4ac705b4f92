package engine_test

import (
	"runtime"
	"slices"
	"syscall"
	"testing"
	"time"
)

// sample is one block of calls: the time, the process's CPU time and the
// bytes allocated per call.
type sample struct {
	wall, cpu time.Duration
	alloc     uint64
}

// interleaved warms every contender, then runs them block by block (200
// calls each) until b.N calls, so that load and drift hit all alike; it
// returns each contender's blocks.
func interleaved(b *testing.B, fs []func()) [][]sample {
	for range 300 {
		for _, f := range fs {
			f()
		}
	}
	measure := func(f func(), n int) sample {
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		c0, t0 := cpuTime(syscall.RUSAGE_SELF), time.Now()
		for range n {
			f()
		}
		d, c := time.Since(t0), cpuTime(syscall.RUSAGE_SELF)-c0
		runtime.ReadMemStats(&m1)
		return sample{d / time.Duration(n), c / time.Duration(n), (m1.TotalAlloc - m0.TotalAlloc) / uint64(n)}
	}
	s := make([][]sample, len(fs))
	b.ResetTimer()
	for done := 0; done < b.N; {
		n := min(200, b.N-done)
		for i, f := range fs {
			s[i] = append(s[i], measure(f, n))
		}
		done += n
	}
	b.StopTimer()
	return s
}

// added reports, as name-µs and name-B, the median over blocks of what
// contender k costs beyond contender 0.
func added(b *testing.B, s [][]sample, k int, name string) {
	med := func(f func(i int) float64) float64 {
		v := make([]float64, len(s[0]))
		for i := range v {
			v[i] = f(i)
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	b.ReportMetric(med(func(i int) float64 { return float64((s[k][i].wall - s[0][i].wall).Nanoseconds()) / 1000 }), name+"-µs")
	b.ReportMetric(med(func(i int) float64 { return float64(s[k][i].alloc) - float64(s[0][i].alloc) }), name+"-B")
	// The process's CPU time: what the contender costs this process,
	// whatever the scheduler does with the wait for the server (a server
	// in another process is not counted; one in process costs both alike).
	b.ReportMetric(med(func(i int) float64 { return float64((s[k][i].cpu - s[0][i].cpu).Nanoseconds()) / 1000 }), name+"-cpu-µs")
}

// plainMicros reports contender 0's median time per call.
func plainMicros(b *testing.B, s [][]sample) {
	v := make([]float64, len(s[0]))
	for i, x := range s[0] {
		v[i] = float64(x.wall.Nanoseconds()) / 1000
	}
	slices.Sort(v)
	b.ReportMetric(v[len(v)/2], "plain-µs")
}
