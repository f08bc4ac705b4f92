package gateway_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/config"
	"github.com/nexus-mcp/nexus/internal/gateway"
)

// newTenantEnv is an HTTP gateway with two more agents, alice and bob,
// who both see the test server and call it on shared connections.
func newTenantEnv(t testing.TB, l config.GatewayLimits) *httpEnv {
	t.Helper()
	e := newEnv(t, func(c *config.Config) {
		c.Agents = append(c.Agents,
			&config.Agent{Name: "alice", Permission: "yolo", Servers: []string{"testserver", "probe"}, Tokens: []string{"alice-token"}},
			&config.Agent{Name: "bob", Permission: "yolo", Servers: []string{"testserver", "probe"}, Tokens: []string{"bob-token"}})
	})
	return serveEnv(t, e, gateway.HTTPOptions{Limits: l})
}

// tenant is one downstream session of an agent.
type tenant struct {
	e          *httpEnv
	token, sid string
}

func (e *httpEnv) tenant(token, caps string) *tenant {
	e.t.Helper()
	body := strings.Replace(initBody, `"capabilities":{}`, `"capabilities":`+caps, 1)
	resp, got := e.post(body, map[string]string{"Authorization": "Bearer " + token})
	if resp.StatusCode != http.StatusOK {
		e.t.Fatalf("initialize as %s: %d %s", token, resp.StatusCode, got)
	}
	tn := &tenant{e: e, token: token, sid: resp.Header.Get("Mcp-Session-Id")}
	tn.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return tn
}

// send POSTs a message in the session and returns the whole answer.
func (tn *tenant) send(body string) (int, string) {
	resp, got := tn.e.post(body, map[string]string{"Authorization": "Bearer " + tn.token, "Mcp-Session-Id": tn.sid})
	return resp.StatusCode, got
}

func echoCall(id int, msg string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"mcp_testserver_echo","arguments":{"message":%q}}}`, id, msg)
}

// listen holds the session's GET stream open and collects what comes on
// it until stop is called.
func (tn *tenant) listen(t *testing.T) (stop func() string) {
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, tn.e.url+gateway.EndpointPath, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Authorization", "Bearer "+tn.token)
	req.Header.Set("Mcp-Session-Id", tn.sid)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		cancel()
		t.Fatalf("GET stream: %v %v", err, resp)
	}
	var b strings.Builder
	done := make(chan struct{})
	go func() {
		defer close(done)
		io.Copy(&b, bufio.NewReader(resp.Body))
	}()
	return func() string {
		cancel()
		<-done
		resp.Body.Close()
		return b.String()
	}
}

// Gap 1 of issue 37: bob, holding GET /mcp, received alice's echo
// argument as a log message, and POST answers carried other sessions'
// logs (a 9.5 MB echo's answer was 85.5 MB). Now alice's and bob's calls
// run on connections of their own agent, and a log no request claims
// reaches the one session waiting on the server, or nobody: nothing of
// alice's reaches bob, and an answer holds its result and its own log at
// most.
func TestTenantIsolation(t *testing.T) {
	e := newTenantEnv(t, config.GatewayLimits{})
	alice := []*tenant{e.tenant("alice-token", "{}"), e.tenant("alice-token", "{}")}
	bob := e.tenant("bob-token", "{}")
	stop := bob.listen(t)
	pad := strings.Repeat("p", 64<<10)
	const rounds = 8
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		bobSaw   strings.Builder
		failures []string
	)
	fail := func(format string, args ...any) {
		mu.Lock()
		failures = append(failures, fmt.Sprintf(format, args...))
		mu.Unlock()
	}
	for i, a := range alice {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range rounds {
				marker := fmt.Sprintf("ALICE-PRIVATE-%d-%d-", i, r)
				status, got := a.send(echoCall(100+r, marker+pad))
				if status != http.StatusOK || !strings.Contains(got, marker) {
					fail("alice %d's call %d: %d %.200s", i, r, status, got)
				}
				// The result, and the call's own log line at most.
				if len(got) > 2*(len(marker)+len(pad))+4096 {
					fail("alice %d's answer is %d bytes for a %d-byte message: it carries others' logs", i, len(got), len(marker)+len(pad))
				}
				if strings.Contains(got, fmt.Sprintf("ALICE-PRIVATE-%d-", 1-i)) || strings.Contains(got, "BOB-") {
					fail("alice %d's answer carries another session's log", i)
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for r := range rounds {
			status, got := bob.send(echoCall(200+r, "BOB-"+pad))
			if status != http.StatusOK {
				fail("bob's call %d: %d %.200s", r, status, got)
			}
			mu.Lock()
			bobSaw.WriteString(got)
			mu.Unlock()
		}
	}()
	wg.Wait()
	// One more call of bob's after alice's: whatever was on its way to
	// him has been queued by now.
	_, got := bob.send(echoCall(300, "BOB-last"))
	bobSaw.WriteString(got)
	bobSaw.WriteString(stop())
	for _, f := range failures {
		t.Error(f)
	}
	if strings.Contains(bobSaw.String(), "ALICE-PRIVATE") {
		i := strings.Index(bobSaw.String(), "ALICE-PRIVATE")
		t.Errorf("bob received alice's argument: %.300s", bobSaw.String()[max(0, i-200):])
	}
}

// A notification that belongs to a request goes to that request's
// session: alice and bob use the same progress token at once, and each
// gets only the progress of their own call.
func TestProgressStaysWithItsCall(t *testing.T) {
	e := newTenantEnv(t, config.GatewayLimits{})
	var wg sync.WaitGroup
	for _, who := range []string{"alice", "bob"} {
		tn := e.tenant(who+"-token", "{}")
		wg.Add(1)
		go func() {
			defer wg.Done()
			status, got := tn.send(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"mcp_testserver_slow_operation","arguments":{"duration":0.2,"steps":4},"_meta":{"progressToken":"same"}}}`)
			if status != http.StatusOK || strings.Count(got, "notifications/progress") != 4 || !strings.Contains(got, "completed 4 steps") {
				t.Errorf("%s's call: %d %s", who, status, got)
			}
		}()
	}
	wg.Wait()
}

// Gap 9 of issue 37: 30 sessions declaring sampling started 30 upstream
// processes. Past max_upstream_sessions_per_agent, a session that would
// need connections of its own is refused at initialize, saying why and
// what to do; other agents and sessions that share are not affected.
func TestUpstreamSessionsPerAgent(t *testing.T) {
	e := newTenantEnv(t, config.GatewayLimits{MaxUpstreamSessionsPerAgent: 2})
	sampling := `{"sampling":{}}`
	e.tenant("alice-token", sampling)
	e.tenant("alice-token", `{"roots":{}}`)
	body := strings.Replace(initBody, `"capabilities":{}`, `"capabilities":`+sampling, 1)
	resp, got := e.post(body, map[string]string{"Authorization": "Bearer alice-token"})
	if !strings.Contains(got, "max_upstream_sessions_per_agent") || !strings.Contains(got, `\"alice\" already has 2 sessions`) || strings.Contains(got, `"result"`) {
		t.Errorf("alice's third session of her own: %d %s", resp.StatusCode, got)
	}
	// Sharing still works for her, and bob has his own allowance.
	if status, got := e.tenant("alice-token", "{}").send(echoCall(1, "hi")); status != http.StatusOK || !strings.Contains(got, "hi") {
		t.Errorf("alice sharing: %d %s", status, got)
	}
	e.tenant("bob-token", sampling)
}

// Gap 6 of issue 37, its second half: after alice's flood of slow calls
// ended, bob's calls timed out for minutes, queued on the upstream
// connection behind hers. Now each agent's calls travel on connections
// of its own: while alice's calls fill every handler the upstream has
// and more wait behind them, bob's call to the same server is answered.
func TestFloodDoesNotQueueOtherAgents(t *testing.T) {
	e := newTenantEnv(t, config.GatewayLimits{})
	const handlers, flood = 32, 40 // an mcp.Server's default MaxHandlers, and more
	// The blocked calls report their cancellation; the probe's channel
	// holds fewer. This stops once they have.
	go func() {
		for {
			select {
			case <-e.probe.cancelled:
			case <-time.After(2 * time.Second):
				return
			}
		}
	}()
	alice := e.connect("alice", mcp.ClientOptions{})
	bob := e.connect("bob", mcp.ClientOptions{})
	ctx, cancel := context.WithCancel(ctxT(t))
	var wg sync.WaitGroup
	for range flood {
		wg.Add(1)
		go func() {
			defer wg.Done()
			alice.CallTool(ctx, "mcp_probe_block", nil, nil)
		}()
	}
	for range handlers {
		<-e.probe.started
	}
	res, err := bob.CallTool(ctxT(t), "mcp_probe_echo", map[string]string{"x": "bob is served"}, nil)
	if err != nil || len(res.Content) == 0 || !strings.Contains(res.Content[0].Text, "bob is served") {
		t.Errorf("bob during alice's flood: %v %+v", err, res)
	}
	cancel()
	wg.Wait()
}
