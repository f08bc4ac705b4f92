package httptransport

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/testserver"
)

// The baseline: a plain net/http JSON POST round trip to a handler that
// reads the body and answers with a small JSON object, over the same kind of
// keep-alive loopback connection.

const plainBody = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add","arguments":{"a":1,"b":2}}}`
const plainReply = `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"3"}],"structuredContent":{"sum":3}}}`

func plainServer(tb testing.TB) (string, *http.Client) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, plainReply)
	}))
	tb.Cleanup(srv.Close)
	return srv.URL, &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
}

func plainPost(tb testing.TB, client *http.Client, url string) {
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader([]byte(plainBody)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := client.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := io.ReadAll(resp.Body); err != nil {
		tb.Fatal(err)
	}
	resp.Body.Close()
}

func benchClient(tb testing.TB) *mcp.Client {
	h := testserver.NewHTTPHandler(testserver.Options{})
	srv := httptest.NewServer(h)
	tb.Cleanup(func() { h.Close(); srv.CloseClientConnections(); srv.Close() })
	conn, err := Dial(context.Background(), Config{Server: "bench", URL: srv.URL})
	if err != nil {
		tb.Fatal(err)
	}
	c, err := mcp.Connect(context.Background(), conn, mcp.ClientOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	return c
}

var addArgs = map[string]any{"a": 1, "b": 2}

func mcpCall(tb testing.TB, c *mcp.Client, tool string, args any) {
	res, err := c.CallTool(context.Background(), tool, args, nil)
	if err != nil || res.IsError {
		tb.Fatalf("%s: %+v %v", tool, res, err)
	}
}

// BenchmarkToolCall: sequential tools/call over HTTP to the built-in test
// server, beside the plain POST baseline. "add" is answered as JSON; "echo"
// logs first, so its answer is an SSE stream.
func BenchmarkToolCall(b *testing.B) {
	b.Run("plain-post", func(b *testing.B) {
		url, client := plainServer(b)
		b.ReportAllocs()
		for b.Loop() {
			plainPost(b, client, url)
		}
	})
	b.Run("mcp-json", func(b *testing.B) {
		c := benchClient(b)
		b.ReportAllocs()
		for b.Loop() {
			mcpCall(b, c, "add", addArgs)
		}
	})
	// The floor set by the protocol layer: the same call over an in-memory
	// pipe, no HTTP at all.
	b.Run("mcp-pipe", func(b *testing.B) {
		a, s := mcp.Pipe()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { testserver.New(testserver.Options{}).Serve(ctx, s); close(done) }()
		c, err := mcp.Connect(ctx, a, mcp.ClientOptions{})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { c.Close(); cancel(); <-done })
		b.ReportAllocs()
		for b.Loop() {
			mcpCall(b, c, "add", addArgs)
		}
	})
	b.Run("mcp-sse", func(b *testing.B) {
		c := benchClient(b)
		msg := map[string]any{"message": "hi"}
		b.ReportAllocs()
		for b.Loop() {
			mcpCall(b, c, "echo", msg)
		}
	})
}

// BenchmarkToolCallRatio interleaves a plain POST and an MCP tools/call in
// every iteration, so that both see the same machine state, and reports
// the ratio of their medians (target: at most 1.5).
func BenchmarkToolCallRatio(b *testing.B) {
	url, client := plainServer(b)
	c := benchClient(b)
	var plain, call []time.Duration
	for b.Loop() {
		t0 := time.Now()
		plainPost(b, client, url)
		t1 := time.Now()
		mcpCall(b, c, "add", addArgs)
		t2 := time.Now()
		plain = append(plain, t1.Sub(t0))
		call = append(call, t2.Sub(t1))
	}
	p50 := func(d []time.Duration) float64 {
		slices.Sort(d)
		return float64(d[len(d)/2].Nanoseconds())
	}
	pp, cp := p50(plain), p50(call)
	b.ReportMetric(pp, "plain-p50-ns")
	b.ReportMetric(cp, "mcp-p50-ns")
	b.ReportMetric(cp/pp, "p50-ratio")
}
