package host_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/nexus-mcp/nexus/host"
	"github.com/nexus-mcp/nexus/internal/testenv"
)

const botToken = "bot-token-0123456789abcdef"

// embedded is an embedder's config: the in-process test server, agent
// bot with a token, and the gateway block given.
func embedded(t *testing.T, gateway string) *host.Config {
	t.Helper()
	cfg, err := host.ParseConfig([]byte(`
server "ts" {
  stdio {
    command = "nexus"
    args    = ["testserver"]
  }
}
agent "bot" {
  permission = "yolo"
  allow      = ["ts.echo"]
  tokens     = ["`+botToken+`"]
}
`+gateway), "nexus.hcl")
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// run makes a gateway in front of a host of cfg, runs it, and returns
// the URL of each listener Run started ("mcp", "console", "metrics"); the
// test's end stops it and checks Run returned nil.
func run(t *testing.T, cfg *host.Config, ho host.Options, o host.GatewayOptions) map[string]string {
	t.Helper()
	ho.Dial = inProcess
	h := host.New(cfg, ho)
	t.Cleanup(func() { h.Close() })
	ready := make(chan [2]string, 3)
	o.Ready = func(what, url string) { ready <- [2]string{what, url} }
	g, err := host.NewGateway(h, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- g.Run(ctx) }()
	t.Cleanup(func() {
		stop()
		if err := <-served; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	urls := map[string]string{}
	for _, ok := urls["mcp"]; !ok; _, ok = urls["mcp"] {
		select {
		case r := <-ready:
			urls[r[0]] = r[1]
		case err := <-served:
			served <- err
			t.Fatalf("Run returned before it listened: %v", err)
		case <-time.After(time.Minute):
			t.Fatal("the gateway did not listen within a minute")
		}
	}
	return urls
}

// rpc posts one JSON-RPC request to an MCP endpoint and returns the
// status, the response's headers and its JSON-RPC message (from a JSON
// body or the first event of an SSE stream).
func rpc(t *testing.T, url, token, session, body string) (int, http.Header, map[string]any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		sc := bufio.NewScanner(bytes.NewReader(raw))
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				raw = []byte(d)
				break
			}
		}
	}
	var msg map[string]any
	json.Unmarshal(raw, &msg)
	return resp.StatusCode, resp.Header, msg
}

const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"test","version":"1"}}}`

// initSession opens a session at url as token and returns its id.
func initSession(t *testing.T, url, token string) string {
	t.Helper()
	code, hdr, msg := rpc(t, url, token, "", initialize)
	if code != http.StatusOK || msg["result"] == nil {
		t.Fatalf("initialize: %d %v", code, msg)
	}
	id := hdr.Get("Mcp-Session-Id")
	if id == "" {
		t.Fatal("initialize: no Mcp-Session-Id")
	}
	rpc(t, url, token, id, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return id
}

// tools is the names a tools/list in session id returns.
func tools(t *testing.T, url, token, id string) []string {
	t.Helper()
	code, _, msg := rpc(t, url, token, id, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	res, _ := msg["result"].(map[string]any)
	if code != http.StatusOK || res == nil {
		t.Fatalf("tools/list: %d %v", code, msg)
	}
	var names []string
	for _, tl := range res["tools"].([]any) {
		names = append(names, tl.(map[string]any)["name"].(string))
	}
	return names
}

// An embedder's gateway from a config with a gateway block: it listens
// where the block says, takes the agents' tokens, and a client lists the
// agent's tools and calls one through it; a token nobody has is 401.
func TestGatewayFromConfig(t *testing.T) {
	urls := run(t, embedded(t, "gateway {\n  listen = \"127.0.0.1:0\"\n}\n"), host.Options{}, host.GatewayOptions{})
	url := urls["mcp"]
	if !strings.HasPrefix(url, "http://127.0.0.1:") || !strings.HasSuffix(url, "/mcp") {
		t.Fatalf("mcp URL %q", url)
	}
	id := initSession(t, url, botToken)
	if got := tools(t, url, botToken, id); len(got) != 1 || got[0] != "mcp_ts_echo" {
		t.Errorf("tools/list: %v, want [mcp_ts_echo]", got)
	}
	code, _, msg := rpc(t, url, botToken, id, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"mcp_ts_echo","arguments":{"message":"through the gateway"}}}`)
	if res, _ := msg["result"].(map[string]any); code != http.StatusOK || res == nil || !strings.Contains(fmt.Sprint(res["content"]), "through the gateway") {
		t.Errorf("tools/call: %d %v", code, msg)
	}
	if code, _, _ := rpc(t, url, "nobody-has-this-token-0123", "", initialize); code != http.StatusUnauthorized {
		t.Errorf("initialize with an unknown token: %d, want 401", code)
	}
}

// An embedder mounts the gateway's HTTP handler on a server of its own:
// with no listen address anywhere, Handler makes it on first call, each
// request acting as its token's agent; a config nobody could use it with
// is the error.
func TestGatewayHandler(t *testing.T) {
	h := host.New(embedded(t, ""), host.Options{Dial: inProcess})
	defer h.Close()
	g, err := host.NewGateway(h, host.GatewayOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	hh, err := g.Handler()
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(hh)
	defer srv.Close()
	if code, _, _ := rpc(t, srv.URL+"/mcp", "", "", initialize); code != http.StatusUnauthorized {
		t.Errorf("initialize without a token: %d, want 401", code)
	}
	id := initSession(t, srv.URL+"/mcp", botToken)
	if got := tools(t, srv.URL+"/mcp", botToken, id); len(got) != 1 || got[0] != "mcp_ts_echo" {
		t.Errorf("tools/list: %v", got)
	}

	cfg, err := host.ParseConfig([]byte(`{"mcpServers": {"ts": {"command": "nexus", "args": ["testserver"]}}}`), "mcp.json")
	if err != nil {
		t.Fatal(err)
	}
	h2 := host.New(cfg, host.Options{Dial: inProcess})
	defer h2.Close()
	g2, err := host.NewGateway(h2, host.GatewayOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer g2.Close()
	if _, err := g2.Handler(); err == nil || !strings.Contains(err.Error(), "nobody could use the gateway") {
		t.Errorf("Handler with no way in: %v", err)
	}
}

// GatewayOptions win over the block, as nexus serve's flags do: here the
// listen address; without one at all, the gateway serves stdio and Run
// does not listen.
func TestGatewayOptionsOverBlock(t *testing.T) {
	cfg := embedded(t, "gateway {\n  listen = \"127.0.0.1:1\"\n  metrics = \"127.0.0.1:2\"\n  session_store = \"memory\"\n  limits {\n    shutdown_grace = \"3s\"\n  }\n}\n")
	o := host.GatewayOptions{Listen: "127.0.0.1:0"}.Resolve(cfg)
	if o.Listen != "127.0.0.1:0" || o.Metrics != "127.0.0.1:2" || o.SessionStore != "memory" || o.Grace != 3*time.Second {
		t.Errorf("resolved: %+v", o)
	}
	if o := (host.GatewayOptions{Stdio: true}).Resolve(cfg); o.Listen != "" || o.Metrics != "127.0.0.1:2" {
		t.Errorf("resolved with Stdio: %+v (Stdio serves stdio over the block's listen)", o)
	}
	tel, err := host.OpenTelemetry(cfg, true)
	if err != nil {
		t.Fatal(err)
	}
	urls := run(t, cfg, host.Options{Telemetry: tel}, host.GatewayOptions{Listen: "127.0.0.1:0", Metrics: "127.0.0.1:0"})
	if !strings.HasPrefix(urls["mcp"], "http://127.0.0.1:") || urls["mcp"] == "http://127.0.0.1:1/mcp" {
		t.Errorf("mcp at %q", urls["mcp"])
	}
	resp, err := http.Get(urls["metrics"])
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("metrics at %q: %d", urls["metrics"], resp.StatusCode)
	}
}

// The block's oauth makes the gateway a resource server: a token that
// is not one its issuer signed is refused (401, pointing at the
// metadata it publishes) before any session opens, and the agents'
// tokens still work beside it.
func TestGatewayOAuthRefuses(t *testing.T) {
	urls := run(t, embedded(t, `gateway {
  listen     = "127.0.0.1:0"
  public_url = "https://nexus.example.com/mcp"
  oauth {
    issuer = "https://login.example.com"
    agents = { "alice@example.com" = "bot" }
  }
}
`), host.Options{}, host.GatewayOptions{})
	url := urls["mcp"]
	for _, token := range []string{"", "not-a-jwt"} {
		code, hdr, _ := rpc(t, url, token, "", initialize)
		if code != http.StatusUnauthorized || !strings.Contains(hdr.Get("Www-Authenticate"), `resource_metadata="https://nexus.example.com/.well-known/oauth-protected-resource/mcp"`) {
			t.Errorf("token %q: %d %q, want 401 with the resource metadata", token, code, hdr.Get("Www-Authenticate"))
		}
	}
	resp, err := http.Get(strings.TrimSuffix(url, "/mcp") + "/.well-known/oauth-protected-resource/mcp")
	if err != nil {
		t.Fatal(err)
	}
	meta, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(meta), "https://login.example.com") {
		t.Errorf("metadata: %d %s", resp.StatusCode, meta)
	}
	initSession(t, url, botToken)
}

// The session store option: two gateways (two replicas, in one process
// here) sharing a Redis store serve each other's sessions, so a session
// opened at one is served by the other.
func TestGatewaySessionStore(t *testing.T) {
	redis := testenv.RedisServer(t)
	gw := "gateway {\n  listen = \"127.0.0.1:0\"\n}\n"
	o := host.GatewayOptions{SessionStore: redis}
	a := run(t, embedded(t, gw), host.Options{}, o)["mcp"]
	b := run(t, embedded(t, gw), host.Options{}, o)["mcp"]
	id := initSession(t, a, botToken)
	if got := tools(t, b, botToken, id); len(got) != 1 || got[0] != "mcp_ts_echo" {
		t.Errorf("tools/list at the other replica: %v, want [mcp_ts_echo]", got)
	}
}

// The console block (with the address from GatewayOptions.Console)
// serves the web console beside the gateway; its tokens log in.
func TestGatewayConsole(t *testing.T) {
	cfg := embedded(t, "gateway {\n  listen = \"127.0.0.1:0\"\n}\nconsole {\n  tokens = [\"console-admin-0123456789abcdef\"]\n}\n")
	urls := run(t, cfg, host.Options{}, host.GatewayOptions{Console: "127.0.0.1:0"})
	resp, err := http.Get(urls["console"])
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(page), "token") {
		t.Errorf("console at %q: %d\n%s", urls["console"], resp.StatusCode, page)
	}
}

// What the config gets wrong, NewGateway says with its fix, and opens
// nothing.
func TestGatewayConfigErrors(t *testing.T) {
	for _, c := range []struct {
		name, block string
		o           host.GatewayOptions
		want        string
	}{
		{"half TLS", "", host.GatewayOptions{Listen: "127.0.0.1:0", TLSCert: "c.pem"}, "TLS has a certificate c.pem but no key"},
		{"state key", "", host.GatewayOptions{Listen: "127.0.0.1:0"}, "NEXUS_STATE_KEY: the requestState key is not 32 bytes"},
		{"metrics uncounted", "", host.GatewayOptions{Listen: "127.0.0.1:0", Metrics: "127.0.0.1:0"}, "OpenTelemetry(cfg, true)"},
		{"oauth without public URL", "gateway {\n  oauth {\n    issuer = \"https://login.example.com\"\n    agents = { \"*\" = \"bot\" }\n  }\n}\n",
			host.GatewayOptions{Listen: "127.0.0.1:0"}, "public_url"},
		{"console without tokens", "console {\n  listen = \"127.0.0.1:0\"\n}\n", host.GatewayOptions{Listen: "127.0.0.1:0"}, "the console has no tokens"},
		{"stdio agent unknown", "", host.GatewayOptions{Agent: "nobody"}, `agent "nobody" is not configured`},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.name == "state key" {
				t.Setenv("NEXUS_STATE_KEY", "short")
			}
			h := host.New(embedded(t, c.block), host.Options{Dial: inProcess})
			defer h.Close()
			g, err := host.NewGateway(h, c.o)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("NewGateway: %v, want %q", err, c.want)
			}
			if g != nil {
				g.Close()
			}
		})
	}
}
