// Package registry keeps the live connections to many MCP servers: it
// connects them concurrently, keeps each one's error for reporting,
// reconnects dead sessions on next use with capped exponential backoff, and
// names every tool for LLMs (mcp_<server>_<tool>, within the
// ^[a-zA-Z0-9_-]{1,64}$ that providers accept) with an exact mapping back.
//
// Each server's protocol era is remembered: Status shows it (modern, the
// per-request metadata of 2026-07-28, or legacy, the initialize
// handshake), and the next dial is told the version the server spoke
// (mcp.WithRememberedVersion), so a legacy server is not probed again on
// every reconnection.
//
// The registry does not know transports: the host gives it a Dialer.
//
// The errors a catalog and its calls return that callers tell apart
// (UnknownServerError, UnknownToolError, SchemaError, ServerError) are
// here too, below both the engine that returns them and internal/explain,
// which turns them into reports.
package registry
