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
	"testing"
	"time"

	"github.com/nexus-mcp/nexus/host"
	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/audit"
	"github.com/nexus-mcp/nexus/internal/config"
	"github.com/nexus-mcp/nexus/internal/console"
	"github.com/nexus-mcp/nexus/internal/diag"
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
// agents. Its budget is 50 ms: budget-ratio is the share of it used.
func BenchmarkOverview(b *testing.B) {
	k, _, _ := fakeConsole(b, &fakeServers{list: servers(500), problem: "the server exited with status 1 before answering initialize", fix: []string{"Run the command by hand to see why it exits."}},
		&fakeSessions{list: sessions(10000)})
	cookie := loginCookie(b, k)
	req := httptest.NewRequest(http.MethodGet, "http://127.0.0.1/", nil)
	req.Header.Set("Cookie", cookie)
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
}

// BenchmarkCallWhileStreaming is the gateway's p50 per tools/call (an
// in-process client, the built-in test server over stdio, an audit log
// with arguments) with no console, and with a console whose live page is
// open and reading every decision: the ratio of the two p50s, measured
// in the same run, interleaved in rounds so that the box's load falls on
// both alike.
func BenchmarkCallWhileStreaming(b *testing.B) {
	bin := testenv.Nexus(b)
	dir := b.TempDir()
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
audit {
  path              = %q
  include_arguments = true
}
`, bin, filepath.Join(dir, "audit.jsonl")), diag.Source{File: filepath.Join(dir, "nexus.hcl")})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// call is a client of a gateway over h.
	call := func(feed *audit.Feed) (func() time.Duration, func()) {
		h := host.New(cfg, host.Options{Feed: feed})
		g := host.NewGateway(h, host.GatewayOptions{})
		down, up := mcp.Pipe()
		go g.Serve(ctx, up, "claude")
		c, err := mcp.Connect(ctx, down, mcp.ClientOptions{})
		if err != nil {
			b.Fatal(err)
		}
		args := map[string]any{"message": "hello"}
		return func() time.Duration {
				start := time.Now()
				if _, err := c.CallTool(ctx, "mcp_testserver_echo", args, nil); err != nil {
					b.Fatal(err)
				}
				return time.Since(start)
			}, func() {
				c.Close()
				g.Close()
				h.Close()
			}
	}
	plain, closePlain := call(nil)
	defer closePlain()
	feed := audit.NewFeed()
	watched, closeWatched := call(feed)
	defer closeWatched()
	k, err := console.New(console.Config{Options: console.Options{Listen: "127.0.0.1:0", Tokens: []string{adminToken}}, Servers: &fakeServers{}, Feed: feed})
	if err != nil {
		b.Fatal(err)
	}
	defer k.Close()
	srv := httptest.NewServer(k)
	defer srv.Close()
	// The live page: an SSE client reading every decision.
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/decisions/stream", nil)
	req.Header.Set("Cookie", loginCookie(b, k))
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		b.Fatalf("stream: %v %v", err, resp)
	}
	read := make(chan int)
	go func() {
		n := 0
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "event: decision") {
				n++
			}
		}
		read <- n
	}()
	for range 50 { // warm both: servers started, schemas cached
		plain()
		watched()
	}
	var a, w []time.Duration
	b.ResetTimer()
	for range b.N {
		for range 20 {
			a = append(a, plain())
		}
		for range 20 {
			w = append(w, watched())
		}
	}
	b.StopTimer()
	p50 := func(d []time.Duration) float64 {
		slices.Sort(d)
		return float64(d[len(d)/2].Nanoseconds())
	}
	b.ReportMetric(p50(a)/1e3, "us-p50-plain")
	b.ReportMetric(p50(w)/1e3, "us-p50-streaming")
	b.ReportMetric(p50(w)/p50(a), "p50-ratio")
	resp.Body.Close()
	cancel()
	if n := <-read; n == 0 {
		b.Errorf("the live page read no decision")
	}
}
