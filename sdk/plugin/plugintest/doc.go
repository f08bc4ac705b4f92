// Package plugintest helps tests run real plugin binaries through the host:
// Build builds a plugin's main package (once for every test process of
// the checkout), Start and StartBinary start it as Nexus does, from a
// plugin block pinned to its checksum, and the Plugin they return opens
// filter blocks on it (Filter) and server blocks' connections through it
// (Dial); everything stops when the test ends. Its API speaks only public
// types (host/mcp's, sdk/event's, and the errors and Info named here), so
// a plugin's tests build in its author's module: the plugins and examples
// of this repository import nothing else (internal/arch checks). For the
// far end of a transport, EchoServer is an MCP server and RedisServer a
// Redis, for a plugin that keeps its state there.
package plugintest
