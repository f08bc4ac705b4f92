package mcp

import (
	"encoding/json"
	"testing"
)

// An input_required result encodes itself as encoding/json would (keys
// in order, params as they came), and refuses params that are not JSON.
func TestInputRequiredResultAppendJSON(t *testing.T) {
	r := &InputRequiredResult{ResultType: ResultInputRequired, RequestState: "nxs1.a\"b",
		InputRequests: InputRequests{
			"z": {Method: MethodRootsList},
			"a": {Method: MethodElicitationCreate, Params: json.RawMessage(`{"message":"Name?","requestedSchema":{"type":"object"}}`)},
		},
		Meta: Meta{"k": json.RawMessage(`1`)}}
	got, err := r.appendJSON(nil)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(r)
	if string(got) != string(want) {
		t.Errorf("appendJSON:\n%s\nencoding/json:\n%s", got, want)
	}
	got, err = (&InputRequiredResult{ResultType: ResultInputRequired}).appendJSON(nil)
	if err != nil || string(got) != `{"resultType":"input_required"}` {
		t.Errorf("bare: %s, %v", got, err)
	}
	r.InputRequests["a"] = InputRequest{Method: MethodElicitationCreate, Params: json.RawMessage(`{"message":`)}
	if _, err := r.appendJSON(nil); err == nil {
		t.Error("params that are not JSON were encoded")
	}
}
