// Command echoserver serves bench/internal/echo over stdio: the MCP server
// every stdio benchmark client calls.
package main
