package gateway_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/nexus-mcp/nexus/internal/gateway/store"
)

// Two subscriptions made at once on two replicas both stay in the record
// (each replica once saved its whole list, and one overwrote the other).
func TestReplicasKeepEachOthersSubscriptions(t *testing.T) {
	st := store.NewMemory()
	rs := newReplicas(t, st, 2)
	lost := 0
	for range 10 {
		sid := rs[0].open("claude-token")
		hdr := map[string]string{"Authorization": "Bearer claude-token", "Mcp-Session-Id": sid}
		if resp, body := rs[1].post(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, hdr); resp.StatusCode != 200 {
			t.Fatalf("restore: %d %s", resp.StatusCode, body)
		}
		var wg sync.WaitGroup
		for i, uri := range []string{"file:///readme.txt", "file:///config.json"} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				resp, body := rs[i].post(`{"jsonrpc":"2.0","id":3,"method":"resources/subscribe","params":{"uri":"`+uri+`"}}`, hdr)
				if resp.StatusCode != 200 || strings.Contains(body, `"error"`) {
					t.Errorf("subscribe %s: %d %s", uri, resp.StatusCode, body)
				}
			}()
		}
		wg.Wait()
		// Each replica records a subscription before it answers.
		rec, err := st.Get(context.Background(), sid)
		if err != nil {
			t.Fatal(err)
		}
		if len(rec.Subscriptions) != 2 {
			lost++
			t.Logf("record after two subscriptions: %q", rec.Subscriptions)
		}
	}
	if lost > 0 {
		t.Errorf("%d of 10 sessions lost a subscription in the record", lost)
	}
}

// reviewGetOnce fails the second Get of a session after it is armed: the
// httpserver's Lookup succeeds, the gateway's restore does not.
type reviewGetOnce struct {
	store.Store
	armed atomic.Bool
	n     atomic.Int32
}

func (g *reviewGetOnce) Get(ctx context.Context, id string) (*store.Session, error) {
	if g.armed.Load() && g.n.Add(1) == 2 {
		g.armed.Store(false)
		return nil, context.DeadlineExceeded
	}
	return g.Store.Get(ctx, id)
}

// One store blip during a restore does not break the replica's instance of
// the session: the next request there takes it up (it once stayed uninitialized).
func TestReplicaRestoresAfterStoreBlip(t *testing.T) {
	st := &reviewGetOnce{Store: store.NewMemory()}
	rs := newReplicas(t, st, 2)
	sid := rs[0].open("claude-token")
	hdr := map[string]string{"Authorization": "Bearer claude-token", "Mcp-Session-Id": sid}
	st.armed.Store(true)
	var resp *http.Response
	var body string
	for range 3 { // the first may be refused (503): the store blipped
		resp, body = rs[1].post(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, hdr)
	}
	if resp.StatusCode != http.StatusOK || strings.Contains(body, "not initialized") {
		t.Errorf("the third request on the replica that restored during a store blip: %d %s", resp.StatusCode, body)
	}
}
