package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	mcpgoclient "github.com/mark3labs/mcp-go/client"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nexus-mcp/nexus/bench/internal/echo"
	"github.com/nexus-mcp/nexus/host/mcp"
	httptransport "github.com/nexus-mcp/nexus/internal/transport/http"
	"github.com/nexus-mcp/nexus/internal/transport/httpserver"
)

// The HTTP rows: every client calls the echo server (bench/internal/echo,
// as over stdio) behind Nexus's streamable HTTP handler on loopback; the
// baseline is a plain net/http JSON POST to a handler that answers with
// the same bytes, fixed.

// httpServer serves the echo server at /mcp on 127.0.0.1 for tb.
func httpServer(tb testing.TB) string {
	srv := echo.Server()
	h := httpserver.New(func(ctx context.Context, conn mcp.Conn, _ *httpserver.Session) error { return srv.Serve(ctx, conn) }, httpserver.Options{})
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	hs := httptest.NewServer(mux)
	tb.Cleanup(func() {
		h.Close()
		hs.CloseClientConnections()
		hs.Close()
	})
	return hs.URL + "/mcp"
}

// minimalProcess starts cmd/minimalecho --listen on a loopback port and
// returns its MCP endpoint; it stops when tb ends.
func minimalProcess(tb testing.TB) string {
	addr := freeAddr(tb)
	tb.Cleanup(process(tb, "minimalecho listening on", "", bins.minimal, "--listen", addr))
	return "http://" + addr + "/mcp"
}

// cannedReply is what the trivial handler sends back: the echo server's
// answer to request, byte for byte.
var cannedReply = []byte(`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hello"}]}}`)

type rawPost struct {
	url    string
	client *http.Client
	stop   func()
}

func newRawPost(tb testing.TB) *rawPost {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Write(cannedReply)
	}))
	return &rawPost{url: srv.URL, client: &http.Client{Transport: &http.Transport{}}, stop: srv.Close}
}

// newRawPostProcess is the same POST to cmd/postecho, a server in a
// process of its own, as a gateway is.
func newRawPostProcess(tb testing.TB) *rawPost {
	addr := freeAddr(tb)
	stop := process(tb, "postecho listening on", "", bins.postecho, addr)
	return &rawPost{url: "http://" + addr + "/", client: &http.Client{Transport: &http.Transport{}}, stop: stop}
}

func (r *rawPost) call(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.url, bytes.NewReader([]byte(request)))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := r.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err == nil && len(b) != len(cannedReply) {
		err = fmt.Errorf("unexpected reply %q", b)
	}
	return err
}

func (r *rawPost) close() {
	r.client.CloseIdleConnections()
	r.stop()
}

func newNexusHTTP(tb testing.TB, url string) *nexusClient {
	return dialNexus(tb, httptransport.Config{Server: "echo", URL: url}, "")
}

func newSDKHTTP(tb testing.TB, url string) *sdkClient {
	client := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "1"}, nil)
	s, err := client.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: url}, nil)
	if err != nil {
		tb.Fatal(err)
	}
	return &sdkClient{s: s}
}

func newMCPGoHTTP(tb testing.TB, url string) *mcpgoClient {
	c, err := mcpgoclient.NewStreamableHttpClient(url)
	if err != nil {
		tb.Fatal(err)
	}
	if err := c.Start(context.Background()); err != nil {
		tb.Fatal(err)
	}
	var init mcpgo.InitializeRequest
	init.Params.ProtocolVersion = mcpgo.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcpgo.Implementation{Name: "bench", Version: "1"}
	if _, err := c.Initialize(context.Background(), init); err != nil {
		tb.Fatal(err)
	}
	return &mcpgoClient{c: c}
}

var httpContenders = []contender{
	{"rawpost", func(tb testing.TB) caller { return newRawPost(tb) }},
	{"nexus", func(tb testing.TB) caller { return newNexusHTTP(tb, httpServer(tb)) }},
	{"go-sdk", func(tb testing.TB) caller { return newSDKHTTP(tb, httpServer(tb)) }},
	{"mcp-go", func(tb testing.TB) caller { return newMCPGoHTTP(tb, httpServer(tb)) }},
}

// httpClientContenders are the same clients against bench/internal/minimal
// in a process of its own (cmd/minimalecho --listen), and the POST against
// cmd/postecho: every server a client reaches over HTTP is in another
// process. In this one, client and server share the Go scheduler, and a
// client that runs the exchange on its own goroutine (Nexus) is measured
// waiting for the server's goroutine to be woken instead of doing its own
// work.
var httpClientContenders = []contender{
	{"rawpost", func(tb testing.TB) caller { return newRawPostProcess(tb) }},
	{"nexus", func(tb testing.TB) caller { return newNexusHTTP(tb, minimalProcess(tb)) }},
	{"go-sdk", func(tb testing.TB) caller { return newSDKHTTP(tb, minimalProcess(tb)) }},
	{"mcp-go", func(tb testing.TB) caller { return newMCPGoHTTP(tb, minimalProcess(tb)) }},
}

// BenchmarkHTTPRoundTrip measures one sequential tools/call over streamable
// HTTP per contender (the raw POST gets fixed bytes back).
func BenchmarkHTTPRoundTrip(b *testing.B) { roundTrips(b, httpContenders) }

// BenchmarkHTTPRatio interleaves the contenders call by call and reports
// each one's p50 over the baseline's (the raw POST for nexus; nexus for the
// SDKs). The servers run in this process, so the ratios include the
// server's share, which is the same test server for all three clients.
func BenchmarkHTTPRatio(b *testing.B) {
	clientRatios(b, interleaved(b, httpContenders))
}

// clientRatios reports the HTTP contenders' ratios from their p50s: Nexus
// over the raw POST, each SDK over Nexus.
func clientRatios(b *testing.B, p50 []float64) {
	b.ReportMetric(p50[1]/p50[0], "nexus/rawpost")
	b.ReportMetric(p50[2]/p50[1], "go-sdk/nexus")
	b.ReportMetric(p50[3]/p50[1], "mcp-go/nexus")
}

// BenchmarkHTTPClientRatio is BenchmarkHTTPRatio against a server that
// does almost nothing (bench/internal/minimal), as the raw POST's handler
// does, each in a process of its own: the ratios are the clients' own,
// not diluted by the work of a server all of them share. Call by call,
// each call finds its server asleep, and waking it is most of every
// contender's time; in blocks of 100 the servers are awake, as in a
// conversation, and the clients' own work shows.
func BenchmarkHTTPClientRatio(b *testing.B) {
	byTurns(b, httpClientContenders, clientRatios)
}

// TestHTTPPeersAgree makes sure every HTTP contender completes calls, so a
// benchmark never measures a broken client.
func TestHTTPPeersAgree(t *testing.T) {
	peersAgree(t, httpContenders)
	peersAgree(t, httpClientContenders)
}
