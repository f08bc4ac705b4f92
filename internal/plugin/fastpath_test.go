package plugin

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/nexus-mcp/nexus/sdk/event"
)

// fastState is how many fast-path connections p's process has open, and
// whether the fast path was turned off.
func fastState(p *Plugin) (open int, off bool) {
	f := p.cur.fast
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.open, f.off
}

// Policy and sanitizer calls to a plugin built with this SDK go over the
// fast path; concurrent calls each get a connection of their own (up to
// the bound) and leave them idle for the next; the socket's directory goes
// with the process.
func TestFastPath(t *testing.T) {
	m, _ := newManager(t, Options{})
	ctx := ctxT(t)
	pol, san := guardFilters(t, m)
	p := m.plugins["guard"]
	if p.cur.fast == nil {
		t.Fatal("no fast path offered to a launched plugin")
	}
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for i := range 32 {
		wg.Go(func() {
			tool := "list_repos"
			if i%2 == 0 {
				tool = "delete_repo"
			}
			d, err := pol.Handle(ctx, toolEvent(tool))
			if err == nil && (d.Action == event.Deny) != (tool == "delete_repo") {
				err = &FilterError{Msg: tool + ": " + string(d.Action)}
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	e := toolEvent("read")
	e.Phase = event.PhaseResponse
	e.Result = json.RawMessage(`{"content":[{"type":"text","text":"the secret is 42"}]}`)
	d, err := san.Handle(ctx, e)
	if err != nil || !strings.Contains(string(d.Result), "[redacted]") {
		t.Fatalf("sanitizer: %+v, %v", d, err)
	}
	open, off := fastState(p)
	if off || open < 1 || open > maxFastConns {
		t.Fatalf("fast path: %d connections, off %v", open, off)
	}
	dir := p.cur.fast.dir
	if _, err := os.Stat(dir); err != nil {
		t.Fatal(err)
	}
	m.Close()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the fast path's directory outlived the plugin: %v", err)
	}
}

// A plugin that does not listen (an older SDK's) gets its calls over the
// gRPC stream: the fast path turns itself off on the first call.
func TestFastPathFallsBack(t *testing.T) {
	m, _ := newManager(t, Options{})
	ctx := ctxT(t)
	p := openGood(t, m, "guard")
	l, err := p.Policy(ctx, "f", json.RawMessage(`{"deny_tools": ["rm"]}`))
	if err != nil {
		t.Fatal(err)
	}
	f := p.cur.fast
	f.sock += ".absent" // as if the plugin never listened
	for range 3 {
		d, err := l.Handle(ctx, toolEvent("rm"))
		if err != nil || d.Action != event.Deny {
			t.Fatalf("%+v %v", d, err)
		}
	}
	if open, off := fastState(p); !off || open != 0 {
		t.Fatalf("fast path still on (%d connections) for a plugin that does not listen", open)
	}
	if p.cur.policyStream == nil {
		t.Fatal("the calls did not go over the Decisions stream")
	}
}

// A connection without the token is closed before it is served.
func TestFastPathNeedsToken(t *testing.T) {
	m, _ := newManager(t, Options{})
	ctx := ctxT(t)
	p := openGood(t, m, "guard")
	if _, err := p.Policy(ctx, "f", json.RawMessage(`{}`)); err != nil {
		t.Fatal(err)
	}
	f := p.cur.fast
	stranger := &fastPath{dir: f.dir, sock: f.sock} // the right socket, a zero token
	_, err := stranger.call(context.Background(), 'p', nil)
	if err == nil {
		t.Fatal("a call without the token was answered")
	}
}
