// Package engine is the host behind the facade (package host) and the
// gateway: it connects servers concurrently on Start or on first use,
// keeps and reconnects their sessions (internal/registry), names their
// tools for LLMs, and puts every call, read, prompt fetch, completion and
// ping, and every request a server sends back (sampling, elicitation,
// roots), through the chain: the agent's permission level and rules,
// then the config's filters (WASM and plugin policies and sanitizers,
// loaded on first use), then schema checks and the built-in sanitizer.
// It dials each server's transport, checks the lockfile's and the
// policies' verdicts on tool definitions, and records every decision in
// the audit log and the request's trace.
//
// NewSession makes a host that shares all of that but connects upstream
// on its own, for a caller whose servers' requests must reach it alone (a
// gateway session, see internal/gateway). Close stops every server and
// plugin process it started; CleanupPlugins is the last line of defence
// on the way out of main.
//
// The gateway serves a *Host directly; what it hands the host with a
// request travels in the request's context (api.go): its downstream
// session (WithSession), trace context (WithTraceContext), what it knows
// of the client's side (WithServed), a listing's wait (WithListWait), and
// for a modern agent's calls the Multi Round-Trip seam (WithAnswersInput,
// WithAttempt, WithCallID). The facade, host, wraps the Host in its own
// type and converts what it returns to host's types; the errors callers
// tell apart live in internal/registry and internal/policy, below
// internal/explain, which turns them into reports, and host's errors
// Unwrap to them.
package engine
