// Package echo is the MCP server every benchmark client calls: one tool,
// echo, that answers with its message and nothing else, built on Nexus's
// own server role. The stdio benchmarks run it as bench/cmd/echoserver;
// the HTTP ones serve it in process behind Nexus's streamable HTTP
// handler. One server for every client, so differences are the clients'.
package echo
