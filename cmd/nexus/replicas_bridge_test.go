package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/testenv"
)

// bridgeReplica is one `nexus serve` of TestBridgeReplicas.
type bridgeReplica struct {
	url  string
	runs string // what its upstream received, as the upstream read it
	stop func() string
	kill func()
}

// bridgeConfig is a gateway in front of a legacy-only test server
// (MCP 2025-11-25 alone) whose input is copied to runs as it reads it:
// the test counts the tool calls the upstream got from there, however
// the gateway ends.
func bridgeConfig(t *testing.T, mark, key, runs string) string {
	t.Helper()
	tee, err := exec.LookPath("tee")
	if err != nil {
		t.Fatalf("tee is not installed (%v): the test counts the upstream's calls with it", err)
	}
	script := fmt.Sprintf("%s -a %q | exec %q testserver --legacy-only", tee, runs, testenv.Nexus(t))
	path := filepath.Join(t.TempDir(), "nexus.hcl")
	hcl := fmt.Sprintf(`
server "legacy" {
  prefix = ""
  stdio {
    command = "/bin/sh"
    args    = ["-c", %q]
    env     = { NEXUS_TEST_MARK = %q }
  }
}

variable "claude_token" { sensitive = true }
variable "state_key" {
  sensitive = true
  default   = %q
}

gateway {
  state_key = var.state_key
}

agent "claude" {
  permission = "yolo"
  tokens     = [var.claude_token]
}
`, script, mark, key)
	if err := os.WriteFile(path, []byte(hcl), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// upstreamCalls counts the tools/call requests of tool in the upstreams'
// input logs.
func upstreamCalls(t *testing.T, tool string, logs ...string) []int {
	t.Helper()
	out := make([]int, len(logs))
	for i, path := range logs {
		b, err := os.ReadFile(path)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		for _, line := range bytes.Split(b, []byte("\n")) {
			var req struct {
				Method string `json:"method"`
				Params struct {
					Name string `json:"name"`
				} `json:"params"`
			}
			if json.Unmarshal(line, &req) == nil && req.Method == mcp.MethodToolsCall && req.Params.Name == tool {
				out[i]++
			}
		}
	}
	return out
}

// modernCall is one MCP 2026-07-28 tools/call over streamable HTTP as
// agent claude, declaring elicitation; input and state make it a retry.
// It returns the JSON-RPC result, or the error.
func modernCall(t *testing.T, mcpURL, tool string, args map[string]any, input map[string]json.RawMessage, state string) (json.RawMessage, *mcp.RPCError) {
	t.Helper()
	meta := mcp.RequestMeta{ProtocolVersion: mcp.Version20260728, ClientInfo: &mcp.Implementation{Name: "bridge-replicas-test", Version: "1"},
		Capabilities: mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapability{Form: &struct{}{}}}}.Put(nil)
	params := map[string]any{"name": tool, "arguments": args, "_meta": meta}
	if input != nil {
		params["inputResponses"], params["requestState"] = input, state
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": mcp.MethodToolsCall, "params": params})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, mcpURL, bytes.NewReader(body))
	for k, v := range map[string]string{"Authorization": "Bearer " + claudeToken, "Content-Type": "application/json",
		"Accept": "application/json, text/event-stream", "Mcp-Protocol-Version": mcp.Version20260728, "Mcp-Method": mcp.MethodToolsCall, "Mcp-Name": tool} {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("tools/call %s at %s: %v", tool, mcpURL, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		t.Fatalf("tools/call %s at %s: reading the answer: %v", tool, mcpURL, err)
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		// The answer is the event that carries the request's id.
		sc := bufio.NewScanner(bytes.NewReader(raw))
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		found := false
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data:")
			if ok && strings.Contains(data, `"id"`) {
				raw, found = []byte(strings.TrimSpace(data)), true
			}
		}
		if !found {
			t.Fatalf("tools/call %s at %s: a stream without the answer:\n%s", tool, mcpURL, raw)
		}
	}
	var msg struct {
		Result json.RawMessage `json:"result"`
		Error  *mcp.RPCError   `json:"error"`
	}
	if err := json.Unmarshal(raw, &msg); err != nil || (msg.Result == nil && msg.Error == nil) {
		t.Fatalf("tools/call %s at %s: HTTP %d, not a JSON-RPC answer (%v):\n%s", tool, mcpURL, resp.StatusCode, err, raw)
	}
	return msg.Result, msg.Error
}

// bridgeInput is a call's input_required answer.
func bridgeInput(t *testing.T, mcpURL, tool string, args map[string]any) mcp.InputRequiredResult {
	t.Helper()
	res, rerr := modernCall(t, mcpURL, tool, args, nil, "")
	var r mcp.InputRequiredResult
	if rerr != nil || json.Unmarshal(res, &r) != nil || r.ResultType != mcp.ResultInputRequired || r.RequestState == "" || len(r.InputRequests) != 1 {
		t.Fatalf("tools/call %s at %s: want input_required with one input request and a requestState, got %s %v", tool, mcpURL, res, rerr)
	}
	return r
}

// answerAll answers every input request of r (elicitations) with name.
func answerAll(r mcp.InputRequiredResult, name string) map[string]json.RawMessage {
	out := map[string]json.RawMessage{}
	for k := range r.InputRequests {
		out[k] = json.RawMessage(`{"action":"accept","content":{"name":"` + name + `"}}`)
	}
	return out
}

// Issue 38, replicas: three `nexus serve` sharing a real redis-server
// behind a real nginx (round robin, no stickiness), each in front of its
// own legacy-only test server. Modern calls land round robin without
// errors; an elicitation's retry that lands on another replica than the
// one holding the call is forwarded there over Redis and completes; and
// when the replica holding a call is killed (SIGKILL) between the
// attempts, the retry gets a retryable error and the upstream tool does
// not run again anywhere.
func TestBridgeReplicas(t *testing.T) {
	mark := fmt.Sprintf("bridge-replicas-%d", time.Now().UnixNano())
	redis := testenv.RedisServer(t)
	key := strings.Repeat("5a", 32)
	var reps []*bridgeReplica
	var hosts, logs []string
	path := ""
	for i := range 3 {
		runs := filepath.Join(t.TempDir(), fmt.Sprintf("upstream-%d.log", i))
		u, stop, kill := serveHTTPKill(t, bridgeConfig(t, mark, key, runs), "--session-store", redis)
		pu, err := url.Parse(u)
		if err != nil {
			t.Fatal(err)
		}
		reps = append(reps, &bridgeReplica{url: u, runs: runs, stop: stop, kill: kill})
		hosts, logs, path = append(hosts, pu.Host), append(logs, runs), pu.Path
	}
	proxy := testenv.Nginx(t, hosts) + path
	logsOnFail := func() {
		if t.Failed() {
			for i, r := range reps {
				t.Logf("replica %d's stderr:\n%s", i, r.stop())
			}
		}
	}
	defer logsOnFail()

	// Round robin: every call answered, by every replica in turn.
	for i := range 6 {
		res, rerr := modernCall(t, proxy, "echo", map[string]any{"message": fmt.Sprint("hello ", i)}, nil, "")
		if rerr != nil || !strings.Contains(string(res), fmt.Sprint("hello ", i)) || !strings.Contains(string(res), `"complete"`) {
			t.Fatalf("echo %d through nginx: %s %v", i, res, rerr)
		}
	}

	// The retry on another replica than the one holding the call.
	args := map[string]any{"message": "Your name?"}
	r := bridgeInput(t, reps[0].url, "elicit", args)
	res, rerr := modernCall(t, reps[1].url, "elicit", args, answerAll(r, "ann"), r.RequestState)
	if rerr != nil || !strings.Contains(string(res), "action: accept") || !strings.Contains(string(res), "ann") {
		t.Fatalf("the retry on replica 1 of a call held by replica 0: %s %v", res, rerr)
	}
	// And through nginx, wherever each attempt lands.
	for i := range 3 {
		who := fmt.Sprint("bob", i)
		r := bridgeInput(t, proxy, "elicit", args)
		res, rerr := modernCall(t, proxy, "elicit", args, answerAll(r, who), r.RequestState)
		if rerr != nil || !strings.Contains(string(res), who) {
			t.Fatalf("elicitation %d through nginx: %s %v", i, res, rerr)
		}
	}

	// The replica holding the call is killed between the attempts.
	r = bridgeInput(t, reps[2].url, "elicit", args)
	reps[2].kill()
	_, rerr = modernCall(t, reps[0].url, "elicit", args, answerAll(r, "late"), r.RequestState)
	if rerr == nil || rerr.Code != mcp.CodeInternalError || !strings.Contains(string(rerr.Data), `"retryable":true`) {
		t.Fatalf("the retry of a call whose replica was killed: %v, want -32603 with data retryable", rerr)
	}
	t.Logf("the retry of a call whose replica was killed: %v", rerr)

	echoes := upstreamCalls(t, "echo", logs...)
	for i, n := range echoes {
		if n == 0 {
			t.Errorf("replica %d's upstream got none of the echo calls (round robin: %v)", i, echoes)
		}
	}
	// Five calls started (one, three through nginx, the killed one's):
	// none ran twice, and the retries started none.
	elicits := upstreamCalls(t, "elicit", logs...)
	if n := elicits[0] + elicits[1] + elicits[2]; n != 5 {
		t.Errorf("the upstreams got %d elicit calls (%v by replica), want 5: one per call", n, elicits)
	}
	if elicits[2] == 0 {
		t.Errorf("the killed replica's upstream has no elicit call: %v", elicits)
	}
	for i, r := range reps {
		if i != 2 {
			r.stop()
		}
	}
	noneLeft(t, mark)
}
