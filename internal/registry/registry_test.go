package registry

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nexus-mcp/nexus/host/mcp"
)

var bg = context.Background()

// TestStartConnectsConcurrently proves Start dials every server at once: each
// healthy dial waits until all of them are in flight, so a sequential Start
// could never finish them. A server that fails and one that hangs past its
// own timeout hold up nobody and keep their errors for Status.
func TestStartConnectsConcurrently(t *testing.T) {
	const healthy = 6
	f := newFakeNet()
	var entered atomic.Int32
	all := make(chan struct{})
	barrier := func(ctx context.Context) error {
		if entered.Add(1) == healthy {
			close(all)
		}
		select {
		case <-all:
			return nil
		case <-time.After(10 * time.Second):
			return errors.New("the other dials never started: Start is not concurrent")
		}
	}
	cfgs := []string{}
	for i := range healthy {
		name := fmt.Sprintf("ok%d", i)
		f.server(name, "echo")
		f.hook(name, barrier)
		cfgs = append(cfgs, name)
	}
	f.hook("missing", func(context.Context) error { return errors.New(`command "nexus-no-such" not found in PATH`) })
	f.hook("hang", func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() })
	hang := srv("hang")
	hang.Timeout = 50 * time.Millisecond
	r := New(f.dial, Options{})
	t.Cleanup(r.Close)
	for _, n := range cfgs {
		r.Add(srv(n))
	}
	r.Add(srv("missing"), hang)
	off := srv("off")
	off.Enabled = false
	r.Add(off)

	r.Start(bg)

	if f.maxInflight < healthy {
		t.Errorf("at most %d dials ran at once, want %d", f.maxInflight, healthy)
	}
	for _, n := range cfgs {
		if s := statusOf(r, n); !s.Connected || s.Err != nil || s.Tools != 1 {
			t.Errorf("%s: connected=%v err=%v tools=%d", n, s.Connected, s.Err, s.Tools)
		}
	}
	if s := statusOf(r, "missing"); s.Connected || s.Err == nil || !strings.Contains(s.Err.Error(), "not found") {
		t.Errorf("missing: connected=%v err=%v", s.Connected, s.Err)
	}
	if s := statusOf(r, "hang"); s.Connected || !errors.Is(s.Err, context.DeadlineExceeded) {
		t.Errorf("hang: connected=%v err=%v", s.Connected, s.Err)
	}
	if f.count("off") != 0 {
		t.Error("a disabled server was dialed")
	}
	if _, err := r.Client(bg, "off", ""); !errors.As(err, new(*DisabledError)) {
		t.Errorf("disabled server: %v", err)
	}
	if _, err := r.Client(bg, "nope", ""); !errors.As(err, new(*NotConfiguredError)) {
		t.Errorf("unknown server: %v", err)
	}
}

// TestToolsListFails: a server whose tools/list fails stays connected with
// no tools and the error kept; RetryTools fetches again. With
// fail_if_no_tools the connection is refused, and RetryTools is an explicit
// retry that does not wait out the backoff.
func TestToolsListFails(t *testing.T) {
	f := newFakeNet()
	f.server("lenient", "a", "b")
	f.server("strict", "a")
	f.set(f.failList, "lenient", true)
	f.set(f.failList, "strict", true)
	strict := srv("strict")
	strict.FailIfNoTools = true
	r := newReg(t, f, Options{BackoffBase: time.Hour}, srv("lenient"), strict)
	r.Start(bg)

	s := statusOf(r, "lenient")
	if !s.Connected || s.ToolsErr == nil || !strings.Contains(s.ToolsErr.Error(), "on fire") || s.Tools != 0 {
		t.Fatalf("lenient: connected=%v toolsErr=%v tools=%d", s.Connected, s.ToolsErr, s.Tools)
	}
	s = statusOf(r, "strict")
	var nt *NoToolsError
	if s.Connected || !errors.As(s.Err, &nt) || !strings.Contains(s.Err.Error(), "fail_if_no_tools") {
		t.Fatalf("strict: connected=%v err=%v", s.Connected, s.Err)
	}
	if _, err := r.Client(bg, "strict", ""); err == nil {
		t.Fatal("a refused server handed out a session")
	}

	f.set(f.failList, "lenient", false)
	f.set(f.failList, "strict", false)
	if err := r.RetryTools(bg, "lenient", ""); err != nil {
		t.Fatal(err)
	}
	if s := statusOf(r, "lenient"); s.ToolsErr != nil || s.Tools != 2 {
		t.Fatalf("after RetryTools: toolsErr=%v tools=%d", s.ToolsErr, s.Tools)
	}
	if err := r.RetryTools(bg, "strict", ""); err != nil {
		t.Fatalf("RetryTools on a refused server: %v", err)
	}
	if s := statusOf(r, "strict"); !s.Connected || s.Tools != 1 {
		t.Fatalf("strict after RetryTools: connected=%v err=%v tools=%d", s.Connected, s.Err, s.Tools)
	}
}

func TestVisibility(t *testing.T) {
	f := newFakeNet()
	f.server("private", "t")
	f.server("public", "t")
	r := newReg(t, f, Options{}, srv("private"), srv("public"))
	if _, err := r.Connect(bg, "private", "alice", false); err != nil {
		t.Fatal(err)
	}
	r.Start(bg)
	if got := r.Names("bob"); !slices.Equal(got, []string{"public"}) {
		t.Errorf("bob sees %v", got)
	}
	if got := r.Names("alice"); !slices.Equal(got, []string{"private", "public"}) {
		t.Errorf("alice sees %v", got)
	}
	if r.Visible("private", "bob") || !r.Visible("private", "alice") || !r.Visible("public", "bob") {
		t.Error("Visible disagrees with Names")
	}
	_, err := r.Client(bg, "private", "bob")
	var nc *NotConfiguredError
	if !errors.As(err, &nc) || slices.Contains(nc.Known, "private") {
		t.Errorf("bob reached alice's server: %v", err)
	}
	if _, ok := r.Live("bob")["private"]; ok {
		t.Error("Live shows bob alice's server")
	}
	if _, err := r.Client(bg, "private", "alice"); err != nil {
		t.Error(err)
	}
	if s := statusOf(r, "private"); s.Owner != "alice" || s.Shared {
		t.Errorf("status owner=%q shared=%v", s.Owner, s.Shared)
	}
	// Sharing it makes it everyone's.
	if _, err := r.Connect(bg, "private", "alice", true); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Client(bg, "private", "bob"); err != nil {
		t.Errorf("shared server hidden from bob: %v", err)
	}
	if f.count("private") != 1 {
		t.Errorf("reconnecting a live server dialed again (%d dials)", f.count("private"))
	}
}

// TestReconnectOnNextUse: a session that ends (the process exited) is
// noticed at once, and the next use dials again; many users waiting on the
// dead server cause one dial, not one each.
func TestReconnectOnNextUse(t *testing.T) {
	f := newFakeNet()
	f.server("s", "t")
	var changes atomic.Int32
	clk := &clock{t: time.Unix(1e9, 0)}
	r := newReg(t, f, Options{OnChange: func(string) { changes.Add(1) }, now: clk.now}, srv("s"))
	r.Start(bg)
	c1, err := r.Client(bg, "s", "")
	if err != nil {
		t.Fatal(err)
	}
	clk.advance(time.Hour) // it ran long enough to count as healthy
	before := changes.Load()
	f.kill("s")
	// Status turns first, OnChange follows on the same goroutine: wait
	// for both (a loaded machine ran the check between them).
	eventually(t, "the registry notices the dead session and tells OnChange", func() bool {
		return !statusOf(r, "s").Connected && changes.Load() != before
	})

	var wg sync.WaitGroup
	clients := make([]*mcp.Client, 20)
	errs := make([]error, 20)
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			clients[i], errs[i] = r.Client(bg, "s", "")
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
		if clients[i] != clients[0] || clients[i] == c1 {
			t.Fatal("concurrent users got different or dead sessions")
		}
	}
	if n := f.count("s"); n != 2 {
		t.Fatalf("%d dials, want 2 (one start, one reconnection shared by 20 users)", n)
	}
	if _, err := clients[0].CallTool(bg, "t", nil, nil); err != nil {
		t.Fatal(err)
	}
}

// TestBackoffGrowsAndCaps drives a server that never connects with a fake
// clock: between attempts every use fails at once with a BackoffError
// without dialing; the wait doubles from the base and stops at the cap,
// with at most 20% jitter.
func TestBackoffGrowsAndCaps(t *testing.T) {
	f := newFakeNet()
	boom := errors.New("exit status 1: crashed at once")
	f.hook("bad", func(context.Context) error { return boom })
	clk := &clock{t: time.Unix(1e9, 0)}
	r := newReg(t, f, Options{BackoffBase: time.Second, BackoffMax: 8 * time.Second, now: clk.now}, srv("bad"))
	r.Start(bg) // attempt 1
	want := []time.Duration{1, 2, 4, 8, 8, 8}
	for i, w := range want {
		w *= time.Second
		var retry time.Duration
		for range 100 {
			_, err := r.Client(bg, "bad", "")
			var be *BackoffError
			if !errors.As(err, &be) {
				t.Fatalf("attempt %d: want a BackoffError, got %v", i+1, err)
			}
			if !errors.Is(err, boom) || be.Server != "bad" {
				t.Fatalf("BackoffError lost the cause: %v", err)
			}
			retry = be.Retry
		}
		if retry < w || retry > w+w/5 {
			t.Fatalf("after %d failures the wait is %s, want %s..%s", i+1, retry, w, w+w/5)
		}
		if n := f.count("bad"); n != i+1 {
			t.Fatalf("%d dials after %d attempts: calls during the backoff dialed", n, i+1)
		}
		clk.advance(retry)
		if _, err := r.Client(bg, "bad", ""); !errors.Is(err, boom) || errors.As(err, new(*BackoffError)) {
			t.Fatalf("after the wait the next use must dial and fail with the cause, got %v", err)
		}
	}
	if s := statusOf(r, "bad"); s.Failures != len(want)+1 || !errors.Is(s.Err, boom) {
		t.Errorf("status failures=%d err=%v", s.Failures, s.Err)
	}
}

// TestNoBusyLoop hammers a crashing server in real time with a short
// backoff: thousands of uses cost a handful of dials.
func TestNoBusyLoop(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(f *fakeNet)
	}{
		{"dial fails", func(f *fakeNet) {
			f.hook("bad", func(context.Context) error { return errors.New("crashed") })
		}},
		{"dies right after the handshake", func(f *fakeNet) {
			f.server("bad", "t")
			f.set(f.crashInit, "bad", true)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeNet()
			tc.setup(f)
			r := newReg(t, f, Options{BackoffBase: 20 * time.Millisecond, BackoffMax: 80 * time.Millisecond}, srv("bad"))
			r.Start(bg)
			uses := 0
			for end := time.Now().Add(500 * time.Millisecond); time.Now().Before(end); uses++ {
				if c, err := r.Client(bg, "bad", ""); err == nil {
					c.ListTools(bg)
				}
			}
			// 500 ms at 20+40+80+80+... ms between attempts is at most ~9 dials.
			if n := f.count("bad"); n > 15 || uses < 100 {
				t.Fatalf("%d dials for %d uses in 500 ms: the backoff does not hold", n, uses)
			}
		})
	}
}

// TestQuickDeathBacksOff: a server that dies before its tools are listed
// is a failed attempt; a healthy one that dies (of one bad call, say) gets
// one immediate reconnection, and backs off if it keeps dying; one that ran
// for a while reconnects on next use without waiting.
func TestQuickDeathBacksOff(t *testing.T) {
	f := newFakeNet()
	f.server("s", "t")
	clk := &clock{t: time.Unix(1e9, 0)}
	r := newReg(t, f, Options{BackoffBase: time.Second, now: clk.now}, srv("s"))
	f.set(f.crashInit, "s", true)
	r.Start(bg)
	// Not connected is also how it starts: wait for the failed attempt.
	eventually(t, "the dead session is noticed", func() bool { st := statusOf(r, "s"); return !st.Connected && st.Failures > 0 })
	_, err := r.Client(bg, "s", "")
	var be *BackoffError
	if !errors.As(err, &be) {
		t.Fatalf("a server that died right after connecting is retried at once: %v", err)
	}
	f.set(f.crashInit, "s", false)
	clk.advance(be.Retry)
	use := func() error {
		t.Helper()
		c, err := r.Client(bg, "s", "")
		if err == nil {
			_, err = c.CallTool(bg, "t", nil, nil)
		}
		return err
	}
	if err := use(); err != nil {
		t.Fatal(err)
	}
	dies := func() {
		t.Helper()
		f.kill("s")
		eventually(t, "the dead session is noticed", func() bool { return !statusOf(r, "s").Connected })
	}

	clk.advance(time.Hour) // healthy for an hour, then the process exits
	dies()
	if err := use(); err != nil {
		t.Fatalf("a server that ran for an hour must reconnect at once: %v", err)
	}
	dies() // at once: the first quick death of a healthy server
	if err := use(); err != nil {
		t.Fatalf("a healthy server that died once must reconnect at once: %v", err)
	}
	dies() // and again: now it is a crash loop
	err = use()
	if !errors.As(err, &be) || be.Retry < 2*time.Second {
		t.Fatalf("a server dying again right after reconnecting must back off (2 s): %v", err)
	}
	if n := f.count("s"); n != 4 {
		t.Errorf("%d dials, want 4", n)
	}
}

func TestCheckConnections(t *testing.T) {
	f := newFakeNet()
	f.server("good", "t")
	f.server("gone", "t")
	f.server("never", "t")
	f.hook("never", func(context.Context) error { return errors.New("no") })
	clk := &clock{t: time.Unix(1e9, 0)}
	r := newReg(t, f, Options{now: clk.now}, srv("good"), srv("gone"), srv("never"))
	r.Start(bg)
	if dead := r.CheckConnections(bg); len(dead) != 0 {
		t.Fatalf("healthy registry reports %v dead", dead)
	}
	clk.advance(time.Hour)
	f.kill("good")
	f.kill("gone")
	f.hook("gone", func(context.Context) error { return errors.New("the binary was deleted") })
	eventually(t, "both sessions are seen dead", func() bool {
		return !statusOf(r, "good").Connected && !statusOf(r, "gone").Connected
	})
	dead := r.CheckConnections(bg)
	if !slices.Equal(dead, []string{"gone"}) {
		t.Fatalf("CheckConnections = %v, want [gone]", dead)
	}
	if !statusOf(r, "good").Connected {
		t.Error("CheckConnections did not reconnect the server that can come back")
	}
	if f.count("never") != 1 {
		t.Error("CheckConnections dialed a server that never connected")
	}
}

func TestCloseEndsEverySession(t *testing.T) {
	f := newFakeNet()
	var clients []*mcp.Client
	r := New(f.dial, Options{})
	for i := range 5 {
		name := fmt.Sprintf("s%d", i)
		f.server(name, "t")
		r.Add(srv(name))
	}
	r.Start(bg)
	for _, c := range r.Live("") {
		clients = append(clients, c)
	}
	if len(clients) != 5 {
		t.Fatalf("%d live sessions", len(clients))
	}
	r.Close()
	for _, c := range clients {
		if c.Err() == nil {
			t.Error("a session outlived Close")
		}
	}
	if _, err := r.Client(bg, "s0", ""); err == nil {
		t.Error("Client after Close handed out a session")
	}
	n := f.count("s0")
	r.Start(bg)
	if f.count("s0") != n {
		t.Error("Start after Close dialed")
	}
}

// TestEraRemembered: the registry shows each connected server's era and
// hands the version it spoke to the next dial (mcp.WithRememberedVersion),
// so a legacy server is not probed again on every reconnection.
func TestEraRemembered(t *testing.T) {
	f := newFakeNet()
	f.server("s", "t")
	var mu sync.Mutex
	var seen []string
	f.hook("s", func(ctx context.Context) error {
		mu.Lock()
		seen = append(seen, mcp.RememberedVersion(ctx))
		mu.Unlock()
		return nil
	})
	clk := &clock{t: time.Unix(1e9, 0)}
	r := newReg(t, f, Options{now: clk.now}, srv("s"))
	r.Start(bg)
	if _, err := r.Client(bg, "s", ""); err != nil {
		t.Fatal(err)
	}
	if st := statusOf(r, "s"); st.Era != "legacy" || st.Version != mcp.LatestVersion {
		t.Fatalf("era %q, version %q", st.Era, st.Version)
	}
	clk.advance(time.Hour)
	f.kill("s")
	eventually(t, "the registry notices the dead session", func() bool { return !statusOf(r, "s").Connected })
	if _, err := r.Client(bg, "s", ""); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 2 || seen[0] != "" || seen[1] != mcp.LatestVersion {
		t.Fatalf("remembered versions at each dial: %q", seen)
	}
}
