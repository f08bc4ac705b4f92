package sampling_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/sampling"
)

// A server's sampling request answered by a chat-completions endpoint (a
// stand-in on loopback here; Ollama's would be http://127.0.0.1:11434/v1).
func ExampleModel_Create() {
	endpoint := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]any{"model": "llama3.1", "choices": []any{map[string]any{
			"message": map[string]any{"role": "assistant", "content": "Paris."}, "finish_reason": "stop"}}})
	}))
	defer endpoint.Close()

	m := sampling.New(&sampling.Block{URL: endpoint.URL + "/v1", Model: "llama3.1", Servers: []string{"geo"},
		MaxTokens: 256, PerMinute: 10, Timeout: 30 * time.Second}, nil)
	question, _ := json.Marshal(map[string]string{"type": "text", "text": "Capital of France?"})
	res, err := m.Create(context.Background(), "geo", &mcp.CreateMessageParams{
		Messages: []mcp.SamplingMessage{{Role: "user", Content: question}}, MaxTokens: 50})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Model, res.StopReason, string(res.Content))
	// Output: llama3.1 endTurn {"text":"Paris.","type":"text"}
}
