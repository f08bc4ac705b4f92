package block

import (
	"fmt"
	"strings"
	"time"

	"github.com/nexus-mcp/nexus/internal/diag"
	"github.com/nexus-mcp/nexus/internal/option"
)

// Gateway configures `nexus serve`: the MCP server Nexus offers to agents
// (Claude Code, Cursor, VS Code, any MCP client). Flags override it.
type Gateway struct {
	// Listen is the streamable HTTP listener's address ("127.0.0.1:8750");
	// "" serves stdio only unless --listen is given.
	Listen string
	// Metrics is the address Prometheus metrics are served on
	// (http://ADDR/metrics); "" serves none unless --metrics is given.
	Metrics string
	// PublicURL is the URL clients reach the MCP endpoint at, behind any
	// proxy ("https://nexus.example.com/mcp"). It is the OAuth resource
	// identifier (the audience JWTs must name); default: from Listen.
	PublicURL string
	// TLSCert and TLSKey are absolute paths of a PEM certificate chain and
	// key; both or neither.
	TLSCert, TLSKey string
	// AllowedOrigins are the browser origins ("https://app.example.com")
	// allowed besides no Origin at all and loopback origins.
	AllowedOrigins []string
	// AllowedHosts are the Host names ("nexus.example.com", or with a
	// port) a request without Origin may name, besides IP addresses,
	// localhost (on a loopback or wildcard listen address) and PublicURL's
	// host: DNS rebinding protection.
	AllowedHosts []string
	// RequiredServers are the servers /readyz checks are reachable.
	RequiredServers []string
	// ListWait is how long a client's list request waits for servers
	// still starting before it answers without them (list_changed follows
	// when they are up); 0: the gateway's default, 1 s.
	ListWait time.Duration
	// CacheTTL is the ttlMs modern clients (MCP 2026-07-28) get for the
	// gateway's lists (always cacheScope "private": they are per agent);
	// 0: the gateway's default, 1 minute.
	CacheTTL time.Duration
	// InputTTL is how long a modern agent's call that a legacy server
	// asked input of waits for the agent's retry before it is cancelled
	// upstream (the era bridge); 0: the gateway's default, 5 minutes.
	InputTTL time.Duration
	// SessionStore is where replicas share sessions: "memory" (or "", one
	// process) or redis://host:6379 (Redis 7 or Valkey). A password in it
	// should come from a sensitive variable; see Refs.
	SessionStore string
	// StateKey seals the requestState a modern agent holds while a legacy
	// server waits for its input (gateway state_key): 32 bytes as 64 hex
	// digits or base64 (ParseStateKey), shared by the replicas, from a
	// sensitive variable; "": NEXUS_STATE_KEY, else one per process.
	StateKey string
	// Refs are the references SessionStore's and StateKey's text came
	// from, by JSON pointer ("/session_store", "/state_key"), so compile
	// writes them, not the value.
	Refs      map[string]option.Template
	Limits    Limits
	OAuth     *OAuth
	Source    diag.Source
	Overrides []diag.Source

	// RequiredAt is where each of RequiredServers was written, for the
	// check made once the layers merge (a server no layer configures).
	RequiredAt []option.Site `json:"-"`
}

// Limits bound what clients of the gateway can make it hold; zero
// values mean the gateway's defaults.
type Limits struct {
	MaxBodyBytes          int           // one HTTP request body
	MaxSessions           int           // downstream sessions at once
	MaxSessionsPerAgent   int           // downstream sessions of one agent at once
	MaxRequests           int           // requests in progress, all sessions
	MaxRequestsPerAgent   int           // requests in progress, all sessions of one agent
	MaxRequestsPerSession int           // requests in progress in one session
	MaxSSEEvents          int           // events buffered per SSE stream
	SessionIdleTimeout    time.Duration // a session with no request and no open stream ends
	ShutdownGrace         time.Duration // in-flight calls get this long after SIGINT/SIGTERM
	BodyTimeout           time.Duration // an HTTP request body must arrive within this (default 20 s) ...
	MinBodyRate           int           // ... plus a second for every this many bytes (default 32768)
	DrainTimeout          time.Duration // stdio: at end of input, requests read get this long to be answered (default 30 s)
	// Bytes of request and response bodies held for requests in
	// progress, all agents and one agent.
	MaxInflightBytes         int
	MaxInflightBytesPerAgent int
	// Sessions of one agent with upstream connections of their own
	// (clients that declare sampling, elicitation or roots).
	MaxUpstreamSessionsPerAgent int
	// Upstream connections that modern agents' calls use (one per agent
	// and server, ended once idle), all agents and one agent.
	MaxBridgedUpstreams         int
	MaxBridgedUpstreamsPerAgent int
}

// OAuth makes the gateway an OAuth 2.1 resource server: it publishes
// Protected Resource Metadata (RFC 9728) naming Issuer, and accepts JWT
// access tokens the issuer signed for PublicURL, mapping a claim to an
// agent.
type OAuth struct {
	Issuer   string   // the authorization server (https URL)
	JWKSURL  string   // default: discovered from the issuer's metadata
	Audience string   // default: the gateway's PublicURL
	Scopes   []string // scopes_supported in the metadata; required of tokens if set
	// AgentClaim is the claim whose value picks the agent (default "sub").
	AgentClaim string
	// Agents maps claim values to agent names; a value missing here is
	// refused (403). An entry "*" maps every other value.
	Agents map[string]string

	// AgentsAt is where each of Agents' values was written, by claim
	// value, for the check made once the layers merge (an agent no layer
	// defines).
	AgentsAt map[string]option.Site `json:"-"`
}

// Config is the config's gateway block: gateway { ... } in nexus.hcl, the
// "gateway" member in JSON, at most one per file; a later layer's
// replaces an earlier one's whole.
var Config = option.Block[Gateway]{
	Name:        "gateway",
	Options:     options,
	New:         func() *Gateway { return &Gateway{} },
	HCLExample:  "gateway {\n  listen = \"127.0.0.1:8750\"\n}",
	JSONExample: `{"listen": "127.0.0.1:8750"}`,
	Check:       checkKey,
}

// byFormat is the fix of a value written at src, as its file is: fixes
// that show the option in place differ between nexus.hcl and JSON.
func byFormat(src diag.Source, hcl, json string) string {
	if src.HCL() {
		return hcl
	}
	return json
}

// address is a host:port option (listen, metrics).
func address(name string, field func(*Gateway) *string, hclFix, jsonFix string) option.Option[Gateway] {
	o := option.Text(name, "", false, field, `"127.0.0.1:8750"`)
	o.Decode = func(g *Gateway, v option.Value) {
		var ok bool
		if *field(g), ok = v.String(""); ok {
			if p := checkListen(*field(g)); p != "" {
				v.Fail(strings.Replace(p, "listen", name, 1), byFormat(v.Source(), hclFix, jsonFix))
			}
		}
	}
	return o
}

// list is a list of strings, each checked by check (fix is for any).
func list(name string, field func(*Gateway) *[]string, check func(string) string, fix, example string) option.Option[Gateway] {
	return option.Option[Gateway]{HCL: name, JSON: name, Example: example,
		Decode: func(g *Gateway, v option.Value) {
			var ok bool
			if *field(g), ok = v.Strings(""); ok && check != nil {
				for _, s := range *field(g) {
					if p := check(s); p != "" {
						v.Fail(p, fix)
					}
				}
			}
		},
		Out: func(g *Gateway, _ option.Writer) any {
			if len(*field(g)) == 0 {
				return nil
			}
			return *field(g)
		}}
}

// wait is a duration whose zero is the gateway's default.
func wait[T any](name string, field func(*T) *time.Duration, orZero bool, example string) option.Option[T] {
	return option.Option[T]{HCL: name, JSON: name, Example: example,
		Decode: func(o *T, v option.Value) {
			if orZero {
				// 0 is the limit's default, as leaving it out is.
				if s, ok := v.Scalar(); !ok || isZeroDuration(s) {
					return
				}
			}
			*field(o), _ = v.Duration()
		},
		Out: func(o *T, _ option.Writer) any {
			if d := *field(o); d > 0 {
				return d.String()
			}
			return nil
		}}
}

// count is a whole number of at least 0, 0 the default.
func count[T any](name string, field func(*T) *int, example string) option.Option[T] {
	return option.Option[T]{HCL: name, JSON: name, Example: example,
		Decode: func(o *T, v option.Value) { *field(o), _ = v.Int(0) },
		Out: func(o *T, _ option.Writer) any {
			if n := *field(o); n > 0 {
				return n
			}
			return nil
		}}
}

var options = option.Table[Gateway]{
	address("listen", func(g *Gateway) *string { return &g.Listen },
		`Use host:port, for example listen = "127.0.0.1:8750" (loopback; "0.0.0.0:8750" serves every interface).`,
		`Use host:port, for example "127.0.0.1:8750".`),
	address("metrics", func(g *Gateway) *string { return &g.Metrics },
		`Use host:port, for example metrics = "127.0.0.1:9464" (Prometheus scrapes http://127.0.0.1:9464/metrics).`,
		`Use host:port, for example "127.0.0.1:9464".`),
	{HCL: "public_url", JSON: "public_url", Example: `"https://nexus.example.com/mcp"`,
		Decode: func(g *Gateway, v option.Value) {
			var ok bool
			if g.PublicURL, ok = v.String(""); ok {
				if p := checkPublicURL(g.PublicURL); p != "" {
					v.Fail(p, `Use the URL clients reach the MCP endpoint at, for example "https://nexus.example.com/mcp".`)
				}
			}
		},
		Out: func(g *Gateway, _ option.Writer) any { return orNil(g.PublicURL) }},
	list("allowed_origins", func(g *Gateway) *[]string { return &g.AllowedOrigins }, checkOrigin,
		`An origin is scheme://host[:port] with no path, for example "https://app.example.com".`, `["https://app.example.com"]`),
	list("allowed_hosts", func(g *Gateway) *[]string { return &g.AllowedHosts }, checkHost, allowedHostsFix, `["nexus.example.com", "10.0.0.5:8750"]`),
	// Whether each names a server is checked once the layers merge, at
	// the element.
	{HCL: "required_servers", JSON: "required_servers", Example: `["github"]`,
		Decode: func(g *Gateway, v option.Value) {
			var ok bool
			if g.RequiredServers, ok = v.Strings(""); ok {
				g.RequiredAt = v.ItemSites()
			}
		},
		Out: func(g *Gateway, _ option.Writer) any {
			if len(g.RequiredServers) == 0 {
				return nil
			}
			return g.RequiredServers
		}},
	wait("list_wait", func(g *Gateway) *time.Duration { return &g.ListWait }, false, `"2s"`),
	wait("cache_ttl", func(g *Gateway) *time.Duration { return &g.CacheTTL }, false, `"5m"`),
	wait("input_ttl", func(g *Gateway) *time.Duration { return &g.InputTTL }, false, `"10m"`),
	{HCL: "session_store", JSON: "session_store", Example: `"redis://redis:6379"`,
		Decode: func(g *Gateway, v option.Value) {
			var ok bool
			if g.SessionStore, ok = v.String("/session_store"); ok {
				if p := checkSessionStore(g.SessionStore); p != "" {
					v.Fail(p, sessionStoreFix)
				}
			}
		},
		Out: func(g *Gateway, w option.Writer) any {
			if g.SessionStore == "" {
				return nil
			}
			return w.String("/session_store", g.SessionStore)
		}},
	// Checked by checkKey, which knows whether it came from a variable.
	{HCL: "state_key", JSON: "state_key", Example: `"` + strings.Repeat("ab", 32) + `"`,
		Decode: func(g *Gateway, v option.Value) { g.StateKey, _ = v.String("/state_key") },
		Out: func(g *Gateway, w option.Writer) any {
			if g.StateKey == "" {
				return nil
			}
			return w.Secret("/state_key", "key", g.StateKey)
		}},
	tlsRow,
	limitsRow,
	oauthRow,
}

func orNil(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// tlsOptions are the tls block's rows, on the gateway itself.
var tlsOptions = option.Table[Gateway]{
	{HCL: "cert", JSON: "cert", Example: `"certs/gateway.pem"`,
		Decode: func(g *Gateway, v option.Value) { g.TLSCert, _ = v.Path("") },
		Out:    func(g *Gateway, _ option.Writer) any { return orNil(g.TLSCert) }},
	{HCL: "key", JSON: "key", Example: `"certs/gateway-key.pem"`,
		Decode: func(g *Gateway, v option.Value) { g.TLSKey, _ = v.Path("") },
		Out:    func(g *Gateway, _ option.Writer) any { return orNil(g.TLSKey) }},
}

// tlsRow is tls { cert, key }: both or neither, which a half written is
// reported as at the block.
var tlsRow = func() option.Option[Gateway] {
	o := option.Nest("tls", tlsOptions, func(g *Gateway) *Gateway { return g }, `{"cert": "certs/gateway.pem", "key": "certs/gateway-key.pem"}`)
	o.Decode = func(g *Gateway, v option.Value) {
		bs, ok := v.Blocks()
		if !ok || len(bs) != 1 {
			return
		}
		b := bs[0]
		option.Decode(tlsOptions, g, b)
		cert, key := b.Get(tlsOptions[0].Row()), b.Get(tlsOptions[1].Row())
		if cert == nil || key == nil {
			missing := "key"
			if cert == nil {
				missing = "cert"
			}
			b.Fail(fmt.Sprintf("tls needs both cert and key; %s is missing", missing), byFormat(b.Source(),
				"tls {\n  cert = \"certs/gateway.pem\"      # the certificate chain, PEM\n  key  = \"certs/gateway-key.pem\"  # its private key, PEM\n}",
				`"tls": {"cert": "certs/gateway.pem", "key": "certs/gateway-key.pem"}`))
		}
	}
	return o
}()

var limitsOptions = option.Table[Limits]{
	count("max_body_bytes", func(l *Limits) *int { return &l.MaxBodyBytes }, `4194304`),
	count("max_sessions", func(l *Limits) *int { return &l.MaxSessions }, `1000`),
	count("max_requests", func(l *Limits) *int { return &l.MaxRequests }, `256`),
	count("max_requests_per_session", func(l *Limits) *int { return &l.MaxRequestsPerSession }, `32`),
	count("max_sse_events", func(l *Limits) *int { return &l.MaxSSEEvents }, `1024`),
	wait("session_idle_timeout", func(l *Limits) *time.Duration { return &l.SessionIdleTimeout }, true, `"30m"`),
	wait("shutdown_grace", func(l *Limits) *time.Duration { return &l.ShutdownGrace }, true, `10`),
	wait("body_timeout", func(l *Limits) *time.Duration { return &l.BodyTimeout }, true, `"5s"`),
	count("min_body_rate", func(l *Limits) *int { return &l.MinBodyRate }, `1024`),
	wait("drain_timeout", func(l *Limits) *time.Duration { return &l.DrainTimeout }, true, `"1m"`),
	count("max_sessions_per_agent", func(l *Limits) *int { return &l.MaxSessionsPerAgent }, `100`),
	count("max_requests_per_agent", func(l *Limits) *int { return &l.MaxRequestsPerAgent }, `64`),
	count("max_inflight_bytes", func(l *Limits) *int { return &l.MaxInflightBytes }, `536870912`),
	count("max_inflight_bytes_per_agent", func(l *Limits) *int { return &l.MaxInflightBytesPerAgent }, `134217728`),
	count("max_upstream_sessions_per_agent", func(l *Limits) *int { return &l.MaxUpstreamSessionsPerAgent }, `4`),
	count("max_bridged_upstreams", func(l *Limits) *int { return &l.MaxBridgedUpstreams }, `8`),
	count("max_bridged_upstreams_per_agent", func(l *Limits) *int { return &l.MaxBridgedUpstreamsPerAgent }, `4`),
}

// limitsRow is limits { ... }, whose limits are checked against each
// other at the one at fault.
var limitsRow = func() option.Option[Gateway] {
	o := option.Nest("limits", limitsOptions, func(g *Gateway) *Limits { return &g.Limits }, `{"max_sessions": 1000}`)
	o.Decode = func(g *Gateway, v option.Value) {
		bs, ok := v.Blocks()
		if !ok || len(bs) != 1 {
			return
		}
		b := bs[0]
		option.Decode(limitsOptions, &g.Limits, b)
		for _, p := range g.Limits.problems() {
			if at := b.Get(limitsOptions.JSON(p[0]).Row()); at != nil {
				at.Fail(p[1], p[2])
			} else {
				b.Fail(p[1], p[2])
			}
		}
	}
	return o
}()

var oauthOptions = option.Table[OAuth]{
	{HCL: "issuer", JSON: "issuer", Required: true, Example: `"https://login.example.com"`,
		Decode: func(o *OAuth, v option.Value) {
			var ok bool
			if o.Issuer, ok = v.String(""); ok {
				if p := option.CheckURL("issuer", o.Issuer, true); p != "" {
					v.Fail(p, `Use the authorization server's issuer URL, for example "https://login.example.com".`)
				}
			}
		},
		Out: func(o *OAuth, _ option.Writer) any { return o.Issuer }},
	{HCL: "jwks_url", JSON: "jwks_url", Example: `"https://login.example.com/jwks"`,
		Decode: func(o *OAuth, v option.Value) {
			var ok bool
			if o.JWKSURL, ok = v.String(""); ok {
				if p := option.CheckURL("jwks_url", o.JWKSURL, true); p != "" {
					v.Fail(p, "")
				}
			}
		},
		Out: func(o *OAuth, _ option.Writer) any { return orNil(o.JWKSURL) }},
	option.Text("audience", "", false, func(o *OAuth) *string { return &o.Audience }, `"https://nexus.example.com/mcp"`),
	{HCL: "scopes", JSON: "scopes", Example: `["mcp"]`,
		Decode: func(o *OAuth, v option.Value) { o.Scopes, _ = v.Strings("") },
		Out: func(o *OAuth, _ option.Writer) any {
			if len(o.Scopes) == 0 {
				return nil
			}
			return o.Scopes
		}},
	// Always written: its default is a choice a reader should see.
	{HCL: "agent_claim", JSON: "agent_claim", Example: `"email"`,
		Decode: func(o *OAuth, v option.Value) {
			var ok bool
			if o.AgentClaim, ok = v.String(""); ok && o.AgentClaim == "" {
				v.Fail(`agent_claim is empty`, byFormat(v.Source(),
					`Name the token claim that picks the agent, for example agent_claim = "sub" (the default) or "email".`,
					`Name the token claim that picks the agent, for example "agent_claim": "sub" (the default) or "email".`))
			}
		},
		Out: func(o *OAuth, _ option.Writer) any { return o.AgentClaim }},
	// Whether each names an agent is checked once the layers merge, at
	// the value.
	{HCL: "agents", JSON: "agents", Example: `{"alice@example.com": "claude", "*": "readonly"}`,
		Decode: func(o *OAuth, v option.Value) {
			var ok bool
			if o.Agents, ok = v.Map(""); ok {
				o.AgentsAt = v.MemberSites()
			}
		},
		Out: func(o *OAuth, _ option.Writer) any {
			if len(o.Agents) == 0 {
				return nil
			}
			return o.Agents
		}},
}

// oauthRow is oauth { ... }: set only when written, its agent claim "sub"
// unless it says otherwise.
var oauthRow = option.Option[Gateway]{HCL: "oauth", JSON: "oauth", Nested: oauthOptions.Shape(), Example: `{"issuer": "https://login.example.com"}`,
	Decode: func(g *Gateway, v option.Value) {
		if bs, ok := v.Blocks(); ok && len(bs) == 1 {
			o := &OAuth{AgentClaim: "sub"}
			option.Decode(oauthOptions, o, bs[0])
			g.OAuth = o
		}
	},
	Out: func(g *Gateway, w option.Writer) any {
		if g.OAuth == nil {
			return nil
		}
		return option.Out(oauthOptions, g.OAuth, w)
	}}

// checkKey checks the state_key once its templates are known: a key
// written into the file warns (it belongs in a sensitive variable), one
// that is not a key is an error. The key is never shown.
func checkKey(g *Gateway, b option.Body, ok bool) {
	v := b.Get(options.JSON("state_key").Row())
	if !ok || v == nil {
		return // a row that failed has been reported
	}
	_, fromRef := g.Refs["/state_key"]
	switch p, isErr := checkStateKey(g.StateKey, fromRef, b.Lenient()); {
	case p == "":
	case isErr:
		v.Fail(p, stateKeyFix)
	default:
		v.Warn(p)
	}
}
