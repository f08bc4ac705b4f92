package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/redis/go-redis/v9"

	"github.com/nexus-mcp/nexus/sdk/event"
	"github.com/nexus-mcp/nexus/sdk/plugin"
)

// DefaultStoreTimeout bounds each call to a Redis store whose config sets
// no store_timeout: well under the host's 5 s limit on a Decide call, so a
// hung Redis yields this plugin's own clear answer, not a killed plugin.
const DefaultStoreTimeout = time.Second

// maxStoreTimeout is the largest store_timeout accepted.
const maxStoreTimeout = time.Minute

const storeForm = `redis://[user:password@]host:port[/db], rediss:// for TLS`

var namespaceRE = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)

// storeConfig is a parsed Redis store: where, how long to wait, and what
// to do when it fails.
type storeConfig struct {
	raw     string // the URL as configured: it may hold a password
	where   string // the URL with its password masked, for every message
	secrets []string
	opts    *redis.Options
	timeout time.Duration
	local   bool   // on_store_error = "local"
	ns      string // the namespace of the filter's keys; "" = from the limits
}

// parseStore checks the store keys of a config; nil for in-process buckets.
// It does not dial: Redis need not be up when the filter is configured.
func parseStore(c config) (*storeConfig, error) {
	if c.Store == "" || c.Store == "memory" {
		return nil, nil
	}
	sc := &storeConfig{raw: c.Store, where: redact(c.Store), secrets: secrets(c.Store)}
	scheme, _, ok := strings.Cut(c.Store, "://")
	if !ok || (scheme != "redis" && scheme != "rediss" && scheme != "unix") {
		return nil, fmt.Errorf("store %q is not a store this plugin knows: use \"memory\" (buckets in this process) or a Redis URL, %s",
			sc.where, storeForm)
	}
	u, err := url.Parse(c.Store)
	if err != nil {
		// url.Error repeats the whole URL, password and all: keep its cause.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("store %s is not a URL: %s (the form is %s)", sc.where, sc.scrub(err.Error()), storeForm)
	}
	if scheme != "unix" && u.Hostname() == "" {
		return nil, fmt.Errorf("store %s names no host (the form is %s)", sc.where, storeForm)
	}
	if sc.opts, err = redis.ParseURL(c.Store); err != nil {
		return nil, fmt.Errorf("store %s: %s (the form is %s)", sc.where, sc.scrub(err.Error()), storeForm)
	}
	sc.timeout = DefaultStoreTimeout
	if c.StoreTimeout != "" {
		d, err := time.ParseDuration(c.StoreTimeout)
		if err != nil || d <= 0 || d > maxStoreTimeout {
			return nil, fmt.Errorf("store_timeout %q is not a duration between 1ms and %s (for example \"1s\" or \"500ms\")", c.StoreTimeout, maxStoreTimeout)
		}
		sc.timeout = d
	}
	switch c.OnStoreError {
	case "", "deny":
	case "local":
		sc.local = true
	default:
		return nil, fmt.Errorf("on_store_error %q is not \"deny\" (refuse calls while the store fails) or \"local\" (count in this process meanwhile)", c.OnStoreError)
	}
	if c.Namespace != "" && !namespaceRE.MatchString(c.Namespace) {
		return nil, fmt.Errorf("namespace %q: use 1 to 64 letters, digits, '.', '_' or '-'", c.Namespace)
	}
	sc.ns = c.Namespace
	o := sc.opts
	o.DialTimeout, o.ReadTimeout, o.WriteTimeout, o.PoolTimeout = sc.timeout, sc.timeout, sc.timeout, sc.timeout
	o.ContextTimeoutEnabled = true
	// One retry, for a pooled connection Redis closed (a restart): a
	// script that ran but whose reply was lost is then run twice, which
	// costs a token more, never one less.
	o.MaxRetries = 1
	// One dial per attempt: go-redis's default of five, 100 ms apart,
	// would hold every call for half a second while Redis refuses
	// connections. (After as many failed dials as the pool has
	// connections, go-redis fails fast and probes once a second.)
	o.DialerRetries = 1
	if o.ClientName == "" {
		o.ClientName = "nexus-ratelimit"
	}
	return sc, nil
}

// redact masks the credentials of a URL: redis://user:***@host:6379. A
// user with no password is masked too (redis-cli reads redis://secret@host
// as a password).
func redact(u string) string {
	at := strings.LastIndexByte(u, '@')
	if at < 0 {
		return u
	}
	start := 0
	if i := strings.Index(u, "://"); i >= 0 && i < at {
		start = i + 3
	}
	user := ""
	if i := strings.IndexByte(u[start:at], ':'); i >= 0 && start > 0 {
		user = u[start:start+i] + ":"
	}
	return u[:start] + user + "***" + u[at:]
}

// secrets are the forms a URL's password (or bare user) may take in a
// message: as written and decoded.
func secrets(u string) []string {
	at := strings.LastIndexByte(u, '@')
	if at < 0 {
		return nil
	}
	creds := u[:at]
	if i := strings.Index(creds, "://"); i >= 0 {
		creds = creds[i+3:]
	}
	if i := strings.IndexByte(creds, ':'); i >= 0 {
		creds = creds[i+1:]
	}
	if creds == "" {
		return nil
	}
	out := []string{creds}
	if d, err := url.PathUnescape(creds); err == nil && d != creds {
		out = append(out, d)
	}
	return out
}

// scrub masks the password wherever a library's message repeats it.
func (sc *storeConfig) scrub(msg string) string {
	for _, s := range sc.secrets {
		msg = strings.ReplaceAll(msg, s, "***")
	}
	return msg
}

// Clients are shared by every filter on the same store: a Decider lives as
// long as the plugin, and a host that reconfigures its filters must not
// leave a connection pool behind each time.
var (
	clientsMu  sync.Mutex
	clients    = map[string]*redis.Client{}
	loggerOnce sync.Once
)

func client(sc *storeConfig, log hclog.Logger) *redis.Client {
	loggerOnce.Do(func() { redis.SetLogger(redisLog{log.Named("redis")}) })
	key := sc.raw + "\x00" + sc.timeout.String()
	clientsMu.Lock()
	defer clientsMu.Unlock()
	c := clients[key]
	if c == nil {
		c = redis.NewClient(sc.opts)
		clients[key] = c
	}
	return c
}

// redisLog hands go-redis's own log lines (dial retries and the like) to
// the plugin's logger, at debug level, instead of bare stderr.
type redisLog struct{ l hclog.Logger }

func (r redisLog) Printf(_ context.Context, format string, v ...any) {
	r.l.Debug(strings.TrimSpace(fmt.Sprintf(format, v...)))
}

// takeScript checks every bucket of a call and takes a token from each,
// or from none: one script, so it is atomic across replicas.
//
// KEYS are the call's buckets, each a hash of tokens and updated (µs since
// the epoch). ARGV[1] is the time in µs, or "" to use the Redis server's
// clock; then each bucket's burst and its interval per token in ns. It
// returns {1, 0, 0} when the call may pass, else {0, i, wait}: KEYS[i] is
// the bucket that stopped it and wait (ns) the time until its next token.
// Each written bucket expires when it would be full again, the same as
// absent.
var takeScript = redis.NewScript(`
local now = tonumber(ARGV[1])
if not now then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local tokens, stamps = {}, {}
local worst, blocked = 0, 0
for i = 1, #KEYS do
  local burst, every = tonumber(ARGV[2*i]), tonumber(ARGV[2*i+1])
  local h = redis.call('HMGET', KEYS[i], 'tokens', 'updated')
  local tk, ts = tonumber(h[1]), tonumber(h[2])
  if not tk or not ts then
    tk, ts = burst, now
  end
  if now > ts then
    tk = tk + (now - ts) * 1000 / every
    ts = now
  end
  if tk > burst then
    tk = burst
  end
  tokens[i], stamps[i] = tk, ts
  if tk < 1 then
    local wait = (1 - tk) * every
    if wait > worst then
      worst, blocked = wait, i
    end
  end
end
if blocked > 0 then
  return {0, blocked, math.floor(worst)}
end
for i = 1, #KEYS do
  local burst, every = tonumber(ARGV[2*i]), tonumber(ARGV[2*i+1])
  local tk = tokens[i] - 1
  redis.call('HSET', KEYS[i], 'tokens', tk, 'updated', stamps[i])
  local ttl = math.ceil((burst - tk) * every / 1000000) + 1
  if ttl > 1e12 then
    ttl = 1e12
  end
  redis.call('PEXPIRE', KEYS[i], ttl)
end
return {1, 0, 0}
`)

// storeLimiter keeps a filter's buckets in Redis, shared by every replica
// that runs the same filter config against the same Redis.
type storeLimiter struct {
	rules
	sc     *storeConfig
	c      *redis.Client
	prefix string           // "nexus:ratelimit:{namespace}:"
	now    func() time.Time // nil: the Redis server's clock
	local  *limiter         // on_store_error = "local"
	log    hclog.Logger
	down   atomic.Bool // the last call to the store failed
}

func newStoreLimiter(sc *storeConfig, r rules, local *limiter, now func() time.Time, log hclog.Logger) *storeLimiter {
	ns := sc.ns
	if ns == "" {
		ns = "cfg-" + r.fingerprint()
	}
	return &storeLimiter{rules: r, sc: sc, c: client(sc, log), prefix: "nexus:ratelimit:{" + ns + "}:",
		now: now, local: local, log: log}
}

// fingerprint names a filter's limits: replicas that load the same limits
// get the same one, whatever the order of the keys or the store's URL.
func (r *rules) fingerprint() string {
	var b strings.Builder
	b.WriteString("v1")
	add := func(tag string, l *limit) {
		if l != nil {
			fmt.Fprintf(&b, "\n%s %s %g", tag, l.text, l.burst)
		}
	}
	add("agent", r.agent)
	add("server", r.server)
	add("tool", r.tool)
	for _, t := range r.tools { // sorted by sortToolLimits
		add("tools "+strconv.Quote(t.glob), t.lim)
	}
	sum := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(sum[:8])
}

// key is the Redis key of a bucket. The namespace in braces is a Redis
// Cluster hash tag: all of a filter's buckets share a slot, as one script
// over several of them needs.
func (l *storeLimiter) key(c *check) string {
	return l.prefix + string(c.kind) + ":" + c.name
}

// Decide takes a token from every bucket the call belongs to, in Redis, or
// none and denies the call as the in-process limiter does. When Redis
// fails, on_store_error decides: deny with a reason that names the store,
// or count in this process until Redis answers again.
func (l *storeLimiter) Decide(ctx context.Context, e *event.Event) (event.Decision, error) {
	checks := l.checks(e)
	if len(checks) == 0 {
		return plugin.Allow(), nil
	}
	dec, err := l.take(ctx, checks)
	if err == nil {
		if l.down.Swap(false) {
			l.log.Info("the rate limit store answers again; limits are shared across replicas again", "store", l.sc.where)
		}
		return dec, nil
	}
	if ctx.Err() != nil {
		// The caller gave up on the call; no decision is needed.
		return event.Decision{}, ctx.Err()
	}
	msg := l.failure(err)
	if !l.down.Swap(true) {
		if l.sc.local {
			l.log.Warn(msg+"; counting in this process until it answers (on_store_error = \"local\"), so each replica enforces the limits on its own", "store", l.sc.where)
		} else {
			l.log.Error(msg+"; denying calls until it answers (on_store_error = \"deny\")", "store", l.sc.where)
		}
	}
	if l.sc.local {
		return l.local.take(checks), nil
	}
	return plugin.Deny(msg + `; the call is denied because on_store_error is "deny". ` +
		`Fix: start the store or make it reachable from this replica, or set on_store_error = "local" to count on each replica while it is down`), nil
}

// take runs the script for a call's buckets.
func (l *storeLimiter) take(ctx context.Context, checks []check) (event.Decision, error) {
	keys := make([]string, len(checks))
	args := make([]any, 0, 1+2*len(checks))
	if l.now != nil {
		args = append(args, strconv.FormatInt(l.now().UnixMicro(), 10))
	} else {
		args = append(args, "")
	}
	for i := range checks {
		c := &checks[i]
		keys[i] = l.key(c)
		args = append(args, strconv.FormatFloat(c.lim.burst, 'f', -1, 64), strconv.FormatInt(int64(c.lim.every), 10))
	}
	ctx, cancel := context.WithTimeout(ctx, l.sc.timeout)
	defer cancel()
	res, err := takeScript.Run(ctx, l.c, keys, args...).Int64Slice()
	if err != nil {
		return event.Decision{}, err
	}
	if len(res) != 3 || (res[0] == 0 && (res[1] < 1 || res[1] > int64(len(checks)))) {
		return event.Decision{}, fmt.Errorf("unexpected reply %v from the script", res)
	}
	if res[0] == 1 {
		return plugin.Allow(), nil
	}
	return denial(&checks[res[1]-1], time.Duration(res[2])), nil
}

// failure says which store failed, how, without its password.
func (l *storeLimiter) failure(err error) string {
	var ne net.Error
	var why string
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		why = fmt.Sprintf("no answer within %s (store_timeout)", l.sc.timeout)
	default:
		why = l.sc.scrub(err.Error())
	}
	return fmt.Sprintf("rate limit store %s failed to count this call: %s", l.sc.where, why)
}
