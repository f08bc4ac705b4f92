package config

import (
	"fmt"
	"time"

	"github.com/nexus-mcp/nexus/internal/auth"
	"github.com/nexus-mcp/nexus/internal/diag"
	"github.com/nexus-mcp/nexus/internal/plugin/block"
	"github.com/nexus-mcp/nexus/internal/policy"
	httptransport "github.com/nexus-mcp/nexus/internal/transport/http"
	"github.com/nexus-mcp/nexus/internal/transport/stdio"
)

// MaxFileSize bounds a config file; a larger one is rejected before parsing.
const MaxFileSize = 10 << 20

// Transport types of Server.Type.
const (
	TypeStdio  = "stdio"
	TypeHTTP   = "http" // streamable HTTP
	TypeSSE    = "sse"  // the legacy HTTP+SSE transport (protocol 2024-11-05)
	TypePlugin = "plugin"
)

// Server is one MCP server in the canonical mcpServers model. Every front
// end (the JSON dialects, HCL) produces it, and the host reads nothing else.
type Server struct {
	Name string
	Type string // TypeStdio, TypeHTTP, TypeSSE or TypePlugin

	// stdio: the command (executable and arguments, merged) chooses the
	// transport and is spelled differently by every format, so the loader
	// reads it; the transport's other options are its own.
	Command []string
	Stdio   stdio.Options

	// http and sse: likewise the url.
	URL       string
	HTTP      httptransport.Options
	LegacySSE bool // mirrors Type == TypeSSE, for transports that only look here
	OAuth     *OAuth

	// plugin
	Plugin *PluginTransport

	Enabled       bool
	Timeout       time.Duration // per request; 0 = the host default
	FailIfNoTools bool
	// Confirm is what of a trusted agent's use of the server a person
	// confirms: ConfirmFirstUse (the default, "") or ConfirmToolCalls.
	Confirm string
	// Prefix is put before the server's tool, prompt and resource template
	// names where they are exposed (the gateway's catalog, exposed tool
	// names in the CLI). nil means the default "mcp_<server>_"; a pointer
	// to "" exposes bare names (a single-server gateway, or servers whose
	// names never collide).
	Prefix *string
	// Start is when `nexus serve` connects the server: StartEager (the
	// default, "") as it starts, so a client's first list finds it up;
	// StartLazy on first use. The CLI's verbs connect on demand either way.
	Start string

	// Source is the server's origin: layer, file and line of its definition.
	Source diag.Source
	// Overrides lists the definitions in lower layers this one replaced,
	// lowest first, so `nexus config show` can say where a setting went.
	Overrides []diag.Source
	// Refs holds, by JSON pointer into the server's mcpServers entry
	// ("/env/GITHUB_TOKEN", "/args/2", "/headers/Authorization"), the
	// template of every value that came from the environment, a sensitive
	// variable or an input. Compile-down writes these, never the values.
	Refs map[string]Template
}

// OAuth configures the OAuth 2.1 client of an HTTP server: the auth
// package's options (auth.OptionTable decodes them).
type OAuth = auth.Options

// PluginTransport connects to a server through a transport plugin: the
// plugin block called Name, given Config.
type PluginTransport struct {
	Name   string
	Config map[string]any
}

// Plugin is a go-plugin binary a transport or filter can name: the plugin
// block, internal/plugin/block's (it owns its options).
type Plugin = block.Plugin

// The filter, rule and agent blocks are internal/policy's (it owns their
// options, policy/block.go).
type (
	Filter = policy.Filter
	Rule   = policy.Rule
	Match  = policy.Match
	Limits = policy.Limits
	Agent  = policy.AgentBlock
)

// ABIs of a WASM filter and modes of a filter or agent.
const (
	ABINexus    = policy.ABINexus
	ABIOPA      = policy.ABIOPA
	ModeEnforce = policy.ModeEnforce
	ModeShadow  = policy.ModeShadow
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
	Refs      map[string]Template
	Limits    GatewayLimits
	OAuth     *GatewayOAuth
	Source    diag.Source
	Overrides []diag.Source

	// Where each of RequiredServers and each OAuth agent (by claim value)
	// was written, so that the checks made after layers are merged can
	// point at it.
	requiredAt []*site
	agentsAt   map[string]*site
}

// site is where a value was written: its source and the snippet under
// it, kept for reports made when the file's text is no longer at hand.
type site struct {
	src   diag.Source
	lines []string
}

// GatewayLimits bound what clients of the gateway can make it hold; zero
// values mean the gateway's defaults.
type GatewayLimits struct {
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

// defaultMaxBodyBytes is the gateway's max_body_bytes when none is set
// (the protocol's frame limit).
const defaultMaxBodyBytes = 10 << 20

// problems says what is inconsistent between the limits: a per-agent cap
// over its global one, a bytes budget too small for one body. Each entry
// is the limit at fault, the problem and the fix.
func (l GatewayLimits) problems() [][3]string {
	var out [][3]string
	for _, c := range []struct {
		agent, global string
		a, g          int
	}{
		{"max_sessions_per_agent", "max_sessions", l.MaxSessionsPerAgent, l.MaxSessions},
		{"max_requests_per_agent", "max_requests", l.MaxRequestsPerAgent, l.MaxRequests},
		{"max_inflight_bytes_per_agent", "max_inflight_bytes", l.MaxInflightBytesPerAgent, l.MaxInflightBytes},
		{"max_bridged_upstreams_per_agent", "max_bridged_upstreams", l.MaxBridgedUpstreamsPerAgent, l.MaxBridgedUpstreams},
	} {
		if c.a > 0 && c.g > 0 && c.a > c.g {
			out = append(out, [3]string{c.agent,
				fmt.Sprintf("%s (%d) is over %s (%d): one agent can never hold more than all agents together", c.agent, c.a, c.global, c.g),
				fmt.Sprintf("Lower %s, or raise %s.", c.agent, c.global)})
		}
	}
	body := l.MaxBodyBytes
	if body <= 0 {
		body = defaultMaxBodyBytes
	}
	for _, c := range []struct {
		name string
		n    int
	}{{"max_inflight_bytes", l.MaxInflightBytes}, {"max_inflight_bytes_per_agent", l.MaxInflightBytesPerAgent}} {
		if c.n > 0 && c.n < body {
			out = append(out, [3]string{c.name,
				fmt.Sprintf("%s (%d) is under max_body_bytes (%d): a request of the largest size allowed could never be served", c.name, c.n, body),
				fmt.Sprintf("Raise %s to at least %d, or lower max_body_bytes.", c.name, body)})
		}
	}
	return out
}

// GatewayOAuth makes the gateway an OAuth 2.1 resource server: it
// publishes Protected Resource Metadata (RFC 9728) naming Issuer, and
// accepts JWT access tokens the issuer signed for PublicURL, mapping a
// claim to an agent.
type GatewayOAuth struct {
	Issuer   string   // the authorization server (https URL)
	JWKSURL  string   // default: discovered from the issuer's metadata
	Audience string   // default: the gateway's PublicURL
	Scopes   []string // scopes_supported in the metadata; required of tokens if set
	// AgentClaim is the claim whose value picks the agent (default "sub").
	AgentClaim string
	// Agents maps claim values to agent names; a value missing here is
	// refused (403). An entry "*" maps every other value.
	Agents map[string]string
}

// File is a config file that was loaded, and its layer.
type File struct {
	Path  string // "" for the built-in default
	Layer string
}

// Config is a loaded, merged configuration.
type Config struct {
	Servers   []*Server // sorted by name
	Plugins   []*Plugin
	Filters   []*Filter   // in run order
	Agents    []*Agent    // sorted by name
	Gateway   *Gateway    // nil: no gateway block (nexus serve uses defaults and flags)
	Sampling  *Sampling   // nil: no model; servers' sampling requests go to a person
	Lock      *LockPolicy // nil: what the lockfile does not pin is withheld
	Audit     *Audit      // nil: no audit log
	Telemetry *Telemetry  // nil: traces as the OTEL_* variables say
	Roots     []string    // absolute paths offered to servers as MCP roots
	Inputs    []Input     // the VS Code inputs the servers refer to, by id
	Files     []File      // lowest layer first
	Warnings  []Warning
	// Untrusted are the workspace files found but not applied, for want of
	// `nexus trust` (trust.go); Files does not list them.
	Untrusted []Untrusted

	owned map[string]ownedValue // the blocks components registered, by name (owned.go)
}

// Server returns the server called name, or nil.
func (c *Config) Server(name string) *Server {
	for _, s := range c.Servers {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// Names lists the configured server names.
func (c *Config) Names() []string {
	out := make([]string, len(c.Servers))
	for i, s := range c.Servers {
		out[i] = s.Name
	}
	return out
}

// Plugin returns the plugin called name, or nil.
func (c *Config) Plugin(name string) *Plugin {
	for _, p := range c.Plugins {
		if p.Name == name {
			return p
		}
	}
	return nil
}

// Agent returns the agent called name, or nil.
func (c *Config) Agent(name string) *Agent {
	for _, a := range c.Agents {
		if a.Name == name {
			return a
		}
	}
	return nil
}

// Values of Server.Confirm.
const (
	// ConfirmFirstUse: a trusted agent's first use of the server, of any
	// kind, is confirmed (the default).
	ConfirmFirstUse = "first_use"
	// ConfirmToolCalls: only tool calls are confirmed; reading resources
	// and prompts, completion and ping are not (a server whose reads are
	// harmless, such as the built-in test server).
	ConfirmToolCalls = "tool_calls"
)

// Values of Server.Start.
const (
	StartEager = "eager"
	StartLazy  = "lazy"
)

// checkStart says what is wrong with a start value, or "".
func checkStart(v string) string {
	if v == StartEager || v == StartLazy {
		return ""
	}
	return fmt.Sprintf("start %q is not one of %q or %q", v, StartEager, StartLazy)
}

// checkConfirm says what is wrong with a confirm value, or "".
func checkConfirm(v string) string {
	if v == ConfirmFirstUse || v == ConfirmToolCalls {
		return ""
	}
	return fmt.Sprintf("confirm %q is not one of %q (the default) and %q", v, ConfirmFirstUse, ConfirmToolCalls)
}
