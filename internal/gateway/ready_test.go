package gateway_test

import (
	"context"
	"errors"
	"io"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/config"
	"github.com/nexus-mcp/nexus/internal/engine"
	"github.com/nexus-mcp/nexus/internal/gateway"
)

// gatedEnv is newEnv plus servers slow1..slow3 (the test server), whose
// start waits until the test opens the gate, and a server "broken" whose
// command fails; dialed hears of each server's start. Its gateway
// is made with o.
func gatedEnv(t *testing.T, o gateway.Options, start string) (e *env, open func(), dialed chan string) {
	t.Helper()
	gate := make(chan struct{})
	var once sync.Once
	open = func() { once.Do(func() { close(gate) }) }
	dialed = make(chan string, 64)
	e = newEnvOpts(t, func(c *config.Config) {
		for _, n := range []string{"slow1", "slow2", "slow3"} {
			c.Servers = append(c.Servers, &config.Server{Name: n, Type: config.TypeStdio, Command: []string{"testserver"}, Enabled: true, Start: start})
		}
		c.Servers = append(c.Servers, &config.Server{Name: "broken", Type: config.TypeStdio, Command: []string{"no-such-command"}, Enabled: true})
	}, func(ho *engine.Options) {
		inner := ho.Transport
		ho.Transport = func(ctx context.Context, srv *config.Server) (mcp.Conn, error) {
			if !strings.HasPrefix(srv.Name, "slow") {
				select {
				case dialed <- srv.Name:
				default:
				}
			}
			switch {
			case srv.Name == "broken":
				return nil, errors.New(`exec: "no-such-command": executable file not found in $PATH`)
			case strings.HasPrefix(srv.Name, "slow"):
				dialed <- srv.Name
				select {
				case <-gate:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
			return inner(ctx, srv)
		}
	})
	t.Cleanup(open) // before the env's cleanup, which waits for the starts to end
	e.g.Close()
	e.g = gateway.New(e.h, o)
	return e, open, dialed
}

func hasAll(tools []mcp.Tool, prefixes ...string) bool {
	for _, p := range prefixes {
		found := false
		for _, tl := range tools {
			found = found || strings.HasPrefix(tl.Name, p)
		}
		if !found {
			return false
		}
	}
	return true
}

// Issue 42 part 2: tools/list answers with the servers that are up (here
// probe and testserver, if they are by then), not waiting for the three
// that are still starting (the old code waited for
// every server, so this first list ran into the test's deadline); when
// they come up, list_changed follows and the list has them all. The wait
// is short so the first answer comes soon, but nothing here bounds it:
// the slow servers cannot be up before the gate opens.
func TestListAnswersWithWhatIsReady(t *testing.T) {
	e, open, _ := gatedEnv(t, gateway.Options{ListWait: 20 * time.Millisecond}, "")
	ctx := ctxT(t)
	changed := make(chan string, 16)
	c := e.connect("claude", mcp.ClientOptions{OnListChanged: func(kind string) { changed <- kind }})
	tools, err := c.ListTools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"mcp_slow1_", "mcp_slow2_", "mcp_slow3_"} {
		if hasAll(tools, n) {
			t.Fatalf("the first list has %s, which cannot have started: %s", n, names(tools))
		}
	}
	open()
	// Those in-process two may or may not have been up by then: either
	// way they are in the end.
	for !hasAll(tools, "mcp_slow1_", "mcp_slow2_", "mcp_slow3_", "mcp_testserver_", "mcp_probe_") {
		select {
		case kind := <-changed:
			if kind != "tools" {
				continue
			}
		case <-ctx.Done():
			t.Fatalf("no list_changed brought the slow servers: %s", names(tools))
		}
		if tools, err = c.ListTools(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// With Eager (as `nexus serve` runs), an agent's first initialize starts
// its servers before any list asks; the old code started them on first
// use only.
func TestEagerStartsOnInitialize(t *testing.T) {
	e, _, dialed := gatedEnv(t, gateway.Options{Eager: true}, "")
	ctx := ctxT(t)
	e.connect("claude", mcp.ClientOptions{})
	seen := map[string]bool{}
	for !seen["slow1"] || !seen["slow2"] || !seen["slow3"] {
		select {
		case n := <-dialed:
			seen[n] = true
		case <-ctx.Done():
			t.Fatalf("initialize started only %v of the slow servers", seen)
		}
	}
}

// A lazy server is not started by initialize. Closing the gateway waits
// for the starts initialize began, so once the eager ones were seen and
// it is closed, any start of a lazy one would have been seen too.
func TestLazyWaitsForUse(t *testing.T) {
	e, open, dialed := gatedEnv(t, gateway.Options{Eager: true}, config.StartLazy)
	open()
	ctx := ctxT(t)
	e.connect("claude", mcp.ClientOptions{})
	seen := map[string]bool{}
	for !seen["probe"] || !seen["testserver"] || !seen["broken"] {
		select {
		case n := <-dialed:
			seen[n] = true
		case <-ctx.Done():
			t.Fatalf("initialize started only %v", seen)
		}
	}
	e.g.Close()
	for len(dialed) > 0 {
		if n := <-dialed; strings.HasPrefix(n, "slow") {
			t.Fatalf("initialize started the lazy server %s", n)
		}
	}
}

// A server whose command fails shows in /readyz (not required, so still
// ready), and the list answers without it: never a hang.
func TestReadyNamesServersThatFailed(t *testing.T) {
	e, open, _ := gatedEnv(t, gateway.Options{ListWait: 30 * time.Second}, "")
	open()
	hh, err := e.g.HTTP(gateway.HTTPOptions{Agent: "claude"})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(hh)
	t.Cleanup(func() { hh.Close(); srv.CloseClientConnections(); srv.Close() })
	ctx := ctxT(t)
	c := e.connect("claude", mcp.ClientOptions{})
	if tools, err := c.ListTools(ctx); err != nil || !hasAll(tools, "mcp_slow3_") {
		t.Fatalf("list: %v %s", err, names(tools))
	}
	resp, err := client.Get(srv.URL + gateway.ReadyPath)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	got := string(b)
	if !strings.Contains(got, `"servers_down"`) || !strings.Contains(got, `"server":"broken"`) || !strings.Contains(got, "no-such-command") || !strings.Contains(got, `"agent":"claude"`) {
		t.Errorf("/readyz does not name the server that failed: %d %s", resp.StatusCode, got)
	}
}

// A call to a server that is up is not held up by servers still
// starting: the old code resolved its exposed name by listing every
// server, waiting for the gated ones (and so ran into the deadline).
func TestCallDoesNotWaitForStartingServers(t *testing.T) {
	e, _, _ := gatedEnv(t, gateway.Options{ListWait: 20 * time.Millisecond}, "")
	ctx := ctxT(t)
	changed := make(chan string, 16)
	c := e.connect("claude", mcp.ClientOptions{OnListChanged: func(kind string) { changed <- kind }})
	// Until probe is up (list_changed says when), with the slow three
	// held at the gate throughout.
	for {
		tools, err := c.ListTools(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if hasAll(tools, "mcp_probe_") {
			break
		}
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatal("probe never came up")
		}
	}
	res, err := c.CallTool(ctx, "mcp_probe_echo", nil, nil)
	if err != nil || res.IsError {
		t.Fatalf("call: %v %+v", err, res)
	}
}
