// Command nexus lists and calls the tools, resources and prompts of the MCP
// servers in a config file, and runs the built-in test server.
//
// This package only parses flags and prints: connecting, protocol and error
// explanation live in package host and below.
//
// Exit codes: 0 ok, 1 the tool returned isError or the server answered with
// a JSON-RPC error, 2 usage or config error,
// 3 connection or transport error, 4 denied by policy, 130 interrupted.
package main
