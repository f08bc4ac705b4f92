package wasm

import (
	"bytes"
	"encoding/json"
	"testing"
)

var jsonSeeds = []string{
	`{"action":"allow"}`, `{"action":"deny","reason":"no"}`, `{"action":"modify","params":{"a":1}}`,
	`{"action":"modify","reason":"r","result":{"content":[{"type":"text","text":"a\nb \u00e9 \ud83d\ude00"}]}}`,
	`{"action":"modify","result":null}`, `{"action":"modify","params":null,"result":[1,-2.5e+3,true,false,null]}`,
	`{"error":"x"}`, `{"error":"bad \"quote\""}`, `{"action":"maybe"}`, `{"action":"x\u0041"}`, `{"Action":"allow"}`,
	`{"action":"allow","action":"deny"}`, `{"result":{},"action":"modify"}`, `{"action":"allow"} `, `{"action":"allow"}x`,
	"{\"action\":\"\xff\"}", "{\"action\":\"a\x01\"}", `{"action":"modify","result":{"a":01}}`, `{"action":"modify","result":[1,]}`,
	`{"action":"modify","result":"\x"}`, `{"action":"modify","result":-}`, `{"action":"modify","result":1.}`, `{"action":"modify","result":1e}`,
	`{"action":"modify","result":{"a" : [ 1 , 2 ] }}`, `hello`, `null`, `[]`, `"s"`, ` 0 `, `{`, `{"a":"\u12"}`, `[[[[[[]]]]]]`,
}

func TestFastJSON(t *testing.T) {
	for _, s := range jsonSeeds {
		checkFastJSON(t, []byte(s))
	}
	d, failure, ok := fastDecision([]byte(`{"action":"modify","reason":"r","result":{"a":1}}`))
	if !ok || failure != nil || d.Action != "modify" || d.Reason != "r" || string(d.Result) != `{"a":1}` {
		t.Errorf("fastDecision: %+v %v %v", d, failure, ok)
	}
}

// FuzzFastJSON holds the fast paths to encoding/json: whatever they
// accept, encoding/json accepts and decodes the same way.
func FuzzFastJSON(f *testing.F) {
	for _, s := range jsonSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(checkFastJSON)
}

func checkFastJSON(t *testing.T, b []byte) {
	d, failure, ok := fastDecision(b)
	if !ok {
		return
	}
	var w struct {
		Action string          `json:"action"`
		Reason string          `json:"reason"`
		Params json.RawMessage `json:"params"`
		Result json.RawMessage `json:"result"`
		Error  *string         `json:"error"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		t.Fatalf("fastDecision accepts %q, encoding/json does not: %v", b, err)
	}
	if string(w.Params) == "null" {
		w.Params = nil
	}
	if string(w.Result) == "null" {
		w.Result = nil
	}
	if (failure == nil) != (w.Error == nil) || failure != nil && *failure != *w.Error {
		t.Fatalf("%q: error %v, encoding/json %v", b, failure, w.Error)
	}
	if d.Action != w.Action || d.Reason != w.Reason || !bytes.Equal(d.Params, w.Params) || !bytes.Equal(d.Result, w.Result) {
		t.Fatalf("%q: fast %+v, encoding/json %+v", b, d, w)
	}
}
