package bench

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nexus-mcp/nexus/internal/testenv"
	httptransport "github.com/nexus-mcp/nexus/internal/transport/http"
)

// The scale-out row: `nexus serve --listen` processes sharing a real
// redis-server on loopback, called through a balancer with no stickiness
// (each request to the next replica), against one process with no store.

// replicaSet starts n gateways sharing the store (none with store "").
func replicaSet(tb testing.TB, n int, store string) (urls []string, stop func()) {
	var stops []func()
	for range n {
		addr := freeAddr(tb)
		args := []string{bins.nexus, "serve", "--config", gatewayConfig(tb), "--agent", "bench", "--listen", addr}
		if store != "" {
			args = append(args, "--session-store", store)
		}
		stops = append(stops, process(tb, "serving MCP at", "", args...))
		urls = append(urls, "http://"+addr+"/mcp")
	}
	return urls, func() {
		for _, s := range stops {
			s()
		}
	}
}

// spread sends each request to the next URL's host.
type spread struct {
	rt    http.RoundTripper
	hosts []string
	n     atomic.Int64
}

func (s *spread) RoundTrip(req *http.Request) (*http.Response, error) {
	host := s.hosts[int(s.n.Add(1))%len(s.hosts)]
	req = req.Clone(req.Context())
	req.URL.Host, req.Host = host, host
	return s.rt.RoundTrip(req)
}

// newSpreadClient is a session whose requests go round robin over urls.
func newSpreadClient(tb testing.TB, urls []string) *nexusClient {
	tb.Helper()
	sp := &spread{}
	for _, u := range urls {
		p, _ := url.Parse(u)
		sp.hosts = append(sp.hosts, p.Host)
	}
	return dialNexus(tb, httptransport.Config{Server: "gw", URL: urls[0], Options: httptransport.Options{AllowPrivateNetworks: true},
		WrapTransport: func(rt http.RoundTripper) http.RoundTripper { sp.rt = rt; return sp }}, "mcp_echo_echo")
}

// throughput makes calls from sessions concurrent sessions (each its own
// client) for the given number of calls in all, and returns calls/s.
func throughput(tb testing.TB, urls []string, sessions, calls int) float64 {
	clients := make([]*nexusClient, sessions)
	for i := range clients {
		clients[i] = newSpreadClient(tb, urls)
		warm(tb, clients[i])
	}
	defer func() {
		for _, c := range clients {
			c.close()
		}
	}()
	var next atomic.Int64
	var wg sync.WaitGroup
	var failed atomic.Value
	start := time.Now()
	for _, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(calls) {
				if err := c.call(context.Background()); err != nil {
					failed.Store(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := failed.Load(); err != nil {
		tb.Fatal(err)
	}
	return float64(calls) / time.Since(start).Seconds()
}

// BenchmarkReplicas reports, in one run:
//   - the p50 of one session's calls (interleaved, call by call) on one
//     process with no store, on one replica with Redis, and on three
//     replicas with Redis, each call to the next; what the store adds to a
//     call's p50 (goal ≤ 100 µs: a session whose state is cached makes no
//     store round trip on a call);
//   - calls/s from 16 sessions on 1, 2 and 3 replicas sharing Redis, each
//     over the one process with no store. Replicas on one machine share its
//     CPUs: this shows what sharing costs, not what more machines give.
func BenchmarkReplicas(b *testing.B) {
	redis := testenv.RedisServer(b)
	p50 := interleaved(b, []contender{
		{"memory", func(tb testing.TB) caller {
			urls, stop := replicaSet(tb, 1, "")
			return closer{newSpreadClient(tb, urls), stop}
		}},
		{"redis-1", func(tb testing.TB) caller {
			urls, stop := replicaSet(tb, 1, redis)
			return closer{newSpreadClient(tb, urls), stop}
		}},
		{"redis-3", func(tb testing.TB) caller {
			urls, stop := replicaSet(tb, 3, redis)
			return closer{newSpreadClient(tb, urls), stop}
		}},
	})
	b.ReportMetric(p50[1]-p50[0], "store-added-p50-µs")
	b.ReportMetric(p50[2]/p50[0], "redis-3/memory-p50")

	const sessions, calls = 16, 3000
	urls, stop := replicaSet(b, 1, "")
	base := throughput(b, urls, sessions, calls)
	stop()
	b.ReportMetric(base, "memory-calls/s")
	urls, stop = replicaSet(b, 3, redis)
	defer stop()
	for n := 1; n <= 3; n++ {
		cps := throughput(b, urls[:n], sessions, calls)
		b.ReportMetric(cps, fmt.Sprintf("redis-%d-calls/s", n))
		b.ReportMetric(cps/base, fmt.Sprintf("redis-%d/memory", n))
	}
}

// The replicas really share sessions: a session spread over three
// processes makes calls that all succeed (a benchmark never measures a
// broken setup).
func TestReplicasServe(t *testing.T) {
	urls, stop := replicaSet(t, 3, testenv.RedisServer(t))
	defer stop()
	c := newSpreadClient(t, urls)
	defer c.close()
	for range 30 {
		if err := c.call(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}
