package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nexus-mcp/nexus/internal/testenv"
)

// replicasResult is the RESULT line of testdata/replicas-client.mjs.
type replicasResult struct {
	SessionID        string   `json:"sessionId"`
	SessionIDAfter   string   `json:"sessionIdAfter"`
	ToolsBefore      int      `json:"toolsBefore"`
	ToolsAfter       int      `json:"toolsAfter"`
	CallsBefore      int      `json:"callsBefore"`
	Calls            int      `json:"calls"`
	Answered         int      `json:"answered"`
	Mismatched       int      `json:"mismatched"`
	Failed           int      `json:"failed"`
	SamplingRequests int      `json:"samplingRequests"`
	Samples          int      `json:"samples"`
	Subscribed       bool     `json:"subscribed"`
	Updated          int      `json:"updated"`
	Duplicates       int      `json:"duplicates"`
	Errors           []string `json:"errors"`
	Failures         []string `json:"failures"`
}

// check holds a run to what the script does: the same session throughout,
// every call after the pause answered once by its own answer, both
// sampling requests answered, the subscription made, the same tools.
func (res replicasResult) check(t *testing.T, calls int) {
	t.Helper()
	if res.SessionID == "" || res.SessionIDAfter != res.SessionID {
		t.Errorf("session %q, then %q", res.SessionID, res.SessionIDAfter)
	}
	if res.Calls != calls || res.Answered != calls || res.Failed != 0 || res.Mismatched != 0 || res.Duplicates != 0 || res.CallsBefore != 3 {
		t.Errorf("calls: %+v", res)
	}
	if res.SamplingRequests != 2 || res.Samples != 2 {
		t.Errorf("sampling: %d requests answered, %d sample calls right; want 2 and 2", res.SamplingRequests, res.Samples)
	}
	if !res.Subscribed || res.ToolsBefore == 0 || res.ToolsAfter != res.ToolsBefore {
		t.Errorf("subscribed %v, tools %d then %d", res.Subscribed, res.ToolsBefore, res.ToolsAfter)
	}
}

// replicasClient runs testdata/replicas-client.mjs (the official
// TypeScript SDK) against url with opts added to its url and token. When
// the script prints READY-TO-KILL, atKill runs (nil: nothing), then the
// script is told to go on. It returns the script's RESULT, its output and
// whether it exited 0; it fails the test if there is no RESULT.
func replicasClient(t *testing.T, mcpURL string, opts map[string]any, atKill func()) (replicasResult, string, bool) {
	t.Helper()
	node := testenv.Node(t)
	sdk := testenv.NPMPackage(t, "@modelcontextprotocol/sdk")
	all := map[string]any{"url": mcpURL, "token": claudeToken}
	for k, v := range opts {
		all[k] = v
	}
	raw, _ := json.Marshal(all)
	script, _ := filepath.Abs(filepath.Join("testdata", "replicas-client.mjs"))
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script, sdk, string(raw))
	cmd.WaitDelay = 10 * time.Second
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var out bytes.Buffer
	cmd.Stderr = lockedWriter{&mu, &out}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var res replicasResult
	gotResult, sawReady := false, false
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		mu.Lock()
		out.WriteString(line + "\n")
		mu.Unlock()
		switch {
		case line == "READY-TO-KILL" && !sawReady:
			sawReady = true
			if atKill != nil {
				atKill()
			}
			if _, err := io.WriteString(stdin, "go on\n"); err != nil {
				t.Errorf("writing to the script's stdin: %v", err)
			}
		case strings.HasPrefix(line, "RESULT "):
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "RESULT ")), &res); err != nil {
				t.Errorf("RESULT line: %v", err)
			} else {
				gotResult = true
			}
		}
	}
	stdin.Close()
	err = cmd.Wait()
	mu.Lock()
	output := out.String()
	mu.Unlock()
	if !gotResult {
		t.Fatalf("the SDK client printed no RESULT (%v):\n%s", err, output)
	}
	return res, output, err == nil && !strings.Contains(output, "FAIL:")
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// The harness of the replicas test (issue 16) with one replica: the
// official SDK through a real nginx to `nexus serve`, the whole session
// (tools, calls, sampling, a subscription) before and after the point
// where the replicas test kills one.
func TestReplicasClientSingle(t *testing.T) {
	mark := fmt.Sprintf("replicas-single-%d", time.Now().UnixNano())
	config := gatewayConfig(t, mark)
	direct, stop := serveHTTP(t, config)
	u, err := url.Parse(direct)
	if err != nil {
		t.Fatal(err)
	}
	proxy := testenv.Nginx(t, []string{u.Host}) + u.Path

	const calls = 12
	res, out, ok := replicasClient(t, proxy, map[string]any{"calls": calls, "parallel": 3}, nil)
	if !ok {
		t.Fatalf("the SDK client failed:\n%s", out)
	}
	res.check(t, calls)
	// One replica, nothing killed: the SDK has nothing to complain about.
	if res.Duplicates != 0 || len(res.Errors) != 0 {
		t.Errorf("the SDK reported errors: %q", res.Errors)
	}
	if log := stop(); t.Failed() {
		t.Logf("nexus serve's stderr:\n%s", log)
	}
	noneLeft(t, mark)
}

// Issue 16, end to end: three `nexus serve --session-store redis://...`
// replicas sharing a real redis-server, a real nginx in front of them
// (round robin, no stickiness), and the official TypeScript SDK client
// through nginx: it lists, calls, subscribes, answers sampling requests
// (each answer a POST that may land on another replica than the one that
// asked); then one replica is killed with SIGKILL and the session goes on
// through the others, with every call answered once, by its own answer.
func TestReplicasThroughNginx(t *testing.T) {
	mark := fmt.Sprintf("replicas-%d", time.Now().UnixNano())
	config := gatewayConfig(t, mark)
	redis := testenv.RedisServer(t)
	var hosts []string
	var stops []func() string
	var kills []func()
	path := ""
	for range 3 {
		u, stop, kill := serveHTTPKill(t, config, "--session-store", redis)
		pu, err := url.Parse(u)
		if err != nil {
			t.Fatal(err)
		}
		hosts, stops, kills, path = append(hosts, pu.Host), append(stops, stop), append(kills, kill), pu.Path
	}
	// The nginx configuration users are given, with these replicas.
	site, err := os.ReadFile(filepath.Join(testenv.Root(t), "deploy", "nginx", "nexus.conf"))
	if err != nil {
		t.Fatal(err)
	}
	proxy := testenv.NginxSite(t, string(site), hosts) + path

	const calls = 24
	res, out, ok := replicasClient(t, proxy, map[string]any{"calls": calls, "parallel": 3}, func() { kills[1]() })
	if !ok {
		t.Fatalf("the SDK client failed:\n%s", out)
	}
	res.check(t, calls)
	for i, stop := range stops {
		if i == 1 {
			continue
		}
		if log := stop(); t.Failed() {
			t.Logf("replica %d's stderr:\n%s", i, log)
		}
	}
	noneLeft(t, mark)
}
