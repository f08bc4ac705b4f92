package gateway

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/nexus-mcp/nexus/host/mcp"
)

// A retry's inputResponses are split, not decoded: each answer as it
// came, under its key as JSON spells it; what is not an object of
// answers, or a requestState that is not a string, is invalid params.
func TestInputOf(t *testing.T) {
	in, err := inputOf(mcp.MethodToolsCall, scan(json.RawMessage(`{"name":"x","inputResponses":{"a\u002db": {"action" : "accept"},"c":{}},"requestState":"nxs1.\u0041b"}`)))
	if err != nil {
		t.Fatal(err)
	}
	if len(in.InputResponses) != 2 || string(in.InputResponses["a-b"]) != `{"action" : "accept"}` || string(in.InputResponses["c"]) != `{}` {
		t.Errorf("inputResponses: %q", in.InputResponses)
	}
	if in.RequestState != "nxs1.Ab" {
		t.Errorf("requestState: %q", in.RequestState)
	}
	if in, err := inputOf(mcp.MethodToolsCall, scan(json.RawMessage(`{"inputResponses":null,"requestState":null}`))); err != nil || in.InputResponses != nil || in.RequestState != "" {
		t.Errorf("nulls: %+v, %v", in, err)
	}
	for _, c := range []struct{ params, want string }{
		{`{"inputResponses":[1]}`, "inputResponses must be an object of results by key"},
		{`{"inputResponses":"x"}`, "inputResponses must be an object of results by key"},
		{`{"requestState":5}`, "requestState must be the string it was handed"},
		{`{"requestState":{}}`, "requestState must be the string it was handed"},
	} {
		_, err := inputOf(mcp.MethodToolsCall, scan(json.RawMessage(c.params)))
		var rpc *mcp.RPCError
		if !errors.As(err, &rpc) || rpc.Code != mcp.CodeInvalidParams || !strings.Contains(rpc.Message, c.want) {
			t.Errorf("%s: %v, want invalid params saying %q", c.params, err, c.want)
		}
	}
}

// An elicitation's answer is checked in one pass, not decoded: what it
// must be and say.
func TestCheckElicitResult(t *testing.T) {
	for _, c := range []struct{ raw, bad string }{
		{`{"action":"accept","content":{"name":"Ada"}}`, ""},
		{` {"action":"decline","_meta":null} `, ""},
		{`{"action":"cancel","content":null,"x":[1]}`, ""},
		{`{"content":{}}`, "it has no action"},
		{`{"action":""}`, "it has no action"},
		{`{"action":5}`, "its action is not a string"},
		{`{"action":"accept","content":[1]}`, "its content is not an object"},
		{`{"action":"accept","_meta":"m"}`, "its _meta is not an object"},
		{`["accept"]`, "it is not an object"},
		{`{"action":"accept"`, "unexpected end"},
	} {
		err := checkAnswer(mcp.MethodElicitationCreate, json.RawMessage(c.raw))
		if c.bad == "" && err != nil || c.bad != "" && (err == nil || !strings.Contains(err.Error(), c.bad)) {
			t.Errorf("%s: %v, want %q", c.raw, err, c.bad)
		}
	}
}
