package sampling

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/nexus-mcp/nexus/host/mcp"
)

// MaxResponse bounds the endpoint's answer.
const MaxResponse = 1 << 20

// Model answers sampling requests through the configured endpoint. It is
// safe for concurrent use.
type Model struct {
	cfg    Block
	url    string
	client *http.Client

	mu     sync.Mutex
	recent map[string][]time.Time // by server: its requests in the last minute
	now    func() time.Time
}

// New makes the model of a sampling block. client nil uses a plain one;
// the endpoint is the person's own choice (often a local server), so no
// address is refused.
func New(cfg *Block, client *http.Client) *Model {
	if client == nil {
		client = &http.Client{}
	}
	u := strings.TrimSuffix(cfg.URL, "/")
	if !strings.HasSuffix(u, "/chat/completions") {
		u += "/chat/completions"
	}
	return &Model{cfg: *cfg, url: u, client: client, recent: map[string][]time.Time{}, now: time.Now}
}

// Name is the model's name, as a person is told it.
func (m *Model) Name() string { return m.cfg.Model }

// Allowed says whether server may sample through the model.
func (m *Model) Allowed(server string) bool {
	for _, g := range m.cfg.Servers {
		if ok, _ := path.Match(g, server); ok {
			return true
		}
	}
	return false
}

// Error is a request the model did not answer: refused here (a limit) or
// failed at the endpoint.
type Error struct {
	Server string
	Msg    string
}

func (e *Error) Error() string {
	return "sampling for server " + fmt.Sprintf("%q", e.Server) + ": " + e.Msg
}

// Create answers one request of server's.
func (m *Model) Create(ctx context.Context, server string, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
	fail := func(format string, args ...any) error {
		return &Error{Server: server, Msg: fmt.Sprintf(format, args...)}
	}
	if !m.Allowed(server) {
		return nil, fail("the server is not in the sampling block's servers %q", m.cfg.Servers)
	}
	if err := m.admit(server); err != nil {
		return nil, fail("%v", err)
	}
	body, err := m.request(p)
	if err != nil {
		return nil, fail("%v", err)
	}
	ctx, cancel := context.WithTimeout(ctx, m.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, m.url, bytes.NewReader(body))
	if err != nil {
		return nil, fail("%v", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if m.cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+m.cfg.APIKey)
	}
	resp, err := m.client.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil {
			return nil, fail("the model endpoint %s did not answer within %s (raise sampling { timeout })", m.url, m.cfg.Timeout)
		}
		return nil, fail("the model endpoint %s: %v", m.url, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, MaxResponse+1))
	if err != nil {
		return nil, fail("reading the model endpoint's answer: %v", err)
	}
	if len(raw) > MaxResponse {
		return nil, fail("the model endpoint's answer is over %d bytes", MaxResponse)
	}
	if resp.StatusCode/100 != 2 {
		return nil, fail("the model endpoint %s answered %s: %s", m.url, resp.Status, excerpt(raw))
	}
	var out struct {
		Model   string `json:"model"`
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(raw, &out); err != nil || len(out.Choices) == 0 {
		return nil, fail("the model endpoint's answer is not a chat completion (%s)", excerpt(raw))
	}
	content, _ := json.Marshal(map[string]string{"type": "text", "text": out.Choices[0].Message.Content})
	model := out.Model
	if model == "" {
		model = m.cfg.Model
	}
	return &mcp.CreateMessageResult{Role: "assistant", Content: content, Model: model, StopReason: stopReason(out.Choices[0].FinishReason)}, nil
}

// admit counts a request against the server's per-minute limit.
func (m *Model) admit(server string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	keep := m.recent[server][:0]
	for _, t := range m.recent[server] {
		if now.Sub(t) < time.Minute {
			keep = append(keep, t)
		}
	}
	if len(keep) >= m.cfg.PerMinute {
		m.recent[server] = keep
		return fmt.Errorf("over its limit of %d requests a minute (raise sampling { per_minute })", m.cfg.PerMinute)
	}
	m.recent[server] = append(keep, now)
	return nil
}

// request is the chat-completions request for p: the system prompt first,
// then the messages (text only), maxTokens capped.
func (m *Model) request(p *mcp.CreateMessageParams) ([]byte, error) {
	type message struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	}
	var msgs []message
	if p.SystemPrompt != "" {
		msgs = append(msgs, message{"system", p.SystemPrompt})
	}
	for i, sm := range p.Messages {
		var c struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if err := json.Unmarshal(sm.Content, &c); err != nil || c.Type != "text" {
			return nil, fmt.Errorf("message %d is not text (type %q): the model endpoint is sent text only", i+1, c.Type)
		}
		role := sm.Role
		if role != "assistant" {
			role = "user"
		}
		msgs = append(msgs, message{role, c.Text})
	}
	if len(msgs) == 0 {
		return nil, errors.New("the request has no messages")
	}
	max := m.cfg.MaxTokens
	if p.MaxTokens > 0 && p.MaxTokens < max {
		max = p.MaxTokens
	}
	req := map[string]any{"model": m.cfg.Model, "messages": msgs, "max_tokens": max}
	if p.Temperature != nil {
		req["temperature"] = *p.Temperature
	}
	if len(p.StopSequences) > 0 {
		req["stop"] = p.StopSequences
	}
	return json.Marshal(req)
}

func stopReason(finish string) string {
	switch finish {
	case "stop":
		return "endTurn"
	case "length":
		return "maxTokens"
	}
	return finish
}

func excerpt(b []byte) string {
	s := strings.Join(strings.Fields(string(b)), " ")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	if s == "" {
		s = "an empty body"
	}
	return s
}
