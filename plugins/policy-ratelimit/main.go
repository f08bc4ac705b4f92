package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nexus-mcp/nexus/sdk/event"
	"github.com/nexus-mcp/nexus/sdk/plugin"
)

// Version of the plugin, shown by `nexus plugin inspect`.
const Version = "1.0.0"

func main() {
	plugin.Serve(plugin.Options{Name: "policy-ratelimit", Version: Version, Policy: policy{now: time.Now, log: plugin.Logger()}})
}

const schema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "additionalProperties": false,
  "$defs": {
    "limit": {
      "type": "object",
      "required": ["rate"],
      "additionalProperties": false,
      "properties": {
        "rate": {"type": "string", "pattern": "^[1-9][0-9]*/(s|m|h|d)$", "description": "calls per period: \"10/m\" is ten a minute"},
        "burst": {"type": "integer", "minimum": 1, "description": "calls allowed at once; default the rate's count"}
      }
    }
  },
  "properties": {
    "per_agent": {"$ref": "#/$defs/limit", "description": "a bucket for each agent"},
    "per_server": {"$ref": "#/$defs/limit", "description": "a bucket for each server"},
    "per_tool": {"$ref": "#/$defs/limit", "description": "a bucket for each server.tool"},
    "tools": {
      "type": "object",
      "description": "limits for matching server.tool names (globs), instead of per_tool",
      "additionalProperties": {"$ref": "#/$defs/limit"}
    },
    "store": {"type": "string", "description": "where the buckets live: \"memory\" (the default: this process) or a Redis URL, redis://[user:password@]host:port[/db] (rediss:// for TLS), that replicas share"},
    "store_timeout": {"type": "string", "pattern": "^[0-9]+(\\.[0-9]+)?(ms|s)$", "description": "bound on each call to the store, \"1s\" by default; keep it well under the filter's call timeout (5s by default)"},
    "on_store_error": {"enum": ["deny", "local"], "description": "when the store fails: \"deny\" the call (the default) or count in this process (\"local\") until it answers again"},
    "namespace": {"type": "string", "pattern": "^[A-Za-z0-9_.-]{1,64}$", "description": "names this filter's buckets in the store; by default a hash of the limits, so replicas with the same config share them"}
  }
}`

type limitConfig struct {
	Rate  string `json:"rate"`
	Burst int    `json:"burst"`
}

type config struct {
	PerAgent  *limitConfig            `json:"per_agent"`
	PerServer *limitConfig            `json:"per_server"`
	PerTool   *limitConfig            `json:"per_tool"`
	Tools     map[string]*limitConfig `json:"tools"`

	Store        string `json:"store"`
	StoreTimeout string `json:"store_timeout"`
	OnStoreError string `json:"on_store_error"`
	Namespace    string `json:"namespace"`
}

// limit is a parsed rate: burst tokens, refilled at one per every.
type limit struct {
	text  string // "10/m", for messages
	burst float64
	every time.Duration
}

var rateRE = regexp.MustCompile(`^([1-9][0-9]*)/(s|m|h|d)$`)

func parseLimit(c *limitConfig) (*limit, error) {
	if c == nil {
		return nil, nil
	}
	m := rateRE.FindStringSubmatch(c.Rate)
	if m == nil {
		return nil, fmt.Errorf("rate %q is not COUNT/PERIOD (for example 10/m)", c.Rate)
	}
	period := map[string]time.Duration{"s": time.Second, "m": time.Minute, "h": time.Hour, "d": 24 * time.Hour}[m[2]]
	n, err := strconv.Atoi(m[1])
	if err != nil || time.Duration(n) > period {
		return nil, fmt.Errorf("rate %q is more than one call a nanosecond", c.Rate)
	}
	burst := c.Burst
	if burst <= 0 {
		burst = n
	}
	return &limit{text: c.Rate, burst: float64(burst), every: period / time.Duration(n)}, nil
}

// policy makes a limiter for each filter that names the plugin.
type policy struct {
	// now is the clock of in-process buckets.
	now func() time.Time
	// storeNow, when set, is the clock a Redis store counts with instead
	// of the Redis server's own (tests set it).
	storeNow func() time.Time
	// log receives what an operator should know: a store that stopped or
	// started answering again. nil discards it.
	log hclog.Logger
}

var (
	_ plugin.Policy         = policy{}
	_ plugin.SchemaProvider = policy{}
)

func (policy) ConfigSchema() json.RawMessage { return json.RawMessage(schema) }

func (p policy) NewPolicy(_ context.Context, raw json.RawMessage) (plugin.Decider, error) {
	var c config
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, err
	}
	var r rules
	var err error
	if r.agent, err = parseLimit(c.PerAgent); err != nil {
		return nil, fmt.Errorf("per_agent: %v", err)
	}
	if r.server, err = parseLimit(c.PerServer); err != nil {
		return nil, fmt.Errorf("per_server: %v", err)
	}
	if r.tool, err = parseLimit(c.PerTool); err != nil {
		return nil, fmt.Errorf("per_tool: %v", err)
	}
	for glob, lc := range c.Tools {
		if _, err := path.Match(glob, ""); err != nil {
			return nil, fmt.Errorf("tools: %q is not a valid glob: %v", glob, err)
		}
		lim, err := parseLimit(lc)
		if err != nil {
			return nil, fmt.Errorf("tools[%q]: %v", glob, err)
		}
		r.tools = append(r.tools, toolLimit{glob: glob, lim: lim})
	}
	sortToolLimits(r.tools)
	local := &limiter{rules: r, now: p.now, buckets: map[string]*bucket{}}
	sc, err := parseStore(c)
	if err != nil {
		return nil, err
	}
	if sc == nil {
		return local, nil
	}
	log := p.log
	if log == nil {
		log = hclog.NewNullLogger()
	}
	return newStoreLimiter(sc, r, local, p.storeNow, log), nil
}

// rules are a filter's limits: which buckets a call belongs to.
type rules struct {
	agent, server, tool *limit
	tools               []toolLimit
}

type toolLimit struct {
	glob string
	lim  *limit
}

// sortToolLimits puts exact names before globs, then orders by name, so
// the most specific limit of a tool is found first.
func sortToolLimits(t []toolLimit) {
	less := func(a, b toolLimit) bool {
		ag, bg := hasMeta(a.glob), hasMeta(b.glob)
		if ag != bg {
			return !ag
		}
		return a.glob < b.glob
	}
	for i := 1; i < len(t); i++ {
		for j := i; j > 0 && less(t[j], t[j-1]); j-- {
			t[j], t[j-1] = t[j-1], t[j]
		}
	}
}

func hasMeta(s string) bool {
	for _, c := range s {
		if c == '*' || c == '?' || c == '[' || c == '\\' {
			return true
		}
	}
	return false
}

// maxBuckets bounds memory: past it, buckets that have refilled (and so
// hold no state worth keeping) are dropped.
const maxBuckets = 100000

type bucket struct {
	tokens float64
	last   time.Time
}

// limiter keeps a filter's buckets in this process.
type limiter struct {
	rules
	now func() time.Time

	mu      sync.Mutex
	buckets map[string]*bucket
}

// check is one bucket a call must pass.
type check struct {
	kind byte // 'a'gent, 's'erver, 't'ool
	name string
	lim  *limit
	what string // "agent \"cli\"", for the reason
}

func (c *check) key() string { return string(c.kind) + "\x00" + c.name }

func (r *rules) toolLimit(name string) *limit {
	for _, t := range r.tools {
		if ok, _ := path.Match(t.glob, name); ok {
			return t.lim
		}
	}
	return r.tool
}

// checks lists the buckets a call takes a token from; none for an event
// that is not a call.
func (r *rules) checks(e *event.Event) []check {
	if e.Method == "tools/list" {
		// A listing is not a call: the host asks about each listed tool
		// (and again before a call, while its listing verdict is not
		// known), and counting those would spend an agent's budget on
		// looking.
		return nil
	}
	var checks []check
	if r.agent != nil {
		checks = append(checks, check{'a', e.Agent.ID, r.agent, "agent " + strconv.Quote(e.Agent.ID)})
	}
	if r.server != nil && e.Server.Name != "" {
		checks = append(checks, check{'s', e.Server.Name, r.server, "server " + strconv.Quote(e.Server.Name)})
	}
	if e.Tool != nil && e.Tool.Name != "" {
		name := e.Server.Name + "." + e.Tool.Name
		if lim := r.toolLimit(name); lim != nil {
			checks = append(checks, check{'t', name, lim, "tool " + strconv.Quote(name)})
		}
	}
	return checks
}

// denial is the reason a call is refused: the limit that stopped it and
// the wait until the next call would pass.
func denial(c *check, wait time.Duration) event.Decision {
	return plugin.Deny(fmt.Sprintf("rate limit for %s is %s (burst %g); next call allowed in %s",
		c.what, c.lim.text, c.lim.burst, roundWait(wait)))
}

// Decide takes a token from every bucket the call belongs to, or none and
// denies the call naming the limit that stopped it and the wait.
func (l *limiter) Decide(_ context.Context, e *event.Event) (event.Decision, error) {
	return l.take(l.checks(e)), nil
}

func (l *limiter) take(checks []check) event.Decision {
	if len(checks) == 0 {
		return plugin.Allow()
	}
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.buckets) > maxBuckets {
		l.sweep(now)
	}
	var worst time.Duration
	var blocked *check
	bs := make([]*bucket, len(checks))
	for i := range checks {
		c := &checks[i]
		key := c.key()
		b := l.buckets[key]
		if b == nil {
			b = &bucket{tokens: c.lim.burst, last: now}
			l.buckets[key] = b
		}
		refill(b, c.lim, now)
		bs[i] = b
		if b.tokens < 1 {
			wait := time.Duration((1 - b.tokens) * float64(c.lim.every))
			if wait > worst {
				worst, blocked = wait, c
			}
		}
	}
	if blocked != nil {
		return denial(blocked, worst)
	}
	for _, b := range bs {
		b.tokens--
	}
	return plugin.Allow()
}

func refill(b *bucket, lim *limit, now time.Time) {
	if el := now.Sub(b.last); el > 0 {
		b.tokens = min(lim.burst, b.tokens+float64(el)/float64(lim.every))
		b.last = now
	}
}

// roundWait shows a wait to a useful precision: 4.2s, 1m30s, 2h0m0s.
func roundWait(d time.Duration) time.Duration {
	switch {
	case d < time.Second:
		return d.Round(time.Millisecond)
	case d < time.Minute:
		return d.Round(100 * time.Millisecond)
	default:
		return d.Round(time.Second)
	}
}

// sweep drops buckets that are full again.
func (l *limiter) sweep(now time.Time) {
	for k, b := range l.buckets {
		lim := l.limitFor(k)
		if lim == nil {
			delete(l.buckets, k)
			continue
		}
		refill(b, lim, now)
		if b.tokens >= lim.burst {
			delete(l.buckets, k)
		}
	}
}

func (r *rules) limitFor(key string) *limit {
	switch key[0] {
	case 'a':
		return r.agent
	case 's':
		return r.server
	case 't':
		return r.toolLimit(key[2:])
	}
	return nil
}
