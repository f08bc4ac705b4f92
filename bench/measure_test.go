package bench

import (
	"context"
	"testing"
	"time"
)

// contender is one way of making the round trip under test.
type contender struct {
	name string
	make func(testing.TB) caller
}

func warm(tb testing.TB, c caller) {
	tb.Helper()
	for range 100 {
		if err := c.call(context.Background()); err != nil {
			tb.Fatal(err)
		}
	}
}

// roundTrips runs one sub-benchmark per contender, sequential calls,
// reporting p50 and p99 latency.
func roundTrips(b *testing.B, cs []contender) {
	for _, ct := range cs {
		b.Run(ct.name, func(b *testing.B) {
			c := ct.make(b)
			defer c.close()
			warm(b, c)
			ctx := context.Background()
			lat := make([]time.Duration, 0, b.N)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				t0 := time.Now()
				if err := c.call(ctx); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t0))
			}
			b.StopTimer()
			b.ReportMetric(us(percentile(lat, 0.5)), "p50-µs")
			b.ReportMetric(us(percentile(lat, 0.99)), "p99-µs")
		})
	}
}

// interleaved calls the contenders in turn, call by call, so machine noise
// hits them alike, reports each one's p50 and returns them in order.
func interleaved(b *testing.B, cs []contender) []float64 { return inTurns(b, cs, 1) }

// turns are the two ways the benchmarks of several processes take turns:
// call by call, where each call finds the other processes asleep (an
// agent's occasional call), and in blocks of 100, where they are awake (a
// conversation).
var turns = []struct {
	name  string
	block int
}{{"call-by-call", 1}, {"in-blocks", 100}}

// byTurns runs cs in each of turns as a sub-benchmark of its name and
// hands report their p50s, in order.
func byTurns(b *testing.B, cs []contender, report func(b *testing.B, p50 []float64)) {
	for _, mode := range turns {
		b.Run(mode.name, func(b *testing.B) { report(b, inTurns(b, cs, mode.block)) })
	}
}

// inTurns is interleaved with block calls per turn: each contender's
// calls then follow one another as a client's in a conversation do, its
// processes awake, while drift still hits all alike.
func inTurns(b *testing.B, cs []contender, block int) []float64 {
	ctx := context.Background()
	callers := make([]caller, len(cs))
	for i, ct := range cs {
		callers[i] = ct.make(b)
		defer callers[i].close()
		warm(b, callers[i])
	}
	lat := make([][]time.Duration, len(cs))
	b.ResetTimer()
	for done := 0; done < b.N; done += block {
		for i, c := range callers {
			for range block {
				d, err := timeCall(ctx, c)
				if err != nil {
					b.Fatal(err)
				}
				lat[i] = append(lat[i], d)
			}
		}
	}
	b.StopTimer()
	p50 := make([]float64, len(cs))
	for i, ct := range cs {
		p50[i] = us(percentile(lat[i], 0.5))
		b.ReportMetric(p50[i], ct.name+"-p50-µs")
	}
	return p50
}

// A selfTimed caller times its own calls: a client in another process
// (node), driven over a pipe whose round trip is not the client's cost.
type selfTimed interface {
	timedCall(ctx context.Context) (time.Duration, error)
}

// timeCall makes one call of c and says how long it took.
func timeCall(ctx context.Context, c caller) (time.Duration, error) {
	if st, ok := c.(selfTimed); ok {
		return st.timedCall(ctx)
	}
	t0 := time.Now()
	err := c.call(ctx)
	return time.Since(t0), err
}

// peersAgree makes sure every contender really completes calls, so a
// benchmark never measures a broken client.
func peersAgree(t *testing.T, cs []contender) {
	ctx := context.Background()
	for _, ct := range cs {
		c := ct.make(t)
		for range 10 {
			if err := c.call(ctx); err != nil {
				t.Fatalf("%s: %v", ct.name, err)
			}
		}
		c.close()
	}
}
