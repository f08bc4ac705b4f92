// Package diag turns failures into messages a person can act on.
//
// A bare "exec: npx: executable file not found in $PATH" leaves the reader
// to work out which of their servers failed, which of several layered config
// files defined it, what the server's environment looked like and what to
// change. A *Report carries that context — what happened, where (server,
// config file and layer, command or URL), the likely causes and a fix — and
// renders it in one consistent layout:
//
//	MCP Server Launch Failed
//	━━━━━━━━━━━━━━━━━━━━━━━━
//
//	Server: "filesystem"
//	Source: ./.nexus/mcp.json (project config), line 3
//	Command: ["npx", "-y", "@modelcontextprotocol/server-filesystem"]
//
//	Problem: Command not found: npx
//	...
//
// Packages that detect a failure (transports, config, the session) build
// Reports with the constructors here and return them as errors, wrapped as
// they like; internal/explain, above them, turns every other typed error
// (the host's, the registry's, the chain's refusals) into a Report with
// the same constructors. Keeping the wording in one place keeps the
// messages consistent and lets golden files (testdata/*.golden, rewritten
// by go test -update) pin every word.
//
// One Report has a renderer for each reader (render.go): Error (and
// Render) for a person at the terminal, JSON for --output json, Brief for
// the gateway's client (a JSON-RPC error, a refused call's tool result),
// Headline for the console's lists.
//
// Much of a report is text a server controls — its stderr, the bytes of a
// bad message, names from config files — so every piece is passed through
// sanitize.ForDisplay before it reaches a terminal.
package diag
