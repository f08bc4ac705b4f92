// Package minimal answers the benchmarks' MCP requests with the least work
// a server can do: no MCP or JSON library, the request's "message"
// argument copied into the result as it came (a JSON string stays a JSON
// string). A client round trip against it measures the client; the raw
// pipe and raw POST benchmarks compare against it. cmd/minimalecho serves
// it over stdio, Handler over streamable HTTP.
package minimal
