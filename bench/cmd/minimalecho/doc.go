// Command minimalecho serves bench/internal/minimal: a minimal MCP echo
// server, written without any MCP or JSON library, so a client round trip
// against it measures the client. It speaks stdio, which the raw pipe
// benchmarks compare against, or, with --listen ADDR, streamable HTTP
// from a process of its own, which the raw POST benchmarks compare
// against (cmd/postecho).
package main
