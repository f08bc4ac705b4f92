// Package gateway serves the host as an MCP server (`nexus serve`): every
// downstream session, over stdio or streamable HTTP, acts as one agent,
// sees that agent's catalog across all configured servers, and every
// request it makes goes through the same chain as a CLI call.
//
// The catalog is the union of the agent's visible tools, resources,
// resource templates and prompts. Tools and prompts are exposed under their
// server's prefix (mcp_<server>_<name> by default, the names the CLI uses;
// a server block's `prefix` changes it, "" exposes bare names); resource
// URIs and templates stay as their servers give them, and a read is routed
// to the server that lists the URI or a template matching it.
//
// The rule for upstream connections: a downstream session whose client
// declares sampling, elicitation or roots gets upstream connections of its
// own (host.NewSession, opened on first use, closed with the session), so
// a server's requests and notifications reach that client and no other;
// an agent may hold MaxOwnSessions such sessions (the HTTP limit
// max_upstream_sessions_per_agent, default 8), and an initialize past it
// is refused, saying so: each starts server processes of its own. A
// session whose client declares none of them shares its agent's
// connections (one per agent and server, made on first use, closed with
// the gateway), never another agent's; a server's requests there are
// refused (the gateway declares none of those capabilities).
//
// What a server sends reaches only whom it concerns. Progress goes to
// the call whose token asked for it (each call gets an upstream token of
// its own, mapped back to the client's). A log message a streamable HTTP
// server sends on a request's response stream is that request's: it goes
// to the session whose call it was, on that call's stream (mcp.CallOf),
// or nowhere once the call has ended. Any other log message on a shared
// connection (stdio, the standalone stream) goes to the one session of
// the agent that has requests in
// flight to the server, on such a request's stream; with none, to every
// session of the agent; with several, to none (the protocol does not say
// whose it is, and copying it to each would put one call's data on every
// other call's answer). list_changed goes to the agent's sessions that
// may see the server, resources/updated to those subscribed to the URI.
// Nothing a connection carries crosses to another agent.
//
// Over HTTP each agent has its own share of the listener's limits
// (max_sessions_per_agent, max_requests_per_agent,
// max_inflight_bytes_per_agent) beside the global ones: an agent past its
// share gets 429 and cannot fill the global caps alone, so another agent
// is not refused for its sake. Request bodies and the answers they get
// count against the bytes budget while the request is in progress (a
// request reserves its body's size again for its answer); a
// request that does not fit waits briefly, then gets 503 (429 for the
// agent's share) with Retry-After. See httpserver.Options.
//
// Server-initiated requests go to the client through the chain (host
// guards them); on HTTP they travel on the stream of the client's request
// that is in flight to that server (the newest, if several are).
//
// Replicas: with a session store (HTTPOptions.Store, Redis or Valkey), any
// replica serves any request of any session, with no sticky routing. The
// session's record (principal, agent, negotiated version, the client's
// initialize params, log level, subscriptions) is in the store; a replica
// that gets a request for a session it has not seen restores it from
// there, opens its own upstream connections lazily, and is told by the
// others when they change the record. Requests the gateway sends a client
// carry the sending replica in their id, so the answer, POSTed to any
// replica, reaches it. A response stream is copied to the store once it
// becomes SSE, so a client whose replica died resumes it elsewhere and
// learns there that its call may not have finished (a retryable error,
// never a silent loss and never a second run). See httpserver.Shared.
package gateway
