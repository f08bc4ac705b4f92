package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/redis/go-redis/v9"

	"github.com/nexus-mcp/nexus/sdk/event"
	"github.com/nexus-mcp/nexus/sdk/plugin/plugintest"
)

// redisProc is a redis-server this test started and may stop mid-test,
// as plugintest.RedisServer starts one (loopback, a free port, no
// persistence, a temp dir) but with a handle on its process.
type redisProc struct {
	addr string
	args []string
	t    testing.TB

	mu  sync.Mutex
	cmd *exec.Cmd
}

func redisBinary(t testing.TB) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if bin, err = exec.LookPath("valkey-server"); err != nil {
			t.Fatalf("redis-server is not installed (%v); run `make testdeps` (apt-get install -y redis-server)", err)
		}
	}
	return bin
}

func freePort(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// startRedis starts a redis-server with extra config arguments
// (--requirepass PASSWORD) and stops it, by its PID, when the test ends.
func startRedis(t testing.TB, extra ...string) *redisProc {
	t.Helper()
	r := &redisProc{addr: freePort(t), args: extra, t: t}
	r.start()
	t.Cleanup(r.stop)
	return r
}

func (r *redisProc) start() {
	r.t.Helper()
	_, port, _ := net.SplitHostPort(r.addr)
	args := append([]string{"--bind", "127.0.0.1", "--port", port, "--save", "", "--appendonly", "no",
		"--dir", r.t.TempDir(), "--protected-mode", "yes"}, r.args...)
	cmd := exec.Command(redisBinary(r.t), args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	r.mu.Lock()
	r.cmd = cmd
	r.mu.Unlock()
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", r.addr, time.Second)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			r.stop()
			r.t.Fatalf("redis-server did not listen on %s within 30 s:\n%s", r.addr, out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stop kills the server by its PID and waits for it to exit.
func (r *redisProc) stop() {
	r.mu.Lock()
	cmd := r.cmd
	r.cmd = nil
	r.mu.Unlock()
	if cmd != nil {
		cmd.Process.Kill()
		cmd.Wait()
	}
}

// logBuffer collects what a limiter logs.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *logBuffer) logger() hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Output: l, Level: hclog.Info})
}

// withStore adds keys to a JSON config.
func withStore(t testing.TB, cfg string, kv ...string) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(cfg), &m); err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	b, _ := json.Marshal(m)
	return string(b)
}

// storeLimiterOf makes a Redis-backed limiter; a nil clock counts with the
// Redis server's.
func storeLimiterOf(t testing.TB, cfg string, c *clock, log hclog.Logger) *storeLimiter {
	t.Helper()
	p := policy{now: time.Now, log: log}
	if c != nil {
		p.now, p.storeNow = c.now, c.now
	}
	d, err := p.NewPolicy(context.Background(), json.RawMessage(cfg))
	if err != nil {
		t.Fatal(err)
	}
	sl, ok := d.(*storeLimiter)
	if !ok {
		t.Fatalf("config %s made a %T", cfg, d)
	}
	return sl
}

func rdb(t testing.TB, url string) *redis.Client {
	t.Helper()
	o, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(o)
	t.Cleanup(func() { c.Close() })
	return c
}

// Two replicas (two limiters, each with its own connections: the URLs
// differ in form, not in server) share one limit.
func TestStoreAcrossReplicas(t *testing.T) {
	url := plugintest.RedisServer(t) // redis://127.0.0.1:PORT/0
	c := &clock{t: time.Unix(1_700_000_000, 0)}
	cfg := `{"per_server": {"rate": "5/m"}}`
	a := storeLimiterOf(t, withStore(t, cfg, "store", url), c, nil)
	b := storeLimiterOf(t, withStore(t, cfg, "store", strings.TrimSuffix(url, "/0")), c, nil)
	if a.c == b.c || a.prefix != b.prefix {
		t.Fatalf("replicas: same client %v, prefixes %q %q", a.c == b.c, a.prefix, b.prefix)
	}
	for i, d := range []decider{a, b, a, b, a} {
		if dec := decide(t, d, call("agent"+strconv.Itoa(i), "github", "search")); dec.Action != event.Allow {
			t.Fatalf("call %d: %+v", i, dec)
		}
	}
	want := `rate limit for server "github" is 5/m (burst 5); next call allowed in 12s`
	for _, d := range []decider{a, b} {
		if dec := decide(t, d, call("x", "github", "search")); dec.Action != event.Deny || dec.Reason != want {
			t.Fatalf("sixth call: %+v", dec)
		}
	}
	c.t = c.t.Add(6 * time.Second)
	if dec := decide(t, b, call("x", "github", "search")); dec.Reason != strings.Replace(want, "12s", "6s", 1) {
		t.Fatalf("after 6 s: %+v", dec)
	}
	c.t = c.t.Add(6 * time.Second)
	if dec := decide(t, b, call("x", "github", "search")); dec.Action != event.Allow {
		t.Fatalf("after 12 s: %+v", dec)
	}
	if dec := decide(t, a, call("x", "github", "search")); dec.Action != event.Deny {
		t.Fatalf("the token was taken on the other replica: %+v", dec)
	}

	// With the Redis server's clock (no injected one), the same.
	real := withStore(t, `{"per_agent": {"rate": "5/h"}}`, "store", url)
	ra, rb := storeLimiterOf(t, real, nil, nil), storeLimiterOf(t, real, nil, nil)
	for i, d := range []decider{ra, rb, ra, rb, ra} {
		if dec := decide(t, d, call("cli", "s", "t")); dec.Action != event.Allow {
			t.Fatalf("server clock, call %d: %+v", i, dec)
		}
	}
	for _, d := range []decider{ra, rb} {
		dec := decide(t, d, call("cli", "s", "t"))
		m := regexp.MustCompile(`^rate limit for agent "cli" is 5/h \(burst 5\); next call allowed in (\S+)$`).FindStringSubmatch(dec.Reason)
		if dec.Action != event.Deny || m == nil {
			t.Fatalf("server clock, sixth call: %+v", dec)
		}
		if w, err := time.ParseDuration(m[1]); err != nil || w <= 0 || w > 12*time.Minute {
			t.Fatalf("server clock: wait %s (%v)", m[1], err)
		}
	}
}

// Each filter has buckets of its own: another config, or the same limits
// under another namespace, counts apart.
func TestStoreNamespaces(t *testing.T) {
	url := plugintest.RedisServer(t)
	c := &clock{t: time.Unix(1_700_000_000, 0)}
	one := storeLimiterOf(t, withStore(t, `{"per_agent": {"rate": "1/h"}}`, "store", url), c, nil)
	other := storeLimiterOf(t, withStore(t, `{"per_agent": {"rate": "1/h", "burst": 1}, "per_tool": {"rate": "9/h"}}`, "store", url), c, nil)
	named := storeLimiterOf(t, withStore(t, `{"per_agent": {"rate": "1/h"}}`, "store", url, "namespace", "team-a"), c, nil)
	if !regexp.MustCompile(`^nexus:ratelimit:\{cfg-[0-9a-f]{16}\}:$`).MatchString(one.prefix) || named.prefix != "nexus:ratelimit:{team-a}:" {
		t.Fatalf("prefixes %q %q", one.prefix, named.prefix)
	}
	for _, d := range []decider{one, other, named} {
		if dec := decide(t, d, call("cli", "s", "t")); dec.Action != event.Allow {
			t.Fatalf("%s: %+v", d.(*storeLimiter).prefix, dec)
		}
		if dec := decide(t, d, call("cli", "s", "t")); dec.Action != event.Deny {
			t.Fatalf("%s, second call: %+v", d.(*storeLimiter).prefix, dec)
		}
	}
	// The same limits in another order of keys are the same filter.
	a := storeLimiterOf(t, withStore(t, `{"tools": {"s.b*": {"rate": "1/m"}, "s.a": {"rate": "2/m"}}, "per_server": {"rate": "3/m"}}`, "store", url), c, nil)
	b := storeLimiterOf(t, withStore(t, `{"per_server": {"rate": "3/m"}, "tools": {"s.a": {"rate": "2/m"}, "s.b*": {"rate": "1/m"}}}`, "store", url), c, nil)
	if a.prefix != b.prefix {
		t.Fatalf("same limits, prefixes %q %q", a.prefix, b.prefix)
	}
}

// All or none, under concurrency, across two replicas: every call needs
// the agent's bucket (10) and its tool's (6 each). Whatever the order,
// exactly 10 pass, at most 6 per tool, and the tool buckets keep exactly
// the 2 tokens the agent's limit left them: a denied call took nothing.
func TestStoreAllOrNone(t *testing.T) {
	url := plugintest.RedisServer(t)
	c := &clock{t: time.Unix(1_700_000_000, 0)}
	cfg := withStore(t, `{"per_agent": {"rate": "10/h"}, "per_tool": {"rate": "6/h"}}`, "store", url)
	reps := []*storeLimiter{storeLimiterOf(t, cfg, c, nil), storeLimiterOf(t, cfg, c, nil)}
	const per = 40
	var wg sync.WaitGroup
	var mu sync.Mutex
	allowed := map[string]int{}
	errs := make(chan error, 2*per)
	for i := 0; i < 2*per; i++ {
		tool := []string{"t1", "t2"}[i%2]
		wg.Add(1)
		go func() {
			defer wg.Done()
			dec, err := reps[i/2%2].Decide(context.Background(), call("a", "s", tool))
			if err != nil {
				errs <- err
				return
			}
			switch dec.Action {
			case event.Allow:
				mu.Lock()
				allowed[tool]++
				mu.Unlock()
			case event.Deny:
				if !strings.HasPrefix(dec.Reason, "rate limit for ") {
					errs <- errors.New(dec.Reason)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if n := allowed["t1"] + allowed["t2"]; n != 10 || allowed["t1"] > 6 || allowed["t2"] > 6 {
		t.Fatalf("allowed %v", allowed)
	}
	r := rdb(t, url)
	ctx := context.Background()
	tokens := func(key string) float64 {
		t.Helper()
		v, err := r.HGet(ctx, reps[0].prefix+key, "tokens").Float64()
		if err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		return v
	}
	if a, t1, t2 := tokens("a:a"), tokens("t:s.t1"), tokens("t:s.t2"); a != 0 || t1+t2 != 2 {
		t.Fatalf("tokens left: agent %g, t1 %g, t2 %g", a, t1, t2)
	}
}

// A bucket is a hash (tokens, updated in µs) that expires when it would be
// full again, as an absent one is.
func TestStoreKeysExpire(t *testing.T) {
	url := plugintest.RedisServer(t)
	r := rdb(t, url)
	ctx := context.Background()
	c := &clock{t: time.Unix(1_700_000_000, 0)}
	l := storeLimiterOf(t, withStore(t, `{"per_agent": {"rate": "2/h"}}`, "store", url, "namespace", "exp"), c, nil)
	decide(t, l, call("cli", "s", "t"))
	key := "nexus:ratelimit:{exp}:a:cli"
	h, err := r.HGetAll(ctx, key).Result()
	if err != nil || h["tokens"] != "1" || h["updated"] != strconv.FormatInt(c.t.UnixMicro(), 10) {
		t.Fatalf("bucket %v %v", h, err)
	}
	// One token short of a burst of 2 at 2/h: full in 30 minutes.
	if ttl, err := r.PTTL(ctx, key).Result(); err != nil || ttl <= 0 || ttl > 30*time.Minute+time.Millisecond {
		t.Fatalf("ttl %s %v", ttl, err)
	}
	// A denied call writes nothing.
	decide(t, l, call("cli", "s", "t"))
	dec := decide(t, l, call("cli", "s", "t"))
	if dec.Action != event.Deny || !strings.HasSuffix(dec.Reason, "next call allowed in 30m0s") {
		t.Fatalf("third call: %+v", dec)
	}
	if h, _ := r.HGetAll(ctx, key).Result(); h["tokens"] != "0" {
		t.Fatalf("after the denial: %v", h)
	}

	// With the server's clock, a fast bucket vanishes by itself.
	fast := storeLimiterOf(t, withStore(t, `{"per_agent": {"rate": "20/s", "burst": 1}}`, "store", url, "namespace", "fast"), nil, nil)
	decide(t, fast, call("cli", "s", "t"))
	key = "nexus:ratelimit:{fast}:a:cli"
	if ttl, err := r.PTTL(ctx, key).Result(); err != nil || ttl > 51*time.Millisecond {
		t.Fatalf("fast ttl %s %v", ttl, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for r.Exists(ctx, key).Val() != 0 {
		if time.Now().After(deadline) {
			t.Fatal("a 50 ms bucket still exists after 10 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

const secret = "Sup3rSecretPw"

// noSecret fails the test if any text holds the password.
func noSecret(t *testing.T, texts ...string) {
	t.Helper()
	for _, s := range texts {
		if strings.Contains(s, secret) || strings.Contains(s, "WrongPassw0rd") {
			t.Fatalf("a password in: %s", s)
		}
	}
}

// Redis stops: calls are denied with a reason that names the store (no
// password), what failed and the fix, logged once; when it is back,
// counting goes on there.
func TestStoreDownDenies(t *testing.T) {
	srv := startRedis(t, "--requirepass", secret)
	url := "redis://default:" + secret + "@" + srv.addr + "/0"
	var log logBuffer
	c := &clock{t: time.Unix(1_700_000_000, 0)}
	l := storeLimiterOf(t, withStore(t, `{"per_agent": {"rate": "3/h"}}`, "store", url), c, log.logger())
	if dec := decide(t, l, call("cli", "s", "t")); dec.Action != event.Allow {
		t.Fatalf("with the password: %+v", dec)
	}
	srv.stop()
	where := "redis://default:***@" + srv.addr + "/0"
	for i := 0; i < 3; i++ {
		dec := decide(t, l, call("cli", "s", "t"))
		if dec.Action != event.Deny || !strings.HasPrefix(dec.Reason, "rate limit store "+where+" failed to count this call: ") ||
			!strings.Contains(dec.Reason, `the call is denied because on_store_error is "deny"`) ||
			!strings.Contains(dec.Reason, `Fix: start the store or make it reachable from this replica, or set on_store_error = "local"`) {
			t.Fatalf("store down, call %d: %+v", i, dec)
		}
		noSecret(t, dec.Reason)
	}
	if n := strings.Count(log.String(), "failed to count this call"); n != 1 {
		t.Fatalf("logged %d times:\n%s", n, log.String())
	}
	srv.start()
	if dec := decide(t, l, call("cli", "s", "t")); dec.Action != event.Allow {
		t.Fatalf("store back: %+v", dec)
	}
	if !strings.Contains(log.String(), "answers again") {
		t.Fatalf("no word of the store coming back:\n%s", log.String())
	}
	noSecret(t, log.String())

	// A wrong password: the same, and Redis's own words.
	bad := storeLimiterOf(t, withStore(t, `{"per_agent": {"rate": "3/h"}}`, "store", "redis://:WrongPassw0rd@"+srv.addr), c, nil)
	dec := decide(t, bad, call("cli", "s", "t"))
	if dec.Action != event.Deny || !strings.Contains(dec.Reason, "redis://:***@"+srv.addr+" failed to count this call: WRONGPASS") {
		t.Fatalf("wrong password: %+v", dec)
	}
	noSecret(t, dec.Reason)
}

// A store that accepts connections and never answers: store_timeout
// bounds the wait, and the reason says so.
func TestStoreTimeout(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns sync.WaitGroup
	t.Cleanup(func() { ln.Close(); conns.Wait() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			go func() { // read, never answer, until the client hangs up
				defer conns.Done()
				defer c.Close()
				buf := make([]byte, 4096)
				for {
					if _, err := c.Read(buf); err != nil {
						return
					}
				}
			}()
		}
	}()
	l := storeLimiterOf(t, withStore(t, `{"per_agent": {"rate": "3/h"}}`, "store", "redis://u:"+secret+"@"+ln.Addr().String(), "store_timeout", "200ms"), nil, nil)
	dec := decide(t, l, call("cli", "s", "t"))
	if dec.Action != event.Deny || !strings.Contains(dec.Reason, "redis://u:***@"+ln.Addr().String()+" failed to count this call: no answer within 200ms (store_timeout)") {
		t.Fatalf("hung store: %+v", dec)
	}
	noSecret(t, dec.Reason)
}

// on_store_error = "local": a store that is down counts in this process,
// with the usual reasons, logged once.
func TestStoreDownLocal(t *testing.T) {
	url := "redis://nexus:" + secret + "@" + freePort(t) // nothing listens there
	var log logBuffer
	c := &clock{t: time.Unix(1_700_000_000, 0)}
	l := storeLimiterOf(t, withStore(t, `{"per_agent": {"rate": "2/h"}}`, "store", url, "on_store_error", "local"), c, log.logger())
	for i := 0; i < 2; i++ {
		if dec := decide(t, l, call("cli", "s", "t")); dec.Action != event.Allow {
			t.Fatalf("call %d: %+v", i, dec)
		}
	}
	dec := decide(t, l, call("cli", "s", "t"))
	if dec.Reason != `rate limit for agent "cli" is 2/h (burst 2); next call allowed in 30m0s` {
		t.Fatalf("third call: %+v", dec)
	}
	out := log.String()
	if strings.Count(out, "failed to count this call") != 1 || !strings.Contains(out, `(on_store_error = "local")`) ||
		!strings.Contains(out, "redis://nexus:***@") {
		t.Fatalf("log:\n%s", out)
	}
	noSecret(t, out)
}

func TestStoreConfigErrors(t *testing.T) {
	for _, tc := range []struct{ cfg, want string }{
		{`{"store": "ftp://u:` + secret + `@h"}`, `store "ftp://u:***@h" is not a store this plugin knows: use "memory" (buckets in this process) or a Redis URL, redis://[user:password@]host:port[/db], rediss:// for TLS`},
		{`{"store": "localhost:6379"}`, `store "localhost:6379" is not a store this plugin knows`},
		{`{"store": "redis:` + secret + `@h"}`, `store "***@h" is not a store`},
		{`{"store": "redis://u:` + secret + `@h:port"}`, `store redis://u:***@h:port is not a URL: invalid port ":port" after host (the form is redis://`},
		{`{"store": "redis://u:a b` + secret + `@h"}`, `store redis://u:***@h is not a URL: net/url: invalid userinfo`},
		{`{"store": "redis:///0"}`, `store redis:///0 names no host`},
		{`{"store": "redis://h/zero"}`, `store redis://h/zero: redis: invalid database number: "zero"`},
		{`{"store": "redis://h?pool=1"}`, `redis: unexpected option: pool`},
		{`{"store": "redis://h", "store_timeout": "0s"}`, `store_timeout "0s" is not a duration between 1ms and 1m0s`},
		{`{"store": "redis://h", "store_timeout": "2m"}`, `store_timeout "2m"`},
		{`{"store": "redis://h", "on_store_error": "allow"}`, `on_store_error "allow" is not "deny"`},
		{`{"store": "redis://h", "namespace": "a:b"}`, `namespace "a:b": use 1 to 64 letters`},
		{`{"per_agent": {"rate": "2000000000/s"}}`, `per_agent: rate "2000000000/s" is more than one call a nanosecond`},
		{`{"per_agent": {"rate": "99999999999999999999/d"}}`, `is more than one call a nanosecond`},
	} {
		_, err := policy{now: time.Now}.NewPolicy(context.Background(), json.RawMessage(tc.cfg))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s:\n got %v\nwant %s", tc.cfg, err, tc.want)
		}
		if err != nil {
			noSecret(t, err.Error())
		}
	}
	// Redis need not be up to configure; "memory" and "" keep buckets here.
	for _, s := range []string{"redis://127.0.0.1:1", "rediss://u:p@h:6380/2", "unix:///run/redis.sock", "memory", ""} {
		d, err := policy{now: time.Now}.NewPolicy(context.Background(), json.RawMessage(`{"per_agent": {"rate": "1/s"}, "store": "`+s+`"}`))
		if err != nil {
			t.Errorf("%s: %v", s, err)
		} else if _, mem := d.(*limiter); mem != (s == "memory" || s == "") {
			t.Errorf("%s: %T", s, d)
		}
	}
}

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"redis://h:6379":           "redis://h:6379",
		"redis://u:p@h:6379/1":     "redis://u:***@h:6379/1",
		"redis://:p@h":             "redis://:***@h",
		"redis://p@h":              "redis://***@h",
		"rediss://u:p/a?b#c@d@h:1": "rediss://u:***@h:1",
		"u:p@h":                    "***@h",
	} {
		if got := redact(in); got != want {
			t.Errorf("redact(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestThroughHostAcrossReplicas runs the real binary twice (two replicas,
// two plugin processes) against one Redis.
func TestThroughHostAcrossReplicas(t *testing.T) {
	url := plugintest.RedisServer(t)
	replicas := []*plugintest.Plugin{plugintest.Start(t, ".", "ratelimit"), plugintest.Start(t, ".", "ratelimit")}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	links := make([]plugintest.Handler, len(replicas))
	for i, p := range replicas {
		link, err := p.Filter(ctx, "limits", "policy", map[string]any{"store": url, "per_server": map[string]any{"rate": "3/h"}})
		if err != nil {
			t.Fatal(err)
		}
		links[i] = link
	}
	for i, r := range []int{0, 1, 0} {
		if d, err := links[r].Handle(ctx, call("cli", "github", "search")); err != nil || d.Action != event.Allow {
			t.Fatalf("call %d on replica %d: %+v %v", i, r, d, err)
		}
	}
	for r := range links {
		d, err := links[r].Handle(ctx, call("cli", "github", "search"))
		if err != nil || d.Action != event.Deny || !strings.HasPrefix(d.Reason, `rate limit for server "github" is 3/h (burst 3); next call allowed in `) {
			t.Fatalf("fourth call on replica %d: %+v %v", r, d, err)
		}
	}
}

// BenchmarkDecide compares a decision in process memory with one in Redis
// on loopback (a redis-server started for the run), interleaved in the
// same loop; x-memory is the ratio.
func BenchmarkDecide(b *testing.B) {
	url := plugintest.RedisServer(b)
	cfg := `{"per_agent": {"rate": "1000000/s", "burst": 1000000000}, "per_tool": {"rate": "1000000/s", "burst": 1000000000}}`
	memD, err := policy{now: time.Now}.NewPolicy(context.Background(), json.RawMessage(cfg))
	if err != nil {
		b.Fatal(err)
	}
	redD := storeLimiterOf(b, withStore(b, cfg, "store", url), nil, nil)
	ctx := context.Background()
	e := call("cli", "github", "search")
	var mem, red time.Duration
	for b.Loop() {
		t0 := time.Now()
		d1, err1 := memD.Decide(ctx, e)
		t1 := time.Now()
		d2, err2 := redD.Decide(ctx, e)
		t2 := time.Now()
		if err1 != nil || err2 != nil || d1.Action != event.Allow || d2.Action != event.Allow {
			b.Fatalf("%v %v %+v %+v", err1, err2, d1, d2)
		}
		mem += t1.Sub(t0)
		red += t2.Sub(t1)
	}
	n := float64(b.N)
	b.ReportMetric(float64(mem.Nanoseconds())/n, "memory-ns/op")
	b.ReportMetric(float64(red.Nanoseconds())/n/1000, "redis-µs/op")
	if mem > 0 {
		b.ReportMetric(float64(red)/float64(mem), "x-memory")
	}
}
