package mcp

import (
	"encoding/json"
	"testing"
)

func TestParseMessage(t *testing.T) {
	m, err := ParseMessage([]byte(` {"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x","_meta":{"progressToken":"t1"}}} `))
	if err != nil || string(m.ID) != "7" || m.Method != MethodToolsCall || !m.IsRequest() || m.IsResponse() {
		t.Fatalf("%+v %v", m, err)
	}
	if tok := Member(Member(m.Params, "_meta"), "progressToken"); string(tok) != `"t1"` {
		t.Errorf("progressToken %s", tok)
	}
	if Member(m.Params, "missing") != nil || Member(json.RawMessage(`[1]`), "x") != nil || Member(nil, "x") != nil {
		t.Error("Member found what is not there")
	}
	m, err = ParseMessage([]byte(`{"jsonrpc":"2.0","id":"a","result":{}}`))
	if err != nil || !m.IsResponse() || string(m.Result) != "{}" {
		t.Fatalf("%+v %v", m, err)
	}
	m, err = ParseMessage([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}`))
	if err != nil || m.HasID() || m.IsRequest() || string(Member(m.Params, "requestId")) != "3" {
		t.Fatalf("%+v %v", m, err)
	}
	for _, bad := range []string{``, `[]`, `{"id":1,}`, `{"method":5}`, `{"method":""}`, `{"id":1} x`, `{"a":"\u12"}`} {
		if _, err := ParseMessage([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
