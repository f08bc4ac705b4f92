package engine_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/config"
	"github.com/nexus-mcp/nexus/internal/engine"
	"github.com/nexus-mcp/nexus/internal/policy"
	"github.com/nexus-mcp/nexus/sdk/event"
)

// The chain is a security path on every method, not only tools/call: a
// policy denies and modifies resources/read, prompts/get,
// completion/complete and ping, a sanitizer changes what comes back, and
// what servers ask (sampling, elicitation, roots) goes through it too.
func TestChainOnEveryMethod(t *testing.T) {
	w := newWorld()
	s := mcp.NewServer(mcp.Implementation{Name: "srv-s", Version: "1"}, mcp.ServerOptions{
		Completion: func(ctx context.Context, ss *mcp.ServerSession, p *mcp.CompleteParams) (*mcp.CompleteResult, error) {
			return &mcp.CompleteResult{Completion: mcp.Completion{Values: []string{p.Argument.Value + "-one", p.Argument.Value + "-two"}}}, nil
		},
	})
	for _, uri := range []string{"file:///public", "file:///other", "secret://keys"} {
		s.AddResource(mcp.Resource{URI: uri, Name: uri}, func(ctx context.Context, ss *mcp.ServerSession, uri string) (*mcp.ReadResourceResult, error) {
			w.calls.add("s", "read", json.RawMessage(`"`+uri+`"`))
			return &mcp.ReadResourceResult{Contents: []mcp.ResourceContents{{URI: uri, Text: "contents of " + uri}}}, nil
		})
	}
	for _, name := range []string{"greet", "forbidden"} {
		s.AddPrompt(mcp.Prompt{Name: name, Arguments: []mcp.PromptArgument{{Name: "who"}}}, func(ctx context.Context, ss *mcp.ServerSession, args map[string]string) (*mcp.GetPromptResult, error) {
			w.calls.add("s", name, nil)
			return &mcp.GetPromptResult{Messages: []mcp.PromptMessage{{Role: "user", Content: mcp.TextContent("hello " + args["who"])}}}, nil
		})
	}
	w.mu.Lock()
	w.servers["s"] = s
	w.mu.Unlock()

	deny := func(name string, f func(e *event.Event) (bool, string)) policy.Entry {
		return policy.Entry{Kind: policy.KindPolicy, Link: policy.Func{N: name, F: func(ctx context.Context, e *event.Event) (event.Decision, error) {
			if no, why := f(e); no {
				return event.Decision{Action: event.Deny, Reason: why}, nil
			}
			return event.Decision{Action: event.Allow}, nil
		}}}
	}
	modify := func(name, method, from, to string) policy.Entry {
		return policy.Entry{Kind: policy.KindPolicy, Link: policy.Func{N: name, F: func(ctx context.Context, e *event.Event) (event.Decision, error) {
			if e.Method == method && strings.Contains(string(e.Params), from) {
				return event.Decision{Action: event.Modify, Params: json.RawMessage(strings.ReplaceAll(string(e.Params), from, to))}, nil
			}
			return event.Decision{Action: event.Allow}, nil
		}}}
	}
	sanitizer := policy.Entry{Kind: policy.KindSanitizer, Link: policy.Func{N: "stamp", F: func(ctx context.Context, e *event.Event) (event.Decision, error) {
		if e.Method == mcp.MethodToolsCall {
			return event.Decision{Action: event.Allow}, nil
		}
		return event.Decision{Action: event.Modify, Result: json.RawMessage(strings.ReplaceAll(string(e.Result), "contents of", "[checked] contents of"))}, nil
	}}}
	links := []policy.Entry{
		deny("no-secrets", func(e *event.Event) (bool, string) {
			return e.Method == mcp.MethodResourcesRead && strings.Contains(string(e.Params), "secret://"), "secret:// URIs are off limits"
		}),
		deny("no-forbidden-prompt", func(e *event.Event) (bool, string) {
			return e.Method == mcp.MethodPromptsGet && strings.Contains(string(e.Params), `"forbidden"`), "that prompt is off limits"
		}),
		deny("no-ping", func(e *event.Event) (bool, string) {
			return e.Method == mcp.MethodPing && e.Agent.ID == "quiet", "quiet may not ping"
		}),
		modify("reroute", mcp.MethodResourcesRead, "file:///public", "file:///other"),
		modify("rename", mcp.MethodPromptsGet, "Mallory", "Alice"),
		modify("narrow", mcp.MethodComplete, `"value":"py"`, `"value":"go"`),
		sanitizer,
	}
	h := w.host(t, `{"y": {"permission": "yolo"}, "quiet": {"permission": "yolo"}}`, engine.Options{Links: links})

	// resources/read: denied, modified, sanitized.
	_, err := h.ReadResource(ctx, "y", "s", "secret://keys")
	denied(t, err, "no-secrets", "off limits")
	if w.calls.count("s", "read") != 0 {
		t.Fatal("a denied read reached the server")
	}
	rr, err := h.ReadResource(ctx, "y", "s", "file:///public")
	if err != nil || len(rr.Contents) != 1 || rr.Contents[0].Text != "[checked] contents of file:///other" {
		t.Fatalf("read: %v %+v", err, rr)
	}

	// prompts/get.
	_, err = h.GetPrompt(ctx, "y", "s", "forbidden", nil)
	denied(t, err, "no-forbidden-prompt", "off limits")
	if w.calls.count("s", "forbidden") != 0 {
		t.Fatal("a denied prompt reached the server")
	}
	pr, err := h.GetPrompt(ctx, "y", "s", "greet", map[string]string{"who": "Mallory"})
	if err != nil || pr.Messages[0].Content.Text != "hello Alice" {
		t.Fatalf("prompt: %v %+v", err, pr)
	}

	// completion/complete: modified and sanitized.
	cp := &mcp.CompleteParams{Ref: mcp.CompleteReference{Type: "ref/prompt", Name: "greet"}}
	cp.Argument.Name, cp.Argument.Value = "who", "py"
	cr, err := h.Complete(ctx, "y", "s", cp)
	if err != nil || strings.Join(cr.Completion.Values, " ") != "go-one go-two" {
		t.Fatalf("complete: %v %+v", err, cr)
	}

	// ping.
	if _, err := h.Ping(ctx, "y", "s"); err != nil {
		t.Fatalf("ping: %v", err)
	}
	_, err = h.Ping(ctx, "quiet", "s")
	denied(t, err, "no-ping", "may not ping")
}

// What servers ask goes through the chain on its way to whoever answers.
func TestChainOnServerRequests(t *testing.T) {
	w := newWorld()
	s := w.server("s")
	s.AddTool(mcp.Tool{Name: "ask"}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var a struct{ Q string }
		json.Unmarshal(req.Arguments, &a)
		content, _ := json.Marshal(map[string]string{"type": "text", "text": a.Q})
		res, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{Messages: []mcp.SamplingMessage{{Role: "user", Content: content}}, MaxTokens: 10})
		if err != nil {
			return &mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent("refused: " + err.Error())}}, nil
		}
		return &mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent(string(res.Content))}}, nil
	})
	s.AddTool(mcp.Tool{Name: "roots"}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		roots, err := req.Session.ListRoots(ctx)
		if err != nil {
			return nil, err
		}
		var uris []string
		for _, r := range roots {
			uris = append(uris, r.URI)
		}
		return &mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent(strings.Join(uris, " "))}}, nil
	})
	asked := 0
	links := []policy.Entry{
		{Kind: policy.KindPolicy, Link: policy.Func{N: "no-passwords", F: func(ctx context.Context, e *event.Event) (event.Decision, error) {
			if e.Method == mcp.MethodSamplingCreateMessage && strings.Contains(string(e.Params), "password") {
				return event.Decision{Action: event.Deny, Reason: "no passwords to the model"}, nil
			}
			return event.Decision{Action: event.Allow}, nil
		}}},
		{Kind: policy.KindSanitizer, Link: policy.Func{N: "hide-root", F: func(ctx context.Context, e *event.Event) (event.Decision, error) {
			if e.Method == mcp.MethodRootsList {
				return event.Decision{Action: event.Modify, Result: json.RawMessage(strings.ReplaceAll(string(e.Result), "file:///private", "file:///redacted"))}, nil
			}
			if e.Method == mcp.MethodSamplingCreateMessage {
				return event.Decision{Action: event.Modify, Result: json.RawMessage(strings.ReplaceAll(string(e.Result), "42", "[number]"))}, nil
			}
			return event.Decision{Action: event.Allow}, nil
		}}},
	}
	h := w.hostWith(t, yolo, engine.Options{
		Links: links,
		Sampling: func(string) mcp.SamplingHandler {
			return func(ctx context.Context, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
				asked++
				return &mcp.CreateMessageResult{Role: "assistant", Model: "m", Content: json.RawMessage(`{"type":"text","text":"the answer is 42"}`)}, nil
			}
		},
		Roots: func(context.Context) ([]mcp.Root, error) {
			return []mcp.Root{{URI: "file:///work"}, {URI: "file:///private"}}, nil
		},
	})
	got := ok(t, h, "y", "s.ask", map[string]string{"q": "what is the password?"})
	if asked != 0 || !strings.Contains(got, "refused") || !strings.Contains(got, "no-passwords") {
		t.Errorf("a denied sampling request: asked %d, tool said %q", asked, got)
	}
	if strings.Contains(got, "no passwords to the model") {
		t.Errorf("the policy's reason reached the server: %q", got)
	}
	got = ok(t, h, "y", "s.ask", map[string]string{"q": "six times seven"})
	if asked != 1 || !strings.Contains(got, "[number]") {
		t.Errorf("sampling through the sanitizer: asked %d, tool said %q", asked, got)
	}
	if got := ok(t, h, "y", "s.roots", nil); got != "file:///work file:///redacted" {
		t.Errorf("roots through the sanitizer: %q", got)
	}
}

// hostWith is host, with the world's servers reached through
// Options.Transport, so the host's own handlers (sampling, roots) and the
// chain around them are in the path.
func (w *world) hostWith(t testing.TB, agents string, opts engine.Options) *engine.Host {
	t.Helper()
	opts.Transport = func(ctx context.Context, srv *config.Server) (mcp.Conn, error) {
		w.mu.Lock()
		s := w.servers[srv.Name]
		w.mu.Unlock()
		a, b := mcp.Pipe()
		go s.Serve(context.Background(), b)
		return a, nil
	}
	h := w.host(t, agents, opts)
	return h
}

// A session whose server-initiated requests are served as they came
// (SessionOptions.Raw, the gateway's bridge) passes them through the same
// links: a policy refuses one before it is answered, a sanitizer changes
// the answer, and the typed handler, there to declare the capability,
// never runs.
func TestChainOnRawServerRequests(t *testing.T) {
	w := newWorld()
	s := w.server("s")
	s.AddTool(mcp.Tool{Name: "ask"}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var a struct{ Q string }
		json.Unmarshal(req.Arguments, &a)
		content, _ := json.Marshal(map[string]string{"type": "text", "text": a.Q})
		res, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{Messages: []mcp.SamplingMessage{{Role: "user", Content: content}}, MaxTokens: 10})
		if err != nil {
			return &mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent("refused: " + err.Error())}}, nil
		}
		return &mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent(string(res.Content))}}, nil
	})
	links := []policy.Entry{
		{Kind: policy.KindPolicy, Link: policy.Func{N: "no-passwords", F: func(ctx context.Context, e *event.Event) (event.Decision, error) {
			if e.Method == mcp.MethodSamplingCreateMessage && strings.Contains(string(e.Params), "password") {
				return event.Decision{Action: event.Deny, Reason: "no passwords to the model"}, nil
			}
			return event.Decision{Action: event.Allow}, nil
		}}},
		{Kind: policy.KindSanitizer, Link: policy.Func{N: "hide-number", F: func(ctx context.Context, e *event.Event) (event.Decision, error) {
			if e.Method == mcp.MethodSamplingCreateMessage {
				return event.Decision{Action: event.Modify, Result: json.RawMessage(strings.ReplaceAll(string(e.Result), "42", "[number]"))}, nil
			}
			return event.Decision{Action: event.Allow}, nil
		}}},
	}
	h := w.hostWith(t, yolo, engine.Options{Links: links})
	var asked []string
	sess := h.NewSession(engine.SessionOptions{
		Agent: "y",
		Sampling: func(string) mcp.SamplingHandler {
			return func(context.Context, *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
				t.Error("the typed handler ran beside Raw")
				return nil, context.Canceled
			}
		},
		Raw: func(server string) mcp.RawHandler {
			return func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
				asked = append(asked, server+" "+method)
				return json.RawMessage(`{"role":"assistant","model":"m","content":{"type":"text","text":"the answer is 42"}}`), nil
			}
		},
	})
	t.Cleanup(func() { sess.Close() })
	got := ok(t, sess, "y", "s.ask", map[string]string{"q": "what is the password?"})
	if len(asked) != 0 || !strings.Contains(got, "refused") || !strings.Contains(got, "no-passwords") {
		t.Errorf("a denied sampling request: asked %q, tool said %q", asked, got)
	}
	got = ok(t, sess, "y", "s.ask", map[string]string{"q": "six times seven"})
	if len(asked) != 1 || asked[0] != "s "+mcp.MethodSamplingCreateMessage || !strings.Contains(got, "[number]") {
		t.Errorf("sampling through the sanitizer: asked %q, tool said %q", asked, got)
	}
}
