package config

import (
	"fmt"
	"time"

	"github.com/nexus-mcp/nexus/internal/auth"
	"github.com/nexus-mcp/nexus/internal/diag"
	gwblock "github.com/nexus-mcp/nexus/internal/gateway/block"
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

// The gateway block (internal/gateway/block owns it and its options).
type (
	Gateway       = gwblock.Gateway
	GatewayLimits = gwblock.Limits
	GatewayOAuth  = gwblock.OAuth
)

// StateKeyEnv names the environment variable `nexus serve` reads the
// requestState key from when the config sets no state_key.
const StateKeyEnv = gwblock.StateKeyEnv

// ParseStateKey reads a requestState key (gwblock.ParseStateKey).
func ParseStateKey(s string) ([]byte, error) { return gwblock.ParseStateKey(s) }

// site is where a value was written: its source and the snippet under
// it, kept for reports made when the file's text is no longer at hand.
type site struct {
	src   diag.Source
	lines []string
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
