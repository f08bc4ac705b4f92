package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// askServer has a tool written against the legacy API: it elicits a name,
// then samples a greeting, asking the client mid-call each time.
func askServer(runs *int) *Server {
	s := NewServer(Implementation{Name: "ask", Version: "1"}, ServerOptions{})
	s.AddTool(Tool{Name: "greet"}, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		*runs++
		el, err := req.Session.Elicit(ctx, &ElicitParams{Message: "your name?", RequestedSchema: json.RawMessage(`{"type":"object"}`)})
		if err != nil {
			return nil, err
		}
		sm, err := req.Session.CreateMessage(ctx, &CreateMessageParams{MaxTokens: 10, Messages: []SamplingMessage{{Role: "user", Content: json.RawMessage(`{"type":"text","text":"greet"}`)}}})
		if err != nil {
			// A handler that turns the error into a result: still answered
			// input_required while a question is open.
			return &CallToolResult{Content: []Content{{Type: ContentText, Text: "no greeting: " + err.Error()}}, IsError: true}, nil
		}
		var said Content
		json.Unmarshal(sm.Content, &said)
		return &CallToolResult{Content: []Content{{Type: ContentText, Text: fmt.Sprintf("%s, %s", said.Text, el.Content["name"])}}}, nil
	})
	return s
}

// TestAskBecomesInputRequired: a legacy-style handler's questions on a
// modern request are answered input_required, round by round, with the
// earlier answers sealed in requestState; the last round completes.
func TestAskBecomesInputRequired(t *testing.T) {
	runs := 0
	c := serveRaw(t, askServer(&runs), nil)
	caps := `{"elicitation":{},"sampling":{}}`
	r := result(t, c.call(1, "tools/call", `{"name":"greet",`+modernMeta(caps, "")+`}`))
	reqs, _ := r["inputRequests"].(map[string]any)
	if r["resultType"] != "input_required" || len(reqs) != 1 || reqs["elicitation.create-0"] == nil {
		t.Fatalf("round 1: %v", r)
	}
	state1, _ := r["requestState"].(string)
	r = result(t, c.call(2, "tools/call", `{"name":"greet","inputResponses":{"elicitation.create-0":{"action":"accept","content":{"name":"Ada"}}},"requestState":`+quote(state1)+`,`+modernMeta(caps, "")+`}`))
	reqs, _ = r["inputRequests"].(map[string]any)
	if r["resultType"] != "input_required" || len(reqs) != 1 || reqs["sampling.createMessage-1"] == nil {
		t.Fatalf("round 2: %v", r)
	}
	state2, _ := r["requestState"].(string)
	r = result(t, c.call(3, "tools/call", `{"name":"greet","inputResponses":{"sampling.createMessage-1":{"role":"assistant","model":"m","content":{"type":"text","text":"Hello"}}},"requestState":`+quote(state2)+`,`+modernMeta(caps, "")+`}`))
	if r["resultType"] != "complete" || !strings.Contains(fmt.Sprint(r["content"]), "Hello, Ada") {
		t.Fatalf("round 3: %v", r)
	}
	if runs != 3 {
		t.Fatalf("the handler ran %d times, want once per round (3)", runs)
	}

	// A changed state, or one moved to another tool, is refused.
	bad := state2[:len(state2)-2] + "xx"
	if m := c.call(4, "tools/call", `{"name":"greet","requestState":`+quote(bad)+`,`+modernMeta(caps, "")+`}`); errCode(m) != CodeInvalidParams {
		t.Fatalf("tampered requestState: %v", m)
	}
	if m := c.call(5, "prompts/get", `{"name":"greet","requestState":`+quote(state2)+`,`+modernMeta(caps, "")+`}`); errCode(m) != CodeInvalidParams {
		t.Fatalf("requestState moved to another method: %v", m)
	}
	// Undeclared capability: -32021, not a question the client cannot answer.
	if m := c.call(6, "tools/call", `{"name":"greet",`+modernMeta(`{}`, "")+`}`); errCode(m) != CodeMissingRequiredCapability {
		t.Fatalf("no elicitation capability: %v", m)
	}
}

// TestAskWithModernClient: Nexus's own client and server, both modern,
// finish the legacy-style handler's rounds through the client's handlers.
func TestAskWithModernClient(t *testing.T) {
	runs := 0
	a, b := Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go askServer(&runs).Serve(ctx, b)
	c, err := Connect(ctx, a, ClientOptions{
		Info:         Implementation{Name: "c", Version: "1"},
		PreferModern: true,
		Elicitation: func(ctx context.Context, p *ElicitParams) (*ElicitResult, error) {
			return &ElicitResult{Action: "accept", Content: map[string]any{"name": "Grace"}}, nil
		},
		Sampling: func(ctx context.Context, p *CreateMessageParams) (*CreateMessageResult, error) {
			return &CreateMessageResult{Role: "assistant", Model: "m", Content: json.RawMessage(`{"type":"text","text":"Hi"}`)}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if !c.Modern() {
		t.Fatalf("the client spoke %s", c.ProtocolVersion())
	}
	res, err := c.CallTool(ctx, "greet", nil, nil)
	if err != nil || res.IsError || !strings.Contains(res.Content[0].Text, "Hi, Grace") {
		t.Fatalf("greet: %+v %v", res, err)
	}
}

func quote(s string) string { b, _ := json.Marshal(s); return string(b) }

// TestEraChoice: a dual-era server gets the handshake unless the client
// prefers the modern era; a modern-only server is spoken to statelessly
// and refuses initialize naming what it speaks.
func TestEraChoice(t *testing.T) {
	connect := func(srv ServerOptions, o ClientOptions) (*Client, error) {
		a, b := Pipe()
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		go NewServer(Implementation{Name: "s", Version: "1"}, srv).Serve(ctx, b)
		o.Info = Implementation{Name: "c", Version: "1"}
		c, err := Connect(ctx, a, o)
		if c != nil {
			t.Cleanup(func() { c.Close() })
		}
		return c, err
	}
	for _, tc := range []struct {
		name   string
		srv    ServerOptions
		cli    ClientOptions
		modern bool
		code   int
	}{
		{name: "dual-era, default", modern: false},
		{name: "dual-era, prefer modern", cli: ClientOptions{PreferModern: true}, modern: true},
		{name: "modern-only", srv: ServerOptions{ModernOnly: true}, modern: true},
		{name: "modern-only, handshake forced", srv: ServerOptions{ModernOnly: true}, cli: ClientOptions{ProtocolVersion: LatestVersion}, code: CodeUnsupportedProtocolVersion},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := connect(tc.srv, tc.cli)
			if tc.code != 0 {
				var re *RPCError
				if !errors.As(err, &re) || re.Code != tc.code || !strings.Contains(string(re.Data), Version20260728) {
					t.Fatalf("connect: %v, want code %d naming %s", err, tc.code, Version20260728)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Modern() != tc.modern {
				t.Fatalf("spoke %s (modern %v), want modern %v", c.ProtocolVersion(), c.Modern(), tc.modern)
			}
		})
	}
}
