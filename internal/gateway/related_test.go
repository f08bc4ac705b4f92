package gateway_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/config"
	"github.com/nexus-mcp/nexus/internal/engine"
	"github.com/nexus-mcp/nexus/internal/gateway"
	"github.com/nexus-mcp/nexus/internal/testserver"
	httptransport "github.com/nexus-mcp/nexus/internal/transport/http"
)

// newHTTPUpstreamEnv is newTenantEnv whose agents alice and bob also see
// "web": the test server over streamable HTTP, in process on loopback.
func newHTTPUpstreamEnv(t *testing.T) *httpEnv {
	t.Helper()
	var upSrv *httptest.Server // made below: its cleanup runs before the leak check
	e := newEnvOpts(t, func(c *config.Config) {
		c.Servers = append(c.Servers, &config.Server{Name: "web", Type: config.TypeStdio, Command: []string{"web"}, Enabled: true})
		c.Agents = append(c.Agents,
			&config.Agent{Name: "alice", Permission: "yolo", Servers: []string{"web"}, Tokens: []string{"alice-token"}},
			&config.Agent{Name: "bob", Permission: "yolo", Servers: []string{"web"}, Tokens: []string{"bob-token"}})
	}, func(o *engine.Options) {
		prev := o.Transport
		o.Transport = func(ctx context.Context, srv *config.Server) (mcp.Conn, error) {
			if srv.Command[0] != "web" {
				return prev(ctx, srv)
			}
			return httptransport.Dial(ctx, httptransport.Config{Server: srv.Name, URL: upSrv.URL + "/mcp",
				Options: httptransport.Options{AllowPrivateNetworks: true}})
		}
	})
	up := testserver.NewHTTPHandler(testserver.Options{})
	upSrv = httptest.NewServer(up)
	t.Cleanup(func() {
		up.Close()
		upSrv.CloseClientConnections()
		upSrv.Close()
	})
	return serveEnv(t, e, gateway.HTTPOptions{})
}

// A log message an HTTP server sends on a request's response stream is
// that request's: the gateway gives it to the session and call it
// belongs to. Alice holds a slow call to the shared upstream while two
// more sessions of hers and one of bob's echo at once, so several of
// alice's sessions always wait on the server (the old rule dropped every
// log then): each echo's answer carries its own log line, and no other
// call's.
func TestLogStaysWithItsCall(t *testing.T) {
	e := newHTTPUpstreamEnv(t)
	holder := e.tenant("alice-token", "{}")
	alice := []*tenant{e.tenant("alice-token", "{}"), e.tenant("alice-token", "{}")}
	bob := e.tenant("bob-token", "{}")

	// The holder's call is in flight upstream once its first progress
	// arrives.
	hctx, hcancel := context.WithCancel(context.Background())
	defer hcancel()
	req, _ := http.NewRequestWithContext(hctx, http.MethodPost, e.url+gateway.EndpointPath,
		strings.NewReader(`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"mcp_web_slow_operation","arguments":{"duration":100,"steps":1000},"_meta":{"progressToken":"hold"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer alice-token")
	req.Header.Set("Mcp-Session-Id", holder.sid)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	held, ended := make(chan struct{}), make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		once := sync.Once{}
		var all strings.Builder
		for sc.Scan() {
			all.WriteString(sc.Text())
			if strings.Contains(sc.Text(), "notifications/progress") {
				once.Do(func() { close(held) })
			}
		}
		ended <- all.String()
	}()
	select {
	case <-held:
	case got := <-ended:
		t.Fatalf("the holding call ended: %d %.500s", resp.StatusCode, got)
	}
	defer holder.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":9}}`)

	type caller struct {
		name string
		tn   *tenant
	}
	callers := []caller{{"alice0", alice[0]}, {"alice1", alice[1]}, {"bob", bob}}
	const rounds = 6
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failures []string
	for _, c := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range rounds {
				marker := fmt.Sprintf("PRIVATE-%s-%d", c.name, r)
				status, got := c.tn.send(strings.Replace(echoCall(100+r, marker), "mcp_testserver_echo", "mcp_web_echo", 1))
				var why string
				switch {
				case status != http.StatusOK || !strings.Contains(got, `"result"`):
					why = fmt.Sprintf("failed: %d", status)
				case strings.Count(got, `"method":"notifications/message"`) != 1 || strings.Count(got, marker) != 2:
					why = "does not carry exactly its own log line"
				}
				for _, o := range callers {
					if o.name != c.name && strings.Contains(got, "PRIVATE-"+o.name+"-") {
						why = "carries " + o.name + "'s log"
					}
				}
				if why != "" {
					mu.Lock()
					failures = append(failures, fmt.Sprintf("%s's call %d %s: %.600s", c.name, r, why, got))
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	for _, f := range failures {
		t.Error(f)
	}
}
