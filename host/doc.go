// Package host is the facade that programs embed: it takes a loaded config,
// connects to the MCP servers it names, and turns every failure into an
// error that says which server, from which config file, what went wrong and
// how to fix it.
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
