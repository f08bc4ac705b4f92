// Package host is the facade that programs embed, and the one door to
// Nexus's implementation (which lives under internal/): LoadConfig and
// ParseConfig read configuration as the nexus command does, New makes a
// Host that connects to the MCP servers it names and puts every request
// through the chain, and NewGateway serves that host to MCP clients as
// `nexus serve` does. Every failure is an error that says which server,
// from which config file, what went wrong and how to fix it (a *Report, or
// one of the typed errors here, which Describe turns into one). Types
// implemented elsewhere are named here (Tool, Status, Confirmer,
// HTTPOptions, ...), so an embedder imports host and host/mcp, the
// protocol its signatures speak, and nothing else.
//
// A Host connects servers concurrently on Start or on first use, keeps and
// reconnects their sessions (internal/registry), names their tools for LLMs,
// and puts every call, read, prompt fetch, completion and ping, and every
// request a server sends back (sampling, elicitation, roots), through the
// chain: the agent's permission level and rules, then the config's
// filters (WASM and plugin policies and sanitizers, loaded on first use),
// then schema checks and the built-in sanitizer. NewSession makes a host
// that shares all of that but connects upstream on its own, for a caller
// whose servers' requests must reach it alone (a gateway session, see
// internal/gateway). Close stops every server and plugin process it started;
// CleanupPlugins is the last line of defence on the way out of main.
package host
