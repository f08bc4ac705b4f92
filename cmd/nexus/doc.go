// Command nexus is the Nexus MCP host's command line. It lists and calls
// the tools, resources and prompts of the MCP servers in a config file
// (tools, call, read, prompt, shell, ...), serves them behind the chain to
// other MCP clients as a gateway (serve), pins their definitions (lock),
// runs the chain for a request without sending it (explain), checks the
// audit log's hash chain (audit verify), shows, checks and compiles the
// configuration (config), trusts the configs of a workspace (trust,
// untrust), and runs the built-in test server (testserver).
//
// This package only parses flags and prints: connecting, protocol and error
// explanation live in package host and below.
//
// Exit codes: 0 ok, 1 the tool returned isError or the server answered with
// a JSON-RPC error, 2 usage or config error (an untrusted workspace config
// among them),
// 3 connection or transport error, 4 denied by policy, 130 interrupted.
package main
