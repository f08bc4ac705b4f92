// Package host is the facade that programs embed, and the one door to
// Nexus's implementation (which lives under internal/): LoadConfig and
// ParseConfig read configuration as the nexus command does, New makes a
// Host that connects to the MCP servers it names and puts every request
// through the chain, and NewGateway serves that host to MCP clients as
// `nexus serve` does. Every failure is an error that says which server,
// from which config file, what went wrong and how to fix it (a *Report, or
// one of the typed errors here, which Describe turns into one). An
// embedder imports host and host/mcp, the protocol its signatures speak,
// and nothing else.
//
// Host wraps internal/engine's Host, which the gateway serves too, and
// converts what it returns once, at its methods: the catalog (Tool,
// Resource, Template, Prompt), Status, CallOptions and the errors a
// caller branches on (UnknownServerError, SchemaError, DeniedError, ...)
// are host's own types. Each error Unwraps to the engine's, so errors.As
// finds either and Describe explains both. Every exported function and
// method returns its errors so converted (internal/arch's
// TestFacadeConvertsErrors checks the source). Options are host's too,
// converted once in New, and so is the chain's vocabulary (Confirmer,
// Link, Entry, Verdict, ...), the lockfile (Lock, Relock), the trust
// store, audit verification, plugin and WASM filter inspection: what the
// nexus command does with them, an embedder can do. Gateway is host's
// own, wrapping the internal gateway: NewGateway sets up from the
// config's gateway and console blocks what `nexus serve` serves
// (GatewayOptions over them, as its flags), and Run serves it. Config is
// opaque: its methods read what a program shows (servers, files,
// warnings) and do what the `nexus config` verbs do (View, Compile,
// ViaGateway); Server is plain fields, made once per dial for a Dialer
// or Transport. Report (with its Source) is host's own too, made once
// around the error that held the internal report: its text is that
// error's and it Unwraps to it, so errors.As finds either; Render prints
// one as the nexus command does. host keeps no aliases of internal
// types. The engine: it
// connects servers concurrently on Start or on first use, keeps and
// reconnects their sessions, names their tools for LLMs, and puts every
// request, and every request a server sends back, through the chain (the
// agent's permission level and rules, the config's filters, schema checks
// and the built-in sanitizer). NewSession makes a host that shares all of
// that but connects upstream on its own. Close stops every server and
// plugin process it started; CleanupPlugins is the last line of defence
// on the way out of main.
package host
