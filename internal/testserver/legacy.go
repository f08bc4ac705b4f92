package testserver

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/nexus-mcp/nexus/host/mcp"
)

// The input-required-result-* fixtures as a server built before the
// stateless revision serves them (Options.LegacyOnly): the tool asks
// the client mid-call with server-initiated requests (elicitation/create,
// sampling/createMessage, roots/list) and waits for the answers. A
// gateway in front of it bridges them to a modern client's rounds of
// input_required; each request names the inputRequests key it wants
// in _meta[mcp.MetaInputKey], which the gateway honours (a legacy
// request has no key of its own).

func keyed(key string) mcp.Meta {
	raw, _ := json.Marshal(key)
	return mcp.Meta{mcp.MetaInputKey: raw}
}

func elicitAsk(ctx context.Context, ss *mcp.ServerSession, key, message, prop, typ string) (string, error) {
	schema, _ := json.Marshal(map[string]any{"type": "object", "properties": map[string]any{prop: map[string]string{"type": typ}}, "required": []string{prop}})
	r, err := ss.Elicit(ctx, &mcp.ElicitParams{Message: message, RequestedSchema: schema, Meta: keyed(key)})
	if err != nil {
		return "", err
	}
	if r.Action != "accept" {
		return "", fmt.Errorf("the user chose %q", r.Action)
	}
	return fmt.Sprint(r.Content[prop]), nil
}

func sampleAsk(ctx context.Context, ss *mcp.ServerSession, key, text string, maxTokens int) (string, error) {
	content, _ := json.Marshal(map[string]string{"type": "text", "text": text})
	r, err := ss.CreateMessage(ctx, &mcp.CreateMessageParams{Messages: []mcp.SamplingMessage{{Role: "user", Content: content}}, MaxTokens: maxTokens, Meta: keyed(key)})
	if err != nil {
		return "", err
	}
	var c struct{ Text string }
	json.Unmarshal(r.Content, &c)
	return c.Text, nil
}

func rootURIs(roots []mcp.Root) string {
	uris := make([]string, len(roots))
	for i, x := range roots {
		uris[i] = x.URI
	}
	return strings.Join(uris, ", ")
}

// failed is a tool's error result: the call ran, the client's answer
// did not come.
func failed(err error) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent("the client did not answer: " + err.Error())}, IsError: true}
}

func addLegacyAsks(srv *mcp.Server) {
	tool := func(name, desc string, h mcp.ToolHandler) { srv.AddTool(noArgs(name, desc), h) }
	tool("test_input_required_result_elicitation", "Asks the client's user for a name (elicitation/create), then greets them.",
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			name, err := elicitAsk(ctx, req.Session, "user_name", "What is your name?", "name", "string")
			if err != nil {
				return failed(err), nil
			}
			return textResult("Hello, " + name + "!"), nil
		})
	tool("test_input_required_result_sampling", "Asks the client's model a question (sampling/createMessage), then returns its answer.",
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			text, err := sampleAsk(ctx, req.Session, "capital_question", "What is the capital of France?", 100)
			if err != nil {
				return failed(err), nil
			}
			return textResult("The model said: " + text), nil
		})
	tool("test_input_required_result_list_roots", "Asks the client for its roots (roots/list), then lists them.",
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			roots, err := req.Session.ListRoots(ctx)
			if err != nil {
				return failed(err), nil
			}
			return textResult("Client roots: " + rootURIs(roots)), nil
		})
	confirm := func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if _, err := elicitAsk(ctx, req.Session, "confirm", "Please confirm", "ok", "boolean"); err != nil {
			return failed(err), nil
		}
		return textResult("state-ok: the confirmation came back"), nil
	}
	tool("test_input_required_result_request_state", "Asks for a confirmation.", confirm)
	tool("test_input_required_result_tampered_state", "Asks for a confirmation.", confirm)
	tool("test_input_required_result_multiple_inputs", "Asks for an elicitation, a sampling and the roots at once.",
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var (
				wg                   sync.WaitGroup
				name, greeting       string
				errName, errGreeting error
				errRoots             error
			)
			wg.Add(3)
			go func() {
				defer wg.Done()
				name, errName = elicitAsk(ctx, req.Session, "user_name", "What is your name?", "name", "string")
			}()
			go func() {
				defer wg.Done()
				greeting, errGreeting = sampleAsk(ctx, req.Session, "greeting", "Generate a greeting", 50)
			}()
			go func() {
				defer wg.Done()
				_, errRoots = req.Session.ListRoots(ctx)
			}()
			wg.Wait()
			for _, err := range []error{errName, errGreeting, errRoots} {
				if err != nil {
					return failed(err), nil
				}
			}
			return textResult(fmt.Sprintf("All inputs received: name=%s, greeting=%s", name, greeting)), nil
		})
	tool("test_input_required_result_multi_round", "Asks for a name, then a colour, then answers.",
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			name, err := elicitAsk(ctx, req.Session, "step1", "Step 1: What is your name?", "name", "string")
			if err != nil {
				return failed(err), nil
			}
			color, err := elicitAsk(ctx, req.Session, "step2", "Step 2: What is your favorite color?", "color", "string")
			if err != nil {
				return failed(err), nil
			}
			return textResult(fmt.Sprintf("%s likes %s", name, color)), nil
		})
	// A legacy server cannot see what a request declared (only what the
	// session's client did at initialize): it asks for sampling alone.
	tool("test_input_required_result_capabilities", "Asks the client's model to say hello.",
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if _, err := sampleAsk(ctx, req.Session, "sample", "Say hello", 20); err != nil {
				return failed(err), nil
			}
			return textResult("Inputs received"), nil
		})
	srv.AddPrompt(mcp.Prompt{Name: "test_input_required_result_prompt", Description: "A prompt that asks the client's user for context first."},
		func(ctx context.Context, ss *mcp.ServerSession, _ map[string]string) (*mcp.GetPromptResult, error) {
			c, err := elicitAsk(ctx, ss, "user_context", "What context should the prompt use?", "context", "string")
			if err != nil {
				return nil, err
			}
			return &mcp.GetPromptResult{Messages: []mcp.PromptMessage{{Role: "user", Content: mcp.TextContent("Use this context: " + c)}}}, nil
		})
	tool("test_missing_capability", "Needs the client's sampling capability.",
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			text, err := sampleAsk(ctx, req.Session, "sample", "Say hello", 20)
			if err != nil {
				return failed(err), nil
			}
			return textResult("Sampled: " + text), nil
		})
	tool("test_streaming_elicitation", "Asks the client's user for a name.",
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			name, err := elicitAsk(ctx, req.Session, "name", "What is your name?", "name", "string")
			if err != nil {
				return failed(err), nil
			}
			return textResult("Hello, " + name), nil
		})
}
