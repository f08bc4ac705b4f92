// Package explain builds the report a person reads from the typed errors
// of every part of Nexus: a transport's (a command not found, a crashed
// server, an HTTP status), OAuth's (internal/auth's *Error: a discovery
// that failed, a refused token request), the protocol's (a timeout, an
// invalid frame), the registry's (a disabled server, one in backoff), the
// host's (an unknown tool or server, arguments that break a schema), a
// plugin's (one that could not start or crashed, a config its schema
// refuses), a WASM filter's (a module that cannot load) and the policy
// chain's refusals. Those parts return facts;
// the words are here (Error, Server, Describe, Refusal).
//
// Each comes out as one structure, a *diag.Report: what happened, where
// (the server, the config file and layer it came from, its command or
// URL), the likely causes, the fix, and the evidence (a stderr tail, the
// links that decided). Every reader renders that same report: the command
// line in full (Error) or as fields (--output json), the gateway's client
// in brief (a JSON-RPC error's message, a refused call's tool result),
// the console as a headline and its fixes. So a refusal reads the same
// wherever it is met, and golden files pin its words in one place.
//
// The package sits above what it explains (transports, registry, policy,
// config) and below its callers (host, the gateway); internal/diag, on
// the ground floor, holds the structure, the wording the transports
// share, and the renderers, so a transport can return a report without
// importing this package.
package explain
