// Command conformance-client drives Nexus's MCP client (host/mcp over
// internal/transport/http, with internal/auth for OAuth) through the client
// scenarios of the official MCP conformance suite
// (@modelcontextprotocol/conformance). The suite starts a mock server per
// scenario and runs this program with the server's URL as the last
// argument, the scenario's name in MCP_CONFORMANCE_SCENARIO and any extra
// data (client credentials, keys, IdP tokens) in MCP_CONFORMANCE_CONTEXT.
//
// Run it through `make conformance`; by hand:
//
//	go build -o /tmp/cc ./internal/cmd/conformance-client
//	node tools/npm/node_modules/@modelcontextprotocol/conformance/dist/index.js \
//	    client --command "/tmp/cc" --suite all
//
// What it does is what a host does: connect (authorizing when the server
// asks), list the tools, call each one with arguments made from its input
// schema, answer elicitation with the schema's defaults and sampling with
// a canned message, then close the session.
package main
