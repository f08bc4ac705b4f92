// Package httptransport connects to remote MCP servers over Streamable
// HTTP (MCP 2025-11-25 and the stateless 2026-07-28), and over the legacy
// HTTP+SSE transport of 2024-11-05. It implements mcp.Conn: Dial, then
// mcp.Connect over the Conn.
//
// A request whose _meta names a protocol version is a modern one
// (modern.go): its POST mirrors the version, method, name and the tool's
// x-mcp-header arguments into MCP-Protocol-Version, Mcp-Method, Mcp-Name
// and Mcp-Param-* (read from the body, so they always agree with it),
// carries no session, and is never resumed; a 4xx whose body is a
// JSON-RPC error is that request's answer, which is how the client's era
// probe tells a modern server from a legacy one. What follows describes
// the legacy (2025-11-25) session.
//
// On the wire: every client message is an HTTP POST to the MCP endpoint
// (Accept: application/json, text/event-stream). The server answers a
// request with one JSON body or with an SSE stream that carries its
// requests and notifications before the response; the Conn delivers all of
// them through ReadMessage. After initialize it sends the Mcp-Session-Id
// the server issued and the negotiated MCP-Protocol-Version (read from the
// initialize response as it passes through), opens the standalone GET
// stream for server-initiated messages (405: the server has none), resumes
// broken streams with Last-Event-ID (SEP-1699 polling included), and ends
// the session with DELETE on Close. When the first POST gets 400, 404 or
// 405 it tries the legacy transport, as the spec's backwards-compatibility
// section describes.
//
// A plain-http POST with a body of up to 64 KiB (every tools/call but the
// largest) is sent and answered on the caller's goroutine over a small
// HTTP/1.1 client of the package's own (h1.go), whose answers net/http's
// parser reads; net/http's Transport hands every request to a writer
// goroutine and every answer back from a reader goroutine, which costs a
// small call more than the rest of the client. TLS, the GET stream,
// DELETE and larger bodies go through net/http.
//
// Servers are remote and may be hostile, and the URL may come from a
// config file someone else wrote, so the transport guarantees:
//
//   - No request reaches an address it should not. The dialer resolves the
//     host itself, checks every address at connect time and dials the
//     checked IP, so DNS rebinding cannot get past it: private, link-local,
//     CGNAT, multicast and unspecified addresses are refused unless
//     AllowPrivateNetworks is set, cloud metadata addresses always,
//     loopback never. Redirects are never followed (*RedirectError names the
//     Location); no proxy is used, because a proxy would connect for us.
//   - A server cannot exhaust memory or hang the host. A JSON body or one
//     SSE event over MaxMessageSize (10 MiB) is a *BodyTooLargeError as soon
//     as the limit is passed, never buffered whole; SSE lines are bounded
//     too; response headers are awaited at most Timeout; every stream ends
//     with Close, which leaves no goroutine behind.
//   - Secrets stay secret. Configured header values never appear in logs or
//     errors; URLs in errors have passwords and credential-like query values
//     masked; session ids are not repeated. TLS verification is always on
//     (CABundle adds roots, nothing removes them).
//   - Failures explain themselves, with typed errors that name the server
//     and the URL: *HTTPStatusError (with a sanitized body excerpt),
//     *BlockedAddressError, *RedirectError, *SessionExpiredError,
//     *InvalidSessionIDError, *UnexpectedResponseError (an HTML page instead
//     of JSON), *BodyTooLargeError, *RequestError (network, TLS, timeout).
//
// Transient failures are retried with exponential backoff and jitter
// (MaxRetries, RetryBackoff): connection failures before anything was sent,
// and HTTP 429, 502, 503 and 504, honouring Retry-After up to MaxRetryDelay.
//
// Errors that end the session (an address refused, a redirect, an expired
// session, an oversized message, a server that cannot be reached, a TLS
// failure, 401) come out of ReadMessage, so every call in flight fails with
// them. A failure that concerns one request only (another HTTP error, an
// HTML page, a stream that broke off and cannot be resumed) becomes a
// JSON-RPC error answer to that request (code -32603, data
// {"transport":"http","status":N}) and the session goes on.
//
// Authorization: Config.Authorizer (internal/auth's OAuth client, behind a
// two-method interface so that this package knows nothing of OAuth) adds
// credentials to every request, POST, GET and DELETE alike, and handles
// 401 and 403: when it has re-authorized, the request is sent again; when
// it fails, the session ends with *AuthError. Without one, 401 ends the
// session as an *HTTPStatusError.
//
// An expired session (HTTP 404 to a request carrying Mcp-Session-Id) ends
// the Conn with *SessionExpiredError: the host reconnects, which is a new
// initialize as the spec requires. With Config.Reinitialize the Conn does
// it once by itself instead, replaying the initialize request and the
// initialized notification it forwarded.
package httptransport
