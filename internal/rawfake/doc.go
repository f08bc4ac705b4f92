// Package rawfake is an MCP server for tests of what a client, the host
// or the gateway does with a result exactly as a server spells it: its
// one tool, "reply", answers with the JSON its caller gives as the string
// argument "result", and a read of the resource "raw:<JSON, query-escaped>"
// answers with that JSON, byte for byte (key order, spacing, escapes,
// repeated or unknown members, malformed UTF-8), which no server built on
// a codec would write.
package rawfake
