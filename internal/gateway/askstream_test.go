package gateway_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/gateway"
)

// stream POSTs a request in the session and hands each message of its
// response stream (SSE) to the channel it returns, which is closed when
// the stream ends: after the request's answer, or once ctx is done. The
// gateway sends the stream's headers with its first message, so the
// POST is made in the background too.
func (tn *tenant) stream(t *testing.T, ctx context.Context, body string) <-chan json.RawMessage {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, tn.e.url+gateway.EndpointPath, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+tn.token)
	req.Header.Set("Mcp-Session-Id", tn.sid)
	ch := make(chan json.RawMessage, 16)
	go func() {
		defer close(ch)
		resp, err := client.Do(req)
		if err != nil {
			if ctx.Err() == nil { // else the test is over
				t.Errorf("POST %s: %v", body, err)
			}
			return
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			t.Errorf("POST %s: %d %s, want an event stream", body, resp.StatusCode, resp.Header.Get("Content-Type"))
			return
		}
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				select {
				case ch <- json.RawMessage(data):
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return ch
}

// A legacy (2025-11-25) session whose client answers elicitation and
// roots has connections of its own; over streamable HTTP both ways, with
// two of its calls to one server in flight, what the server asks during
// each call goes to the client on that call's own response stream (the
// streamable HTTP transport: a server's request related to a client's
// request is sent on that request's stream), not on the newest call's,
// and its answer reaches that call. The older call asks first: the
// newest-request rule would put its question on the other call's stream.
func TestLegacyAskOnItsCallsStream(t *testing.T) {
	for _, c := range []struct {
		method string
		ask    string                                        // the tool's arguments beside its key: what it asks
		answer func(key string) string                       // the client's result
		want   func(key string) string                       // the tool's text with that answer
		check  func(key string, params json.RawMessage) bool // the question is the key's call's
	}{
		{
			method: mcp.MethodElicitationCreate,
			answer: func(key string) string { return string(accept(key)) },
			want:   func(key string) string { return "answered: accept:" + key },
			check: func(key string, params json.RawMessage) bool {
				var p mcp.ElicitParams
				return json.Unmarshal(params, &p) == nil && p.Message == "Your "+key+"?"
			},
		},
		{
			method: mcp.MethodSamplingCreateMessage,
			ask:    `"sample":true`,
			answer: func(key string) string {
				return `{"role":"assistant","content":{"type":"text","text":"` + key + `"},"model":"m"}`
			},
			want: func(key string) string { return "sampled: " + key },
			check: func(key string, params json.RawMessage) bool {
				var p mcp.CreateMessageParams
				var c mcp.Content
				return json.Unmarshal(params, &p) == nil && len(p.Messages) == 1 &&
					json.Unmarshal(p.Messages[0].Content, &c) == nil && c.Text == "Your "+key+"?"
			},
		},
		{
			method: mcp.MethodRootsList,
			ask:    `"roots":true`,
			answer: func(key string) string { return `{"roots":[{"uri":"file:///` + key + `"}]}` },
			want:   func(key string) string { return "roots: file:///" + key },
			// A roots/list names no call: only the key's gate is open.
			check: func(string, json.RawMessage) bool { return true },
		},
	} {
		t.Run(c.method, func(t *testing.T) {
			g := newGater("older", "newer")
			e, _, _ := gaterEnv(t, g, true)
			he := serveEnv(t, e, gateway.HTTPOptions{})
			ctx := ctxT(t)
			tn := he.tenant("claude-token", `{"elicitation":{"form":{}},"roots":{},"sampling":{}}`)

			streams := map[string]<-chan json.RawMessage{}
			ids := map[string]int{"older": 11, "newer": 12}
			for _, key := range []string{"older", "newer"} {
				streams[key] = tn.stream(t, ctx, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"gate","arguments":{"key":%q%s}}}`, ids[key], key, comma(c.ask)))
				if k := recv(t, g.started); k != key {
					t.Fatalf("%s reached the tool, want %s", k, key)
				}
			}
			for _, key := range []string{"older", "newer"} {
				other := "newer"
				if key == "newer" {
					other = "older"
				}
				close(g.gates[key])
				// The question comes on the call's stream, and on no other.
				var q struct {
					ID     json.RawMessage `json:"id"`
					Method string          `json:"method"`
					Params json.RawMessage `json:"params"`
				}
				select {
				case msg := <-streams[key]:
					if err := json.Unmarshal(msg, &q); err != nil || q.Method != c.method || len(q.ID) == 0 || !c.check(key, q.Params) {
						t.Fatalf("on the %s call's stream came %s, want the server's question of that call", key, msg)
					}
				case msg, ok := <-streams[other]:
					t.Fatalf("the %s call's question: on the %s call's stream came %s (open: %v)", key, other, msg, ok)
				case <-ctx.Done():
					t.Fatalf("the %s call's question did not come", key)
				}
				if status, got := tn.send(`{"jsonrpc":"2.0","id":` + string(q.ID) + `,"result":` + c.answer(key) + `}`); status != http.StatusAccepted {
					t.Fatalf("answering the %s call's question: %d %s", key, status, got)
				}
				// The call's answer follows on its stream, with the client's.
				var res struct {
					ID     int
					Result mcp.CallToolResult
				}
				select {
				case msg := <-streams[key]:
					if err := json.Unmarshal(msg, &res); err != nil || res.ID != ids[key] || len(res.Result.Content) != 1 || res.Result.Content[0].Text != c.want(key) {
						t.Fatalf("on the %s call's stream came %s, want its answer (%q)", key, msg, c.want(key))
					}
				case msg, ok := <-streams[other]:
					t.Fatalf("the %s call's answer: on the %s call's stream came %s (open: %v)", key, other, msg, ok)
				case <-ctx.Done():
					t.Fatalf("the %s call's answer did not come", key)
				}
				select {
				case msg, ok := <-streams[key]:
					if ok {
						t.Fatalf("after its answer, the %s call's stream carried %s", key, msg)
					}
				case <-ctx.Done():
					t.Fatalf("the %s call's stream did not end after its answer", key)
				}
				streams[key] = nil // ended: never ready in a select
			}
		})
	}
}

// comma is s after a comma, or nothing.
func comma(s string) string {
	if s == "" {
		return ""
	}
	return "," + s
}
