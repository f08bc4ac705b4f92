package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nexus-mcp/nexus/sdk/event"
	"github.com/nexus-mcp/nexus/sdk/plugin/plugintest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	plugintest.Cleanup()
	os.Exit(code)
}

func call(agent, server, tool string) *event.Event {
	return &event.Event{ABI: event.ABI, Phase: event.PhaseRequest, Method: "tools/call",
		Agent: event.Agent{ID: agent, Permission: event.Trusted}, Server: event.Server{Name: server}, Tool: &event.Tool{Name: tool}}
}

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func newLimiter(t *testing.T, cfg string, c *clock) decider {
	t.Helper()
	d, err := policy{now: c.now, storeNow: c.now}.NewPolicy(context.Background(), json.RawMessage(cfg))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

type decider interface {
	Decide(ctx context.Context, e *event.Event) (event.Decision, error)
}

func decide(t *testing.T, d decider, e *event.Event) event.Decision {
	t.Helper()
	dec, err := d.Decide(context.Background(), e)
	if err != nil {
		t.Fatal(err)
	}
	return dec
}

// eachStore runs a test with the buckets in process memory and in a real
// Redis (a redis-server on loopback, started for the test): the same
// calls must get the same decisions and reasons.
func eachStore(t *testing.T, cfg string, f func(t *testing.T, d decider, c *clock)) {
	t.Run("memory", func(t *testing.T) {
		c := &clock{t: time.Unix(1_700_000_000, 0)}
		f(t, newLimiter(t, cfg, c), c)
	})
	t.Run("redis", func(t *testing.T) {
		c := &clock{t: time.Unix(1_700_000_000, 0)}
		d := newLimiter(t, withStore(t, cfg, "store", plugintest.RedisServer(t)), c)
		if _, ok := d.(*storeLimiter); !ok {
			t.Fatalf("a %T", d)
		}
		f(t, d, c)
	})
}

func TestBuckets(t *testing.T) {
	eachStore(t, `{"per_agent": {"rate": "3/m"}, "per_tool": {"rate": "10/m", "burst": 2},
		"tools": {"github.delete_*": {"rate": "1/h"}, "github.delete_repo": {"rate": "2/h"}}}`, testBuckets)
}

func testBuckets(t *testing.T, d decider, c *clock) {

	// per_tool: a burst of 2, then wait 6s (10 a minute).
	for i := 0; i < 2; i++ {
		if a := decide(t, d, call("cli", "fs", "read")).Action; a != event.Allow {
			t.Fatalf("call %d: %s", i, a)
		}
	}
	dec := decide(t, d, call("other", "fs", "read"))
	if dec.Action != event.Deny || dec.Reason != `rate limit for tool "fs.read" is 10/m (burst 2); next call allowed in 6s` {
		t.Fatalf("third read: %+v", dec)
	}
	// A denied call takes no token from the other buckets.
	c.t = c.t.Add(6 * time.Second)
	if a := decide(t, d, call("cli", "fs", "read")).Action; a != event.Allow {
		t.Fatalf("after 6s: %s", a)
	}
	// per_agent: cli made 3 calls in this minute.
	dec = decide(t, d, call("cli", "fs", "write"))
	if dec.Action != event.Deny || !strings.Contains(dec.Reason, `agent "cli" is 3/m`) {
		t.Fatalf("agent limit: %+v", dec)
	}
	// The exact tool limit wins over the glob.
	for i := 0; i < 2; i++ {
		if a := decide(t, d, call("a", "github", "delete_repo")).Action; a != event.Allow {
			t.Fatalf("delete_repo %d: %s", i, a)
		}
	}
	dec = decide(t, d, call("b", "github", "delete_repo"))
	if !strings.Contains(dec.Reason, "2/h") || !strings.Contains(dec.Reason, "next call allowed in 30m0s") {
		t.Fatalf("delete_repo: %+v", dec)
	}
	decide(t, d, call("c", "github", "delete_branch"))
	dec = decide(t, d, call("d", "github", "delete_branch"))
	if !strings.Contains(dec.Reason, `tool "github.delete_branch" is 1/h`) || !strings.Contains(dec.Reason, "1h0m0s") {
		t.Fatalf("delete_branch: %+v", dec)
	}
}

// Listing tools spends nothing: only calls count.
func TestListingIsFree(t *testing.T) {
	eachStore(t, `{"per_agent": {"rate": "1/h"}}`, testListingIsFree)
}

func testListingIsFree(t *testing.T, d decider, _ *clock) {
	list := call("a", "github", "get_issue")
	list.Method = "tools/list"
	for range 5 {
		if dec := decide(t, d, list); dec.Action != event.Allow {
			t.Fatalf("a listing was limited: %+v", dec)
		}
	}
	if dec := decide(t, d, call("a", "github", "get_issue")); dec.Action != event.Allow {
		t.Fatalf("the first call after listing: %+v", dec)
	}
	if dec := decide(t, d, call("a", "github", "get_issue")); dec.Action != event.Deny {
		t.Fatalf("the second call: %+v", dec)
	}
}

func TestSweepBoundsMemory(t *testing.T) {
	c := &clock{t: time.Unix(1_700_000_000, 0)}
	d := newLimiter(t, `{"per_agent": {"rate": "1/s"}}`, c).(*limiter)
	for i := 0; i < maxBuckets+10; i++ {
		d.Decide(context.Background(), call("agent"+strconv.Itoa(i), "s", "t"))
	}
	c.t = c.t.Add(2 * time.Second)
	d.Decide(context.Background(), call("new", "s", "t"))
	if n := len(d.buckets); n > 10 {
		t.Errorf("%d buckets kept after they all refilled", n)
	}
}

// TestThroughHost runs the real binary as the host runs a policy filter.
func TestThroughHost(t *testing.T) {
	// The deadline starts after the build: a cold build on a busy
	// machine can take longer than the calls are given.
	p := plugintest.Start(t, ".", "ratelimit")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	link, err := p.Filter(ctx, "limits", "policy", map[string]any{"per_server": map[string]any{"rate": "2/h"}})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if d, err := link.Handle(ctx, call("cli", "github", "search")); err != nil || d.Action != event.Allow {
			t.Fatalf("call %d: %+v %v", i, d, err)
		}
	}
	d, err := link.Handle(ctx, call("cli", "github", "search"))
	if err != nil || d.Action != event.Deny || d.Reason != `rate limit for server "github" is 2/h (burst 2); next call allowed in 30m0s` {
		t.Fatalf("third call: %+v %v", d, err)
	}
	// Another filter on the same plugin has its own buckets.
	other, err := p.Filter(ctx, "other", "policy", map[string]any{"per_server": map[string]any{"rate": "5/h"}})
	if err != nil {
		t.Fatal(err)
	}
	if d, err := other.Handle(ctx, call("cli", "github", "search")); err != nil || d.Action != event.Allow {
		t.Fatalf("other filter: %v %v", d, err)
	}
	// A config the schema refuses, with its source.
	_, err = p.Filter(ctx, "bad", "policy", map[string]any{"per_tool": map[string]any{"rate": "ten a minute"}})
	var ce *plugintest.ConfigError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "/per_tool/rate") || !strings.Contains(err.Error(), "nexus.hcl") {
		t.Fatalf("bad config: %v", err)
	}
}
