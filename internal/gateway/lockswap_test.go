package gateway_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/lock"
)

// A lockfile swapped while agents are connected (a console's accept, or
// the file changed by another replica) that changes which tools an agent
// sees is announced as a server's own change would be: the agent's
// legacy session gets notifications/tools/list_changed, and its modern
// subscriptions/listen stream (tools opted in) gets it tagged with the
// subscription's id; their next listing follows the new lockfile. Both
// ways: a tool released, then withheld again.
func TestLockSwapListChanged(t *testing.T) {
	l := &lock.Lock{}
	e := newEnvLocked(t, nil, l)
	ctx := ctxT(t)
	without, with := pinWithoutAdd(t, ctx, e) // add: withheld, new to the lockfile
	l.Put(without)
	l.Put(&lock.Server{Name: "probe"})
	released := &lock.Lock{}
	released.Put(with)
	released.Put(&lock.Server{Name: "probe"})

	changed := make(chan string, 8)
	c := e.connect("claude", mcp.ClientOptions{OnListChanged: func(kind string) { changed <- kind }})
	listed := func() string {
		t.Helper()
		tools, err := c.ListTools(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return names(tools)
	}
	if strings.Contains(listed(), "mcp_testserver_add") {
		t.Fatal("a tool the lockfile does not pin is listed")
	}
	m := e.modern(t, "claude")
	lctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := m.call(lctx, mcp.MethodSubscriptionsListen, map[string]any{"notifications": map[string]any{"toolsListChanged": true}})
		done <- err
	}()
	defer func() { cancel(); <-done }()
	ack := m.next(t, mcp.NotificationSubscriptionsAcked)

	heard := func(what string) {
		t.Helper()
		select {
		case kind := <-changed:
			if kind != "tools" {
				t.Errorf("%s: the legacy session heard list_changed of %s", what, kind)
			}
		case <-ctx.Done():
			t.Fatalf("%s: the legacy session heard no list_changed", what)
		}
		n := m.next(t, "notifications/tools/list_changed")
		if id := subscriptionID(n); id == "" || id != subscriptionID(ack) {
			t.Errorf("%s: the listen stream's list_changed %s lacks its subscription id", what, n.params)
		}
	}

	e.h.SetLock(released) // the console's accept
	heard("released")
	if !strings.Contains(listed(), "mcp_testserver_add") {
		t.Error("the released tool is not listed after the swap")
	}
	raw, err := m.call(ctx, mcp.MethodToolsList, nil)
	if err != nil || !strings.Contains(string(raw), "mcp_testserver_add") {
		t.Errorf("the modern listing after the swap: %v", err)
	}

	e.h.SetLock(l) // the pin dropped again (another replica wrote the file)
	heard("withheld")
	if strings.Contains(listed(), "mcp_testserver_add") {
		t.Error("the withheld tool is still listed after the swap")
	}
}

// subscriptionID is the _meta subscription id of a listen stream's
// notification.
func subscriptionID(n note) string {
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	json.Unmarshal(n.params, &p)
	return string(p.Meta[mcp.MetaSubscriptionID])
}
