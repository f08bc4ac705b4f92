package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// serveFilter runs `nexus serve --agent cli` on stdio with input as its
// whole stdin (closed at once, as printf | nexus serve does) in front of
// the built-in test server, and returns its stdout by answer id.
func serveFilter(t *testing.T, limits, input string) map[string]string {
	t.Helper()
	out, stderr, code := serveStdio(t, testserverHCL+"agent \"cli\" { permission = \"yolo\" }\n"+limits, input, "--agent", "cli")
	if code != 0 {
		t.Fatalf("nexus serve: exit %d\n%s", code, stderr)
	}
	got := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var m struct{ ID json.RawMessage }
		json.Unmarshal([]byte(l), &m)
		got[string(m.ID)] = l
	}
	return got
}

const filterInit = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
`

// At the end of its input, `nexus serve` on stdio answers every request it
// read before it exits, as a Unix filter does (issue 37: tools/list went
// unanswered), a slow call included.
func TestServeStdioDrain(t *testing.T) {
	got := serveFilter(t, "", filterInit+
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`+"\n"+
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"mcp_testserver_slow_operation","arguments":{"duration":0.5,"steps":1}}}`+"\n"+
		`{"jsonrpc":"2.0","id":{"a":1},"method":"tools/list"}`+"\n")
	if !strings.Contains(got["2"], "mcp_testserver_echo") {
		t.Errorf("tools/list went unanswered: %q", got)
	}
	if !strings.Contains(got["3"], `"result"`) {
		t.Errorf("the slow call went unanswered: %q", got)
	}
	// An id that is an object is refused, with a null id.
	if !strings.Contains(got["null"], "-32600") || !strings.Contains(got["null"], "a JSON-RPC id is a string or an integer") {
		t.Errorf("an object id: %q", got["null"])
	}
}

// The drain is bounded: a call longer than drain_timeout is cancelled and
// the gateway exits without its answer (serveFilter returns: it exited).
func TestServeStdioDrainTimeout(t *testing.T) {
	got := serveFilter(t, "gateway {\n  limits {\n    drain_timeout = \"300ms\"\n  }\n}\n", filterInit+
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"mcp_testserver_slow_operation","arguments":{"duration":300,"steps":1}}}`+"\n")
	if a, ok := got["3"]; ok {
		t.Errorf("a call past the drain timeout was answered: %s", a)
	}
}
