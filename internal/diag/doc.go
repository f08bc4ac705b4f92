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
// they like; the CLI prints whatever reaches it with Render. Keeping the
// wording in one package keeps the messages consistent and lets golden files
// (testdata/*.golden, rewritten by go test -update) pin every word.
//
// Much of a report is text a server controls — its stderr, the bytes of a
// bad message, names from config files — so every piece is passed through
// sanitize.ForDisplay before it reaches a terminal.
package diag
