package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/config"
	"github.com/nexus-mcp/nexus/internal/gateway"
	httptransport "github.com/nexus-mcp/nexus/internal/transport/http"
)

// BenchmarkHop is the gateway's own work per tools/call, in process: the
// client and the upstream talk to it over in-memory pipes, so what is
// measured is the two protocol hops and the host's chain, not I/O. The
// baseline is the same client calling the same upstream directly. The
// 64KB-text cases echo 64 KB of log lines (an escaped line break every
// 50 bytes), which the gateway passes on as the upstream wrote them. The
// gateway-http cases reach the gateway over loopback HTTP instead.
func BenchmarkHop(b *testing.B) {
	e := newEnv(b, nil)
	ctx := context.Background()
	line := "2026-11-25T08:00:00Z INFO request served in 12ms\n"
	text, _ := json.Marshal(map[string]string{"message": strings.Repeat(line, (64<<10)/len(line))})
	for _, size := range []struct {
		name string
		args any
	}{{"", map[string]any{"message": "hello"}}, {"-64KB-text", json.RawMessage(text)}} {
		b.Run("direct"+size.name, func(b *testing.B) {
			c, err := e.h.Client(ctx, "claude", "testserver")
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for range b.N {
				if _, err := c.CallTool(ctx, "echo", size.args, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
		// through makes calls through the gateway, whose other end conn is.
		through := func(b *testing.B, conn mcp.Conn) {
			c, err := mcp.Connect(ctx, conn, mcp.ClientOptions{})
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if _, err := c.CallTool(ctx, "mcp_testserver_echo", size.args, nil); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.Run("gateway"+size.name, func(b *testing.B) {
			down, up := mcp.Pipe()
			go e.g.Serve(ctx, up, "claude")
			through(b, down)
		})
		b.Run("gateway-http"+size.name, func(b *testing.B) {
			hh, err := e.g.HTTP(gateway.HTTPOptions{Agent: "claude"})
			if err != nil {
				b.Fatal(err)
			}
			srv := httptest.NewServer(hh)
			defer func() {
				hh.Close()
				srv.CloseClientConnections()
				srv.Close()
			}()
			conn, err := httptransport.Dial(ctx, httptransport.Config{Server: "gw", URL: srv.URL + gateway.EndpointPath,
				Options: httptransport.Options{AllowPrivateNetworks: true}})
			if err != nil {
				b.Fatal(err)
			}
			through(b, conn)
		})
	}
}

// BenchmarkSessions1000 opens 1,000 HTTP sessions on the gateway, reports
// the memory each idle one holds (heap and goroutine stacks, server side:
// the client keeps only the session ids), then makes calls spread over
// them from 32 goroutines and reports calls/s.
func BenchmarkSessions1000(b *testing.B) {
	const sessions = 1000
	for range b.N {
		e := newEnv(b, nil)
		hh, err := e.g.HTTP(gateway.HTTPOptions{Agent: "claude", Limits: config.GatewayLimits{MaxSessions: sessions + 1, MaxRequests: 4096}})
		if err != nil {
			b.Fatal(err)
		}
		srv := httptest.NewServer(hh)
		tr := &http.Transport{MaxIdleConnsPerHost: 64}
		hc := &http.Client{Transport: tr}
		post := func(sid, body string) (string, error) {
			req, _ := http.NewRequest(http.MethodPost, srv.URL+gateway.EndpointPath, strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			if sid != "" {
				req.Header.Set("Mcp-Session-Id", sid)
			}
			resp, err := hc.Do(req)
			if err != nil {
				return "", err
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode/100 != 2 {
				return "", fmt.Errorf("status %d", resp.StatusCode)
			}
			return resp.Header.Get("Mcp-Session-Id"), nil
		}
		// The shared upstream connects on the first call, before measuring.
		warmSid, err := post("", initBody)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := post(warmSid, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"mcp_probe_echo","arguments":{}}}`); err != nil {
			b.Fatal(err)
		}
		before := memInUse()
		sids := make([]string, sessions)
		for i := range sids {
			if sids[i], err = post("", initBody); err != nil {
				b.Fatal(err)
			}
			if _, err := post(sids[i], `{"jsonrpc":"2.0","method":"notifications/initialized"}`); err != nil {
				b.Fatal(err)
			}
		}
		tr.CloseIdleConnections()
		after := memInUse()
		b.ReportMetric(float64(after-before)/sessions/1024, "KB/idle-session")

		const calls = 20000
		var next atomic.Int64
		var wg sync.WaitGroup
		t0 := time.Now()
		for range 32 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					i := next.Add(1)
					if i > calls {
						return
					}
					if _, err := post(sids[i%sessions], `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"mcp_probe_echo","arguments":{}}}`); err != nil {
						b.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		b.ReportMetric(calls/time.Since(t0).Seconds(), "calls/s")
		b.ReportMetric(float64(runtime.NumCPU()), "cores")
		hh.Close()
		srv.CloseClientConnections()
		srv.Close()
	}
}

// memInUse is the heap in use plus goroutine stacks, after a collection.
func memInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse + m.StackInuse
}

// BenchmarkLargeEcho is one 9.5 MB echo through the HTTP gateway (gap 9
// of issue 37: RSS grew by 220 MB for one). It reports the bytes
// allocated per call as a multiple of the message, the measure of the
// copies made on the way (the upstream's own log line and result, the
// gateway's and the client's reads included).
func BenchmarkLargeEcho(b *testing.B) {
	e := newEnv(b, nil)
	ctx := context.Background()
	hh, err := e.g.HTTP(gateway.HTTPOptions{Agent: "claude"})
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(hh)
	defer func() {
		hh.Close()
		srv.CloseClientConnections()
		srv.Close()
	}()
	conn, err := httptransport.Dial(ctx, httptransport.Config{Server: "gw", URL: srv.URL + gateway.EndpointPath,
		Options: httptransport.Options{AllowPrivateNetworks: true}})
	if err != nil {
		b.Fatal(err)
	}
	c, err := mcp.Connect(ctx, conn, mcp.ClientOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	msg := strings.Repeat("x", 9500<<10)
	args, _ := json.Marshal(map[string]string{"message": msg})
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	b.ResetTimer()
	for range b.N {
		if _, err := c.CallTool(ctx, "mcp_testserver_echo", json.RawMessage(args), nil); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(b.N)/float64(len(msg)), "alloc-x-message")
}

// BenchmarkFairShare is gap 6 of issue 37 as a measure: bob's calls while
// alice floods the gateway with more slow calls than her share
// (max_requests_per_agent), against bob's calls on an idle gateway, in
// the same run. It reports bob's median latency both ways and their
// ratio (the target is under 2), and fails if bob ever gets a 503.
func BenchmarkFairShare(b *testing.B) {
	e := newTenantEnv(b, config.GatewayLimits{MaxRequests: 64, MaxRequestsPerAgent: 32})
	bob := e.tenant("bob-token", "{}")
	var alice []*tenant
	for range 4 {
		alice = append(alice, e.tenant("alice-token", "{}"))
	}
	median := func() time.Duration {
		lat := make([]time.Duration, 0, b.N)
		for i := range b.N {
			start := time.Now()
			status, got := bob.send(echoCall(i, "bob"))
			lat = append(lat, time.Since(start))
			if status != http.StatusOK {
				b.Fatalf("bob got %d: %s", status, got)
			}
		}
		slices.Sort(lat)
		return lat[len(lat)/2]
	}
	b.ResetTimer()
	idle := median()
	b.StopTimer()
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var refused atomic.Int64
	for i := range 80 { // past her share of 32, and past the global cap of 64
		wg.Add(1)
		go func() {
			defer wg.Done()
			a := alice[i%len(alice)]
			for ctx.Err() == nil {
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, e.url+gateway.EndpointPath,
					strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"mcp_testserver_slow_operation","arguments":{"duration":0.2,"steps":1}}}`))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				req.Header.Set("Authorization", "Bearer alice-token")
				req.Header.Set("Mcp-Session-Id", a.sid)
				resp, err := client.Do(req)
				if err != nil {
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode == http.StatusTooManyRequests {
					refused.Add(1)
					// As a client honouring Retry-After would, but sooner.
					select {
					case <-ctx.Done():
					case <-time.After(10 * time.Millisecond):
					}
				}
			}
		}()
	}
	for refused.Load() == 0 { // the flood has filled alice's share
		time.Sleep(time.Millisecond)
	}
	b.StartTimer()
	flooded := median()
	b.StopTimer()
	stop()
	wg.Wait()
	b.ReportMetric(float64(idle.Microseconds()), "idle-p50-µs")
	b.ReportMetric(float64(flooded.Microseconds()), "flooded-p50-µs")
	b.ReportMetric(float64(flooded)/float64(idle), "flooded/idle")
}

// BenchmarkModernHTTP is a modern (2026-07-28) tools/call over loopback
// HTTP through the gateway against a legacy (2025-11-25) one, two Nexus
// clients of the same gateway and upstream taking turns call by call so
// noise hits both alike. A modern request looks up no session (it is
// served on its principal's internal one), so it should cost no more:
// modern/legacy is the ratio of their p50s, target ≤ 1.
func BenchmarkModernHTTP(b *testing.B) {
	e := newEnv(b, nil)
	ctx := context.Background()
	hh, err := e.g.HTTP(gateway.HTTPOptions{Agent: "claude"})
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(hh)
	defer func() {
		hh.Close()
		srv.CloseClientConnections()
		srv.Close()
	}()
	dial := func(version string) *mcp.Client {
		conn, err := httptransport.Dial(ctx, httptransport.Config{Server: "gw", URL: srv.URL + gateway.EndpointPath,
			Options: httptransport.Options{AllowPrivateNetworks: true}})
		if err != nil {
			b.Fatal(err)
		}
		c, err := mcp.Connect(ctx, conn, mcp.ClientOptions{ProtocolVersion: version})
		if err != nil {
			b.Fatal(err)
		}
		if c.ProtocolVersion() != version {
			b.Fatalf("the client speaks %s to the gateway, not %s", c.ProtocolVersion(), version)
		}
		return c
	}
	eras := []*mcp.Client{dial(mcp.Version20251125), dial(mcp.Version20260728)}
	defer func() {
		for _, c := range eras {
			c.Close()
		}
	}()
	args := map[string]any{"message": "hello"}
	lat := make([][]time.Duration, len(eras))
	for i, c := range eras {
		for range 100 { // warm: connections, the upstream, the internal session
			if _, err := c.CallTool(ctx, "mcp_testserver_echo", args, nil); err != nil {
				b.Fatal(err)
			}
		}
		lat[i] = make([]time.Duration, 0, b.N)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		for i, c := range eras {
			t0 := time.Now()
			if _, err := c.CallTool(ctx, "mcp_testserver_echo", args, nil); err != nil {
				b.Fatal(err)
			}
			lat[i] = append(lat[i], time.Since(t0))
		}
	}
	b.StopTimer()
	legacy, modern := p50(lat[0]), p50(lat[1])
	b.ReportMetric(float64(legacy.Nanoseconds())/1e3, "legacy-p50-µs")
	b.ReportMetric(float64(modern.Nanoseconds())/1e3, "modern-p50-µs")
	b.ReportMetric(float64(modern)/float64(legacy), "modern/legacy")
}

// p50 is the median of lat (sorted in place).
func p50(lat []time.Duration) time.Duration {
	slices.Sort(lat)
	return lat[len(lat)/2]
}
