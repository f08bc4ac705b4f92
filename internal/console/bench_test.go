package console_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/config"
	"github.com/nexus-mcp/nexus/internal/console"
	"github.com/nexus-mcp/nexus/internal/diag"
	"github.com/nexus-mcp/nexus/internal/engine"
	"github.com/nexus-mcp/nexus/internal/gateway"
	"github.com/nexus-mcp/nexus/internal/gateway/store"
	"github.com/nexus-mcp/nexus/internal/testenv"
)

// loginCookie logs in to k, in process, and returns the cookie.
func loginCookie(b testing.TB, k http.Handler) string {
	req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/login", strings.NewReader(url.Values{"token": {adminToken}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "http://127.0.0.1")
	w := httptest.NewRecorder()
	k.ServeHTTP(w, req)
	c, _, _ := strings.Cut(w.Header().Get("Set-Cookie"), ";")
	if c == "" {
		b.Fatalf("login: %d %s", w.Code, w.Body)
	}
	return c
}

// BenchmarkOverview renders the overview for 500 servers (a third of
// them failed, with their error and fix) and 10,000 sessions of 50
// agents: of one replica alone, and of four sharing a session store,
// where the page also decodes the other three's statuses (500 servers
// each). Its budget is 50 ms: budget-ratio is the share of it used.
func BenchmarkOverview(b *testing.B) {
	srv := func() *fakeServers {
		return &fakeServers{list: servers(500), problem: "the server exited with status 1 before answering initialize", fix: []string{"Run the command by hand to see why it exits."}}
	}
	for _, n := range []int{1, 4} {
		b.Run(fmt.Sprintf("replicas=%d", n), func(b *testing.B) {
			st := store.NewMemory()
			var k *console.Console
			for i := range n {
				c, err := console.New(console.Config{Options: console.Options{Listen: "127.0.0.1:0", Tokens: []string{adminToken}},
					Servers: srv(), Sessions: &fakeSessions{list: sessions(10000)}, Replica: fmt.Sprintf("replica-%d", i), Store: "redis://bench", Shared: st,
					ReportEvery: time.Hour}) // reported once: the others' reports are not the page's time
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { c.Close() })
				if i == 0 {
					k = c
				}
			}
			deadline := time.Now().Add(60 * time.Second)
			for {
				got, err := st.Reports(context.Background())
				if err != nil {
					b.Fatal(err)
				}
				if len(got) == n {
					break
				}
				if time.Now().After(deadline) {
					b.Fatalf("%d of %d replicas reported within 60 s", len(got), n)
				}
				time.Sleep(10 * time.Millisecond)
			}
			cookie := loginCookie(b, k)
			req := httptest.NewRequest(http.MethodGet, "http://127.0.0.1/", nil)
			req.Header.Set("Cookie", cookie)
			w := httptest.NewRecorder()
			k.ServeHTTP(w, req)
			if got := strings.Count(w.Body.String(), `<tr class="replica">`); got != n {
				b.Fatalf("the overview shows %d replicas, want %d", got, n)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				w := httptest.NewRecorder()
				k.ServeHTTP(w, req)
				if w.Code != http.StatusOK {
					b.Fatalf("overview: %d", w.Code)
				}
			}
			ms := float64(b.Elapsed().Nanoseconds()) / float64(b.N) / 1e6
			b.ReportMetric(ms, "ms/render")
			b.ReportMetric(ms/50, "budget-ratio")
		})
	}
}

// BenchmarkCallWhileStreaming is the gateway's p50 per tools/call (an
// in-process client, the built-in test server over stdio) with no
// console, and with a console whose live page is open and reading every
// decision: the ratio of the two p50s, measured in the same run,
// interleaved in rounds so that the box's load falls on both alike. With
// an audit log (arguments included) the record is made either way; with
// none, the console alone makes the host build it.
func BenchmarkCallWhileStreaming(b *testing.B) {
	b.Run("audit", func(b *testing.B) { callWhileStreaming(b, true) })
	b.Run("no-audit", func(b *testing.B) { callWhileStreaming(b, false) })
}

func callWhileStreaming(b *testing.B, withAudit bool) {
	bin := testenv.Nexus(b)
	dir := b.TempDir()
	auditBlock := ""
	if withAudit {
		auditBlock = fmt.Sprintf("audit {\n  path = %q\n  include_arguments = true\n}\n", filepath.Join(dir, "audit.jsonl"))
	}
	cfg, err := config.ParseHCL(fmt.Appendf(nil, `
server "testserver" {
  stdio {
    command = %q
    args    = ["testserver"]
  }
}
agent "claude" {
  permission = "yolo"
}
%s`, bin, auditBlock), diag.Source{File: filepath.Join(dir, "nexus.hcl")})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// One gateway, one upstream: the rounds differ only in whether a
	// console with a live page watches.
	h := engine.New(cfg, engine.Options{})
	defer h.Close()
	feed := h.Feed()
	g := gateway.New(h, gateway.Options{})
	defer g.Close()
	down, up := mcp.Pipe()
	go g.Serve(ctx, up, "claude")
	c, err := mcp.Connect(ctx, down, mcp.ClientOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	args := map[string]any{"message": "hello"}
	call := func() time.Duration {
		start := time.Now()
		if _, err := c.CallTool(ctx, "mcp_testserver_echo", args, nil); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	// A round is longer than the page's tick (streamTick), so the
	// page's writes fall inside the calls measured with it open.
	const round = 400
	// watch opens a console and its live page, reading every decision;
	// the func it returns waits (bounded) until the page read want
	// decisions, closes both, and says how many it read.
	watch := func() func(want int) int {
		// A page buffer the size of a round: the page gets, and this
		// measures the cost of sending, every decision.
		k, err := console.New(console.Config{Options: console.Options{Listen: "127.0.0.1:0", Tokens: []string{adminToken}}, Servers: &fakeServers{}, Feed: feed, Buffer: 2 * round})
		if err != nil {
			b.Fatal(err)
		}
		srv := httptest.NewServer(k)
		sctx, scancel := context.WithCancel(ctx)
		req, _ := http.NewRequestWithContext(sctx, http.MethodGet, srv.URL+"/decisions/stream", nil)
		req.Header.Set("Cookie", loginCookie(b, k))
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != http.StatusOK {
			b.Fatalf("stream: %v %v", err, resp)
		}
		var n atomic.Int64
		read := make(chan int)
		go func() {
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() {
				if strings.HasPrefix(sc.Text(), "event: decision") {
					n.Add(1)
				}
			}
			read <- int(n.Load())
		}()
		return func(want int) int {
			for deadline := time.Now().Add(30 * time.Second); n.Load() < int64(want) && time.Now().Before(deadline); {
				time.Sleep(10 * time.Millisecond)
			}
			scancel()
			resp.Body.Close()
			n := <-read
			srv.Close()
			k.Close()
			return n
		}
	}
	for range 50 { // warm: the server started, schemas cached
		call()
	}
	var a, w []time.Duration
	seen := 0
	b.ResetTimer()
	for range b.N {
		for range round {
			a = append(a, call())
		}
		b.StopTimer()
		stop := watch()
		b.StartTimer()
		for range round {
			w = append(w, call())
		}
		b.StopTimer()
		seen += stop(round)
		b.StartTimer()
	}
	b.StopTimer()
	if seen != round*b.N {
		b.Errorf("the live page read %d decisions of %d", seen, round*b.N)
	}
	p50 := func(d []time.Duration) float64 {
		slices.Sort(d)
		return float64(d[len(d)/2].Nanoseconds())
	}
	b.ReportMetric(p50(a)/1e3, "us-p50-plain")
	b.ReportMetric(p50(w)/1e3, "us-p50-streaming")
	b.ReportMetric(p50(w)/p50(a), "p50-ratio")
}
