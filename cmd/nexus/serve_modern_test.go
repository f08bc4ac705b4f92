package main

import (
	"strings"
	"testing"
)

const modernMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`

// `nexus serve` on stdio serves an MCP 2026-07-28 client on the same
// stdin a legacy one uses: no initialize; the server/discover probe
// answers with the versions, so a dual-era client stays modern; lists
// and calls carry resultType; a version it does not speak gets -32022.
func TestServeStdioModern(t *testing.T) {
	got := serveFilter(t, "",
		`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{`+modernMeta+`}}`+"\n"+
			`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{`+modernMeta+`}}`+"\n"+
			`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"mcp_testserver_echo","arguments":{"message":"modern hi"},`+modernMeta+`}}`+"\n"+
			`{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"1900-01-01"}}}`+"\n")
	if a := got["1"]; !strings.Contains(a, `"supportedVersions":["2026-07-28","2025-11-25"`) || !strings.Contains(a, `"io.modelcontextprotocol/serverInfo"`) {
		t.Errorf("server/discover: %s", a)
	}
	if a := got["2"]; !strings.Contains(a, `"resultType":"complete"`) || !strings.Contains(a, `"cacheScope":"private"`) || !strings.Contains(a, "mcp_testserver_echo") {
		t.Errorf("tools/list: %s", a)
	}
	if a := got["3"]; !strings.Contains(a, `"resultType":"complete"`) || !strings.Contains(a, "modern hi") {
		t.Errorf("tools/call: %s", a)
	}
	if a := got["4"]; !strings.Contains(a, "-32022") || !strings.Contains(a, "1900-01-01") {
		t.Errorf("an unknown version: %s", a)
	}
	// The echo's log was not asked for (no logLevel): nothing but answers.
	if n := got[""]; strings.Contains(n, "notifications/message") {
		t.Errorf("a notification nobody asked for: %s", n)
	}
}
