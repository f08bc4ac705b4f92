package host

import (
	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/engine"
)

// SessionOptions say where a session's server-initiated requests and
// notifications go (NewSession, SetNotify).
type SessionOptions struct {
	// Agent is whom the session's server-initiated requests go to, as the
	// chain's events say.
	Agent string
	// Session names the downstream session in the audit log.
	Session string
	Roots   mcp.RootsHandler
	// RootsFor, when set, is used instead of Roots: it knows which
	// server asks.
	RootsFor    func(server string) mcp.RootsHandler
	Sampling    func(server string) mcp.SamplingHandler
	Elicitation func(server string) mcp.ElicitationHandler
	// Raw, when set, serves the sampling and elicitation requests that
	// Sampling and Elicitation declare, as they came (mcp.ClientOptions.Raw),
	// through the same links of the chain.
	Raw func(server string) mcp.RawHandler
	// OnLog receives the servers' log messages, OnListChanged their
	// list_changed notifications (kind: "tools", "resources" or
	// "prompts") once the list is refreshed, OnResourceUpdated their
	// resources/updated notifications, OnChange every change of a
	// server's state or lists.
	OnLog             func(server string, m mcp.LogMessage)
	OnListChanged     func(server, kind string)
	OnResourceUpdated func(server, uri string)
	OnChange          func(server string)
}

// engine is o as the engine takes it. The engine's own fields the
// gateway alone sets (CallOf) stay unset.
func (o SessionOptions) engine() engine.SessionOptions {
	return engine.SessionOptions{Agent: o.Agent, Session: o.Session, Roots: o.Roots, RootsFor: o.RootsFor,
		Sampling: o.Sampling, Elicitation: o.Elicitation, Raw: o.Raw, OnLog: o.OnLog, OnListChanged: o.OnListChanged,
		OnResourceUpdated: o.OnResourceUpdated, OnChange: o.OnChange}
}
