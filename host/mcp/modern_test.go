package mcp

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestParseRequestMeta(t *testing.T) {
	for _, tc := range []struct {
		name, params string
		modern       bool
		version      string
		level        LoggingLevel
		err          string
	}{
		{name: "legacy", params: `{"name":"echo"}`},
		{name: "no params"},
		{name: "other meta", params: `{"_meta":{"progressToken":1}}`},
		{name: "modern", params: `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"sampling":{}},"io.modelcontextprotocol/logLevel":"info"}}`, modern: true, version: "2026-07-28", level: "info"},
		{name: "version not a string", params: `{"_meta":{"io.modelcontextprotocol/protocolVersion":7}}`, modern: true, err: "non-empty string"},
		{name: "bad level", params: `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/logLevel":"loud"}}`, modern: true, version: "2026-07-28", err: "logLevel"},
		{name: "key only in a value", params: `{"name":"io.modelcontextprotocol/protocolVersion"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, modern, err := ParseRequestMeta(json.RawMessage(tc.params))
			if modern != tc.modern || m.ProtocolVersion != tc.version || (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
				t.Fatalf("got %+v modern=%v err=%v; want version %q modern=%v err containing %q", m, modern, err, tc.version, tc.modern, tc.err)
			}
			if err == nil && m.LogLevel != tc.level {
				t.Fatalf("level %q, want %q", m.LogLevel, tc.level)
			}
		})
	}
}

func TestRequestMetaPutRoundTrip(t *testing.T) {
	in := RequestMeta{ProtocolVersion: Version20260728, ClientInfo: &Implementation{Name: "c", Version: "1"}, LogLevel: "debug",
		Capabilities: ClientCapabilities{Elicitation: &ElicitationCapability{}}}
	params, _ := json.Marshal(map[string]any{"name": "x", "_meta": in.Put(nil)})
	out, modern, err := ParseRequestMeta(params)
	if err != nil || !modern || out.ProtocolVersion != in.ProtocolVersion || out.ClientInfo.Name != "c" || out.LogLevel != "debug" || out.Capabilities.Elicitation == nil {
		t.Fatalf("round trip: %+v %v %v from %s", out, modern, err, params)
	}
}

func TestInputRequiredCheck(t *testing.T) {
	if err := (&InputRequiredResult{}).Check(); err == nil {
		t.Fatal("an empty input_required result passed")
	}
	if err := (&InputRequiredResult{InputRequests: InputRequests{"a": {Method: "tools/call"}}}).Check(); err == nil || !strings.Contains(err.Error(), `"tools/call"`) {
		t.Fatalf("tools/call as an input request: %v", err)
	}
	if err := (&InputRequiredResult{RequestState: "s"}).Check(); err != nil {
		t.Fatalf("state only: %v", err)
	}
}

func FuzzParseRequestMeta(f *testing.F) {
	f.Add([]byte(`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"a","version":"1"}}}`))
	f.Add([]byte(`{"_meta":{"io.modelcontextprotocol/protocolVersion":null}}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, modern, err := ParseRequestMeta(b)
		if err == nil && modern && m.ProtocolVersion == "" {
			t.Fatalf("modern with no version from %q", b)
		}
	})
}
