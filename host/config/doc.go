// Package config loads Nexus configuration into the canonical mcpServers
// model: one Server per configured MCP server, each remembering the file and
// layer it came from so every error can point at it.
//
// This first version reads the two JSON formats of the mcpServers model
// (Claude Desktop's "mcpServers" with command and args, and the "servers"
// format with a command array, as an object or an array). Config files are
// outside input: size-capped before parsing, UTF-8 checked, and every
// problem is a diag.Report naming the file, the server, what was expected
// and how to fix it.
package config
