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
// own (host.NewSession, opened on first use, closed with the session), so a
// server's requests and notifications reach that client and no other. A
// session whose client declares none of them shares one connection per
// server with every other such session; a server's requests on a shared
// connection are refused (the gateway declares none of those capabilities
// there), its log messages go to every session that sees the server, and
// resources/updated to the sessions subscribed to the URI.
//
// Server-initiated requests go to the client through the chain (host
// guards them); on HTTP they travel on the stream of the client's request
// that is in flight to that server (the newest, if several are).
//
// A client that goes away cancels its calls upstream: over HTTP by the
// rules of httpserver (its POST closed before an answer it could resume),
// over a Conn by its end (Serve). `nexus serve` on stdio uses ServeDrain
// instead: the end of its input answers what was read first (drain_timeout).
// Over HTTP a request without Origin must name the gateway in Host by an
// IP address, localhost or an allowed host (checkHost: DNS rebinding).
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
