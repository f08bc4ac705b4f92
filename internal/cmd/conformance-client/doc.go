// Command conformance-client drives Nexus's MCP client (host/mcp over
// internal/transport/http, with internal/auth for OAuth) through the client
// scenarios of the official MCP conformance suite
// (@modelcontextprotocol/conformance). The suite starts a mock server per
// scenario and runs this program with the server's URL as the last
// argument, the scenario's name in MCP_CONFORMANCE_SCENARIO, the protocol
// revision the scenario runs at in MCP_CONFORMANCE_PROTOCOL_VERSION, and
// any extra data (client credentials, keys, IdP tokens, the tool calls to
// make) in MCP_CONFORMANCE_CONTEXT.
//
// The revision decides the lifecycle: through 2025-11-25 the initialize
// handshake, from 2026-07-28 per-request _meta (mcp.ClientOptions
// ProtocolVersion). Without it the client selects the era as the host
// does (server/discover first, initialize when the server is legacy).
//
// Run it through `make conformance` (run.sh: both requirement sets); by
// hand:
//
//	go build -o /tmp/cc ./internal/cmd/conformance-client
//	node tools/npm/node_modules/@modelcontextprotocol/conformance/dist/index.js \
//	    client --command "/tmp/cc" --requirements 2026-07-28
//
// What it does is what a host does: connect (authorizing when the server
// asks), list the tools, call each one with arguments made from its input
// schema (or make the calls the scenario names), read the first resource
// and get the first prompt, answer elicitation with the schema's defaults
// and sampling with a canned message (also when a modern server asks for
// them in an input_required result), then close the session.
package main
