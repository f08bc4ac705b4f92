package testserver

import (
	"bufio"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

const stdioMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{},"sampling":{},"roots":{}}}`

// TestModernFixturesOverStdio drives the 2026-07-28 fixtures over stdio
// with no initialize: MRTR rounds, the sealed requestState (tampered and
// transplanted ones refused), and the capability check.
func TestModernFixturesOverStdio(t *testing.T) {
	ctx := testCtx(t)
	toServer, fromServer, _ := stdioServer(t, ctx, Options{Conformance: true})
	rd := bufio.NewReader(fromServer)
	id := 0
	call := func(method, params string) (result map[string]any, code int) {
		t.Helper()
		id++
		fmt.Fprintf(toServer, `{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`+"\n", id, method, params)
		for {
			line, err := rd.ReadString('\n')
			if err != nil {
				t.Fatal(err)
			}
			var m struct {
				ID     *int
				Result map[string]any
				Error  *struct{ Code int }
			}
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				t.Fatalf("%v: %s", err, line)
			}
			if m.ID == nil {
				continue // a notification
			}
			if *m.ID != id {
				t.Fatalf("answer to %d, want %d", *m.ID, id)
			}
			if m.Error != nil {
				return nil, m.Error.Code
			}
			return m.Result, 0
		}
	}
	tool := func(name, extra string) string {
		return fmt.Sprintf(`{"name":%q,"arguments":{}%s,%s}`, name, extra, stdioMeta)
	}

	r, _ := call("tools/call", tool("test_input_required_result_multi_round", ""))
	state1, _ := r["requestState"].(string)
	if r["resultType"] != "input_required" || state1 == "" {
		t.Fatalf("round 1: %v", r)
	}
	r, _ = call("tools/call", tool("test_input_required_result_multi_round", `,"inputResponses":{"step1":{"action":"accept","content":{"name":"Ada"}}},"requestState":`+quote(state1)))
	state2, _ := r["requestState"].(string)
	if r["resultType"] != "input_required" || state2 == "" || state2 == state1 {
		t.Fatalf("round 2: %v", r)
	}
	r, _ = call("tools/call", tool("test_input_required_result_multi_round", `,"inputResponses":{"step2":{"action":"accept","content":{"color":"green"}}},"requestState":`+quote(state2)))
	if r["resultType"] != "complete" || !strings.Contains(fmt.Sprint(r["content"]), "Ada likes green") {
		t.Fatalf("round 3: %v", r)
	}

	r, _ = call("tools/call", tool("test_input_required_result_tampered_state", ""))
	state, _ := r["requestState"].(string)
	confirm := `,"inputResponses":{"confirm":{"action":"accept","content":{"ok":true}}},"requestState":`
	if _, code := call("tools/call", tool("test_input_required_result_tampered_state", confirm+quote(state+"-TAMPERED"))); code != -32602 {
		t.Fatalf("tampered state: code %d", code)
	}
	// A state handed out for one tool does not serve another.
	if _, code := call("tools/call", tool("test_input_required_result_request_state", confirm+quote(state))); code != -32602 {
		t.Fatalf("transplanted state: code %d", code)
	}
	if r, code := call("tools/call", tool("test_input_required_result_tampered_state", confirm+quote(state))); code != 0 || !strings.Contains(fmt.Sprint(r["content"]), "state-ok") {
		t.Fatalf("intact state: %v %d", r, code)
	}

	noCaps := strings.Replace(tool("test_missing_capability", ""), `{"elicitation":{},"sampling":{},"roots":{}}`, `{}`, 1)
	if _, code := call("tools/call", noCaps); code != -32021 {
		t.Fatalf("undeclared sampling: code %d", code)
	}
	r, _ = call("prompts/get", `{"name":"test_input_required_result_prompt",`+stdioMeta+`}`)
	if r["resultType"] != "input_required" {
		t.Fatalf("prompt: %v", r)
	}
}

func quote(s string) string { b, _ := json.Marshal(s); return string(b) }
