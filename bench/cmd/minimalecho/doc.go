// Command minimalecho serves bench/internal/minimal over stdio: a minimal
// MCP echo server, written without any MCP or JSON library, so a client
// round trip against it measures the client; the raw pipe benchmarks
// compare against it.
package main
