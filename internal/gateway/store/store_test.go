package store_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nexus-mcp/nexus/internal/gateway/store"
	"github.com/nexus-mcp/nexus/internal/testenv"
)

// Every store passes the same suite: the in-memory one and Redis (a real
// redis-server on loopback, started for the test).
func TestMemory(t *testing.T) {
	suite(t, func(t *testing.T) store.Store { return store.NewMemory() })
}

func TestRedis(t *testing.T) {
	url := testenv.RedisServer(t)
	n := 0
	suite(t, func(t *testing.T) store.Store {
		n++ // each subtest its own keys
		s, err := store.NewRedis(store.RedisOptions{URL: url, Prefix: fmt.Sprintf("test%d:", n)})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func suite(t *testing.T, open func(t *testing.T) store.Store) {
	ctx := context.Background()
	run := func(name string, f func(t *testing.T, s store.Store)) {
		t.Run(name, func(t *testing.T) {
			s := open(t)
			defer s.Close()
			f(t, s)
		})
	}
	run("sessions", func(t *testing.T, s store.Store) {
		in := &store.Session{ID: "s1", Principal: "agent:claude", Agent: "claude", Protocol: "2025-11-25", Init: []byte(`{"clientInfo":{"name":"c"}}`), Created: time.Unix(1, 0).UTC()}
		if err := s.Create(ctx, in, time.Minute); err != nil {
			t.Fatal(err)
		}
		if err := s.Create(ctx, &store.Session{ID: "s1"}, time.Minute); !errors.Is(err, store.ErrExists) {
			t.Fatalf("create twice: %v", err)
		}
		got, err := s.Get(ctx, "s1")
		if err != nil || got.Agent != "claude" || got.Protocol != "2025-11-25" || string(got.Init) != `{"clientInfo":{"name":"c"}}` || !got.Created.Equal(in.Created) {
			t.Fatalf("get: %+v %v", got, err)
		}
		if _, err := s.Get(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("get missing: %v", err)
		}
		if err := s.Touch(ctx, "s1", time.Minute); err != nil {
			t.Fatal(err)
		}
		if err := s.Touch(ctx, "nope", time.Minute); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("touch missing: %v", err)
		}
		if err := s.Delete(ctx, "s1"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Get(ctx, "s1"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("get deleted: %v", err)
		}
		big := &store.Session{ID: "big", Init: []byte(`"` + strings.Repeat("a", store.MaxSessionBytes) + `"`)}
		if err := s.Create(ctx, big, time.Minute); !errors.Is(err, store.ErrTooLarge) {
			t.Fatalf("oversized: %v", err)
		}
	})
	run("expiry", func(t *testing.T, s store.Store) {
		if err := s.Create(ctx, &store.Session{ID: "short"}, 50*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			if _, err := s.Get(ctx, "short"); errors.Is(err, store.ErrNotFound) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("a session outlived its ttl by 10 s")
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
	run("update", func(t *testing.T, s store.Store) {
		if err := s.Create(ctx, &store.Session{ID: "u"}, time.Minute); err != nil {
			t.Fatal(err)
		}
		// Replicas updating one session at once lose nothing.
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 10 {
					err := s.Update(ctx, "u", time.Minute, func(x *store.Session) error {
						x.Subscriptions = append(x.Subscriptions, fmt.Sprintf("r%d-%d", g, i))
						return nil
					})
					if err != nil && !errors.Is(err, store.ErrConflict) {
						t.Error(err)
					}
				}
			}()
		}
		wg.Wait()
		got, err := s.Get(ctx, "u")
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, x := range got.Subscriptions {
			if seen[x] {
				t.Fatalf("%s twice", x)
			}
			seen[x] = true
		}
		if len(seen) < 70 { // ErrConflict may refuse a few under contention, never lose one it accepted
			t.Errorf("%d of 80 updates kept", len(seen))
		}
		boom := errors.New("refused by fn")
		if err := s.Update(ctx, "u", time.Minute, func(*store.Session) error { return boom }); !errors.Is(err, boom) {
			t.Errorf("fn's error: %v", err)
		}
		if err := s.Update(ctx, "missing", time.Minute, func(*store.Session) error { return nil }); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("missing: %v", err)
		}
	})
	run("streams", func(t *testing.T, s store.Store) {
		stream := store.StreamID("s2", "get")
		var ids []string
		for i := range 10 {
			id, err := s.Append(ctx, stream, []byte(fmt.Sprintf("event %d", i)), 5, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		}
		all, err := s.After(ctx, stream, "", 0)
		if err != nil || len(all) != 5 || string(all[0].Data) != "event 5" || all[4].ID != ids[9] {
			t.Fatalf("after nothing: %v %v", all, err)
		}
		rest, err := s.After(ctx, stream, ids[6], 2)
		if err != nil || len(rest) != 2 || string(rest[0].Data) != "event 7" || string(rest[1].Data) != "event 8" {
			t.Fatalf("after 6: %v %v", rest, err)
		}
		if got, err := s.After(ctx, stream, ids[9], 0); err != nil || len(got) != 0 {
			t.Fatalf("after the last: %v %v", got, err)
		}
		if _, err := s.After(ctx, stream, ids[1], 0); !errors.Is(err, store.ErrGone) {
			t.Fatalf("after a trimmed event: %v", err)
		}
		if _, err := s.After(ctx, stream, "not-an-id", 0); !errors.Is(err, store.ErrGone) {
			t.Fatalf("after a bogus id: %v", err)
		}
		if _, err := s.After(ctx, store.StreamID("s2", "never"), ids[0], 0); !errors.Is(err, store.ErrGone) {
			t.Fatalf("after, on a stream that is not kept: %v", err)
		}
		if _, err := s.Append(ctx, stream, make([]byte, store.MaxEventBytes+1), 5, time.Minute); !errors.Is(err, store.ErrTooLarge) {
			t.Fatalf("oversized event: %v", err)
		}
		s.Create(ctx, &store.Session{ID: "s2"}, time.Minute)
		if err := s.Delete(ctx, "s2"); err != nil {
			t.Fatal(err)
		}
		if got, err := s.After(ctx, stream, "", 0); err != nil || len(got) != 0 {
			t.Fatalf("a deleted session's stream: %v %v", got, err)
		}
	})
	run("pubsub", func(t *testing.T, s store.Store) {
		msgs, cancel, err := s.Subscribe(ctx, "owner-a")
		if err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			if n, err := s.Publish(ctx, "owner-a", []byte(fmt.Sprint(i))); err != nil || n != 1 {
				t.Fatalf("publish: %d subscribers, %v; want 1", n, err)
			}
		}
		if n, err := s.Publish(ctx, "owner-b", []byte("not mine")); err != nil || n != 0 {
			t.Fatalf("publish to nobody: %d subscribers, %v; want 0", n, err)
		}
		for i := range 3 {
			select {
			case m := <-msgs:
				if string(m) != fmt.Sprint(i) {
					t.Fatalf("message %d: %q", i, m)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("message %d not delivered", i)
			}
		}
		cancel()
		for range msgs { // closed when the subscription ends
		}
		// A subscriber that does not read loses messages, counted.
		slow, cancelSlow, err := s.Subscribe(ctx, "slow")
		if err != nil {
			t.Fatal(err)
		}
		defer cancelSlow()
		for i := range store.SubscriberBuffer + 20 {
			s.Publish(ctx, "slow", []byte(fmt.Sprint(i)))
		}
		deadline := time.Now().Add(10 * time.Second)
		for s.Dropped() < 20 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if s.Dropped() < 20 {
			t.Errorf("dropped %d, want 20", s.Dropped())
		}
		if len(slow) != store.SubscriberBuffer {
			t.Errorf("buffered %d", len(slow))
		}
		sub, cancelSub, _ := s.Subscribe(ctx, "x")
		if _, err := s.Publish(ctx, "x", make([]byte, store.MaxMessageBytes+1)); !errors.Is(err, store.ErrTooLarge) {
			t.Errorf("oversized message: %v", err)
		}
		cctx, stop := context.WithCancel(ctx)
		sub2, cancel2, _ := s.Subscribe(cctx, "y")
		stop() // the context ends the subscription too
		for range sub2 {
		}
		cancel2()
		cancelSub()
		for range sub {
		}
	})
	run("count", func(t *testing.T, s store.Store) {
		for i := range 5 {
			n, err := s.Count(ctx, "agent:claude", time.Hour)
			if err != nil || n != int64(i+1) {
				t.Fatalf("count %d: %d %v", i, n, err)
			}
		}
		if n, _ := s.Count(ctx, "agent:ci", time.Hour); n != 1 {
			t.Errorf("another key: %d", n)
		}
	})
	run("expire", func(t *testing.T, s store.Store) {
		stream := store.StreamID("s9", "done")
		if _, err := s.Append(ctx, stream, []byte("answer"), 5, time.Hour); err != nil {
			t.Fatal(err)
		}
		if err := s.Expire(ctx, stream, 20*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		if err := s.Expire(ctx, store.StreamID("s9", "none"), time.Second); err != nil {
			t.Fatalf("a stream that does not exist: %v", err)
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			evs, err := s.After(ctx, stream, "", 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(evs) == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the stream outlived its shortened life by 10 s")
			}
			time.Sleep(5 * time.Millisecond)
		}
	})
	run("alive", func(t *testing.T, s store.Store) {
		if ok, err := s.Alive(ctx, "r1"); ok || err != nil {
			t.Fatalf("never beat: %v %v", ok, err)
		}
		if err := s.Beat(ctx, "r1", time.Hour); err != nil {
			t.Fatal(err)
		}
		if err := s.Beat(ctx, "r2", 20*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		if ok, err := s.Alive(ctx, "r1"); !ok || err != nil {
			t.Fatalf("r1: %v %v", ok, err)
		}
		if err := s.Beat(ctx, "r1", 0); err != nil {
			t.Fatal(err)
		}
		if ok, err := s.Alive(ctx, "r1"); ok || err != nil {
			t.Fatalf("r1 said it is gone: %v %v", ok, err)
		}
		// r2 stops beating: it is dead once its ttl passes.
		deadline := time.Now().Add(10 * time.Second)
		for {
			ok, err := s.Alive(ctx, "r2")
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("r2 still alive 10 s after its 20 ms ttl")
			}
			time.Sleep(5 * time.Millisecond)
		}
	})
	run("reports", func(t *testing.T, s store.Store) {
		if got, err := s.Reports(ctx); err != nil || len(got) != 0 {
			t.Fatalf("no reports yet: %v %v", got, err)
		}
		if err := s.Report(ctx, "a", []byte(`{"a":1}`), time.Minute); err != nil {
			t.Fatal(err)
		}
		if err := s.Report(ctx, "b", []byte(`{"b":1}`), 50*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		if err := s.Report(ctx, "a", []byte(`{"a":2}`), time.Minute); err != nil { // replaces
			t.Fatal(err)
		}
		got, err := s.Reports(ctx)
		if err != nil || string(got["a"]) != `{"a":2}` || len(got) > 2 {
			t.Fatalf("reports: %q %v", got, err)
		}
		// A replica that stops reporting drops off after its ttl.
		deadline := time.Now().Add(10 * time.Second)
		for {
			got, err := s.Reports(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := got["b"]; !ok && string(got["a"]) == `{"a":2}` {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("a status outlived its ttl by 10 s: %q", got)
			}
			time.Sleep(10 * time.Millisecond)
		}
		// One that stops cleanly is gone at once.
		if err := s.Report(ctx, "a", nil, 0); err != nil {
			t.Fatal(err)
		}
		if got, err := s.Reports(ctx); err != nil || len(got) != 0 {
			t.Fatalf("after removal: %q %v", got, err)
		}
		if err := s.Report(ctx, "big", make([]byte, store.MaxReportBytes+1), time.Minute); !errors.Is(err, store.ErrTooLarge) {
			t.Fatalf("oversized status: %v", err)
		}
		// At most MaxReports are read.
		for i := range store.MaxReports + 3 {
			if err := s.Report(ctx, fmt.Sprintf("r%03d", i), []byte("x"), time.Minute); err != nil {
				t.Fatal(err)
			}
		}
		if got, err := s.Reports(ctx); err != nil || len(got) != store.MaxReports {
			t.Fatalf("reports of %d replicas: %d %v", store.MaxReports+3, len(got), err)
		}
	})
	run("close", func(t *testing.T, s store.Store) {
		if err := s.Ping(ctx); err != nil {
			t.Fatal(err)
		}
		s.Close()
		if err := s.Ping(ctx); !errors.Is(err, store.ErrClosed) {
			t.Errorf("ping after close: %v", err)
		}
		if _, err := s.Get(ctx, "x"); !errors.Is(err, store.ErrClosed) {
			t.Errorf("get after close: %v", err)
		}
	})
}

// A Redis that is not there: a clear error naming the store (without its
// password) and the likely cause, within the command timeout. The address
// is a closed loopback port: nothing leaves the machine.
func TestRedisUnreachable(t *testing.T) {
	s, err := store.NewRedis(store.RedisOptions{URL: "redis://nexus:hunter2@127.0.0.1:1/0", Timeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	err = s.Ping(context.Background())
	if err == nil || !strings.Contains(err.Error(), "redis://nexus:***@127.0.0.1:1/0") || strings.Contains(err.Error(), "hunter2") ||
		!strings.Contains(err.Error(), "is Redis or Valkey running") {
		t.Fatalf("%v", err)
	}
}

func TestOpen(t *testing.T) {
	for _, u := range []string{"", "memory"} {
		s, err := store.Open(u)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := s.(*store.Memory); !ok {
			t.Errorf("%q: %T", u, s)
		}
		s.Close()
	}
	if _, err := store.Open("mysql://u:secret@db/x"); err == nil || strings.Contains(err.Error(), "secret") || !strings.Contains(err.Error(), "redis://") {
		t.Errorf("unknown scheme: %v", err)
	}
	if _, err := store.Open("redis://[::1"); err == nil {
		t.Error("a malformed URL opened")
	}
}

// A URL that does not parse: the reason, never the password.
func TestRedisBadURL(t *testing.T) {
	_, err := store.NewRedis(store.RedisOptions{URL: "redis://u:top secret@host:6379"})
	if err == nil || strings.Contains(err.Error(), "top secret") {
		t.Errorf("%v", err)
	}
}
