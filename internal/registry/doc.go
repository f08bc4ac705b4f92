// Package registry keeps the live connections to many MCP servers: it
// connects them concurrently, keeps each one's error for reporting,
// reconnects dead sessions on next use with capped exponential backoff, and
// names every tool for LLMs (mcp_<server>_<tool>, within the
// ^[a-zA-Z0-9_-]{1,64}$ that providers accept) with an exact mapping back.
//
// The registry does not know transports: the host gives it a Dialer.
package registry
