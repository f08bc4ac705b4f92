package sampling

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nexus-mcp/nexus/host/mcp"
)

// endpoint is a fake chat-completions endpoint on loopback that answers
// with the last message's text reversed and records what it was sent.
func endpoint(t *testing.T, handle func(w http.ResponseWriter, body map[string]any)) (*httptest.Server, *atomic.Value) {
	var got atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" || r.Method != http.MethodPost {
			http.Error(w, "not here", http.StatusNotFound)
			return
		}
		var body map[string]any
		json.NewDecoder(r.Body).Decode(&body)
		body["authorization"] = r.Header.Get("Authorization")
		got.Store(body)
		handle(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv, &got
}

func answer(w http.ResponseWriter, body map[string]any) {
	msgs := body["messages"].([]any)
	last := msgs[len(msgs)-1].(map[string]any)["content"].(string)
	json.NewEncoder(w).Encode(map[string]any{"model": "fake-1", "choices": []any{map[string]any{
		"message": map[string]any{"role": "assistant", "content": "you said: " + last}, "finish_reason": "stop"}}})
}

func text(role, s string) mcp.SamplingMessage {
	c, _ := json.Marshal(map[string]string{"type": "text", "text": s})
	return mcp.SamplingMessage{Role: role, Content: c}
}

func block(url string) *Block {
	return &Block{URL: url + "/v1", Model: "m", APIKey: "k", Servers: []string{"ts", "gh*"}, MaxTokens: 100, PerMinute: 2, Timeout: 5 * time.Second, Confirm: true}
}

// A request goes to the endpoint as a chat completion (system prompt first,
// maxTokens capped, the key as a bearer token) and its answer comes back as
// the spec's result.
func TestCreate(t *testing.T) {
	srv, got := endpoint(t, answer)
	m := New(block(srv.URL), srv.Client())
	res, err := m.Create(context.Background(), "ts", &mcp.CreateMessageParams{SystemPrompt: "be brief", MaxTokens: 5000,
		Messages: []mcp.SamplingMessage{text("user", "hi"), text("assistant", "hello"), text("user", "bye")}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Role != "assistant" || res.Model != "fake-1" || res.StopReason != "endTurn" || !strings.Contains(string(res.Content), `"text":"you said: bye"`) {
		t.Errorf("result %+v %s", res, res.Content)
	}
	body := got.Load().(map[string]any)
	msgs := body["messages"].([]any)
	if body["model"] != "m" || body["max_tokens"] != float64(100) || body["authorization"] != "Bearer k" || len(msgs) != 4 ||
		msgs[0].(map[string]any)["role"] != "system" || msgs[2].(map[string]any)["role"] != "assistant" {
		t.Errorf("sent %v", body)
	}
}

// Every limit refuses with what it is and how to raise it.
func TestLimits(t *testing.T) {
	srv, _ := endpoint(t, answer)
	m := New(block(srv.URL), srv.Client())
	req := &mcp.CreateMessageParams{Messages: []mcp.SamplingMessage{text("user", "x")}}
	var se *Error
	if _, err := m.Create(context.Background(), "fs", req); !errors.As(err, &se) || !strings.Contains(err.Error(), "not in the sampling block's servers") {
		t.Errorf("an unlisted server: %v", err)
	}
	for i := 0; i < 2; i++ {
		if _, err := m.Create(context.Background(), "gh-enterprise", req); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := m.Create(context.Background(), "gh-enterprise", req); err == nil || !strings.Contains(err.Error(), "per_minute") {
		t.Errorf("the third request in a minute: %v", err)
	}
	if _, err := m.Create(context.Background(), "ts", req); err != nil {
		t.Errorf("another server has its own count: %v", err)
	}
	img, _ := json.Marshal(map[string]string{"type": "image", "data": "AAAA", "mimeType": "image/png"})
	if _, err := m.Create(context.Background(), "ts", &mcp.CreateMessageParams{Messages: []mcp.SamplingMessage{{Role: "user", Content: img}}}); err == nil || !strings.Contains(err.Error(), "text only") {
		t.Errorf("an image: %v", err)
	}
}

// What the endpoint does wrong is said, with a bounded excerpt, and never
// waited for past the timeout.
func TestEndpointFailures(t *testing.T) {
	req := &mcp.CreateMessageParams{Messages: []mcp.SamplingMessage{text("user", "x")}}
	for name, tc := range map[string]struct {
		handle func(w http.ResponseWriter, body map[string]any)
		want   string
	}{
		"status":   {func(w http.ResponseWriter, _ map[string]any) { http.Error(w, `{"error":"model not found"}`, 404) }, "404 Not Found: {\"error\":\"model not found\"}"},
		"garbage":  {func(w http.ResponseWriter, _ map[string]any) { w.Write([]byte("<html>hi</html>")) }, "not a chat completion (<html>hi</html>)"},
		"huge":     {func(w http.ResponseWriter, _ map[string]any) { w.Write([]byte(strings.Repeat("x", MaxResponse+10))) }, "over 1048576 bytes"},
		"no reply": {func(w http.ResponseWriter, _ map[string]any) { time.Sleep(3 * time.Second) }, "did not answer within 200ms"},
	} {
		t.Run(name, func(t *testing.T) {
			srv, _ := endpoint(t, tc.handle)
			b := block(srv.URL)
			b.Timeout = 200 * time.Millisecond
			if name != "no reply" {
				b.Timeout = 10 * time.Second
			}
			_, err := New(b, srv.Client()).Create(context.Background(), "ts", req)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want %q", err, tc.want)
			}
		})
	}
}
