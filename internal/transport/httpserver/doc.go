// Package httpserver is the server side of MCP's Streamable HTTP transport
// in both eras: the stateless revision (2026-07-28) and the session-based
// one (2025-11-25), with the legacy HTTP+SSE endpoints of 2024-11-05 for
// old clients, all on one endpoint. It turns HTTP exchanges into one mcp.Conn per session
// and hands each to a ServeFunc, so anything that serves MCP over a Conn
// (the built-in test server's mcp.Server, the gateway's sessions) serves it
// over HTTP unchanged.
//
// On the wire:
//
//   - POST carries one client message. initialize without a session creates
//     one and answers with Mcp-Session-Id; every other POST needs that id
//     (400 without, 404 for one that is unknown or ended). Notifications and
//     responses get 202. A request is answered as application/json when its
//     response is the first thing the session produces for it, and as an
//     SSE stream when notifications or server requests come first.
//   - GET opens the standalone SSE stream for what belongs to no request
//     (list_changed, resources/updated); messages produced while no GET is
//     connected wait in its bounded buffer. GET with Last-Event-ID resumes
//     any stream, POST or standalone, from a bounded per-stream replay
//     buffer. Every SSE stream starts with an id-only priming event
//     (SEP-1699).
//   - DELETE ends the session.
//
// Before any body is read: the Origin (or, without one, the Host:
// Options.CheckHost), the protocol version header, exactly one
// Authorization header and the credentials are checked on the headers
// alone; a refusal closes the connection instead of reading the body.
// A body then has Options.BodyTimeout, extended at Options.MinBodyRate,
// to arrive: 408 and a closed connection otherwise. A request whose id is
// not a string or an integer gets 400 and -32600. A new session's
// initialize carries its Mcp-Session-Id only when it succeeds; one that
// fails ends the session, whose id is never sent.
//
// A client that goes away cancels its request (the server side is told
// notifications/cancelled, as if the client had sent it) when it can no
// longer get the answer: at once when its POST closes before any event id
// reached it (a pending JSON answer); when its request's SSE stream closes
// (or is closed for polling) and nobody resumes it with Last-Event-ID
// within Options.ResumeGrace. With Options.Shared a stream may be resumed
// on another replica, so only the first rule applies. A request whose
// answer is out or waiting in its stream is never cancelled.
//
// Routing what the server side writes: a response goes to its request's
// stream, progress to the stream of the request that gave the token,
// list_changed and resources/updated to the standalone stream. A request
// or notification written with the context of a request handler
// (mcp.RelatedRequest) goes to that request's stream, so concurrent calls
// each see their own sampling, elicitation and log messages; anything else
// goes to the newest request still open, or the standalone stream.
//
// Everything a client can make the server hold is bounded (Options): the
// body of one POST, sessions, requests in progress per session and in
// all, the bytes of bodies in flight, events buffered per stream, idle
// sessions. Sessions, requests and bytes are bounded per principal too
// (what Authenticate returns), below the global caps, so one principal
// cannot fill a global cap alone: past its share it gets 429, and the
// others are served. A request whose body does not fit the bytes budget
// waits briefly for room (bounded, and ended by its client going). A client that stops
// reading a request's stream while it overflows loses its session, not the
// process's memory. Every refusal is an HTTP status with a JSON-RPC error
// body that names the limit and how to raise it.
//
// The stateless revision (2026-07-28), and the contract with serve
// functions (the test server's mcp.Server, the gateway):
//
//   - A modern request is a POST whose MCP-Protocol-Version is a modern
//     version (any Mcp-Session-Id is ignored), or one without a session
//     naming a version Nexus does not speak. Before any serve function
//     sees it, it is checked: the version header present (-32020
//     HeaderMismatch) and spoken (-32022 with the supported list), _meta's
//     version and client capabilities present (-32602), then its headers
//     against its body: the version header against params._meta,
//     Mcp-Method against the method and Mcp-Name (decoded from
//     =?base64?...?=) against params.name or params.uri (-32020); each
//     refusal is 400 with the request's id. A stateless body whose version
//     header is missing or names the handshake era is a mismatch too.
//     Mcp-Param-* headers are decoded and handed to the serve side
//     (sessionConn.ParamHeaders, mcp.ParamHeaderConn), which alone knows
//     the tool's x-mcp-header annotations; mcp.Server checks them.
//   - No session id is minted or echoed and nothing is stored: any
//     replica serves any modern request. Each principal has internal
//     sessions for its modern traffic, never named to the client: made on
//     its first modern request, ended after IdleTimeout, made again
//     freely; a second one only while the first has a request in flight
//     under the same JSON-RPC id. The serve function gets them with
//     Session.Modern set; every message on them is a modern request with
//     its own _meta.
//   - Each request is answered on its own POST: JSON (whose status follows
//     its error: 400 for -32020/-32021/-32022, 404 for -32601), or an SSE
//     stream scoped to it, without event ids (not resumable), with
//     X-Accel-Buffering: no and a comment line every Options.KeepAlive
//     while quiet. Only what relates to the request goes on it (its
//     progress, what was sent with its context: logs, the notifications of
//     a subscriptions/listen stream); anything else the serve side sends
//     on a modern session is dropped, and a request to the client fails
//     (MRTR replaces them). Closing the POST cancels the request at once
//     (the serve side is told notifications/cancelled).
//   - GET and DELETE with a modern version get 405; client notifications
//     get 202 and are dropped (the revision defines none over HTTP).
//
// Replicas (Options.Shared): a session opened on one replica is served by
// any other, which makes a local instance of it from the shared record.
// Stream and request ids name their replica, the standalone stream lives
// in the shared store, and a request's SSE stream is copied there, so
// what crosses replicas (answers to the server's requests, cancellations,
// resumptions, the end of a session) finds its way; see Shared.
package httpserver
