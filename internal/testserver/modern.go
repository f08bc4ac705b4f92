package testserver

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nexus-mcp/nexus/host/mcp"
)

// The conformance suite's fixtures for the stateless revision
// (2026-07-28, `conformance server --requirements 2026-07-28`): the
// input-required-result-* tools and prompt (MRTR: each round answers with
// an InputRequiredResult until the client's inputResponses carry what it
// asked), and the diagnostic tools of server-stateless. Their
// requestState is sealed (sealer) and bound to the request it was handed
// out for, so a tampered or transplanted one is refused.

// stateTTL bounds how long a handed-out requestState stays good.
const stateTTL = 10 * time.Minute

// sealer seals requestState with an HMAC key made when the server starts:
// the client holds the state, so the server must know it made it.
type sealer struct{ key [32]byte }

func newSealer() *sealer {
	s := &sealer{}
	if _, err := rand.Read(s.key[:]); err != nil {
		panic("testserver: no randomness for the requestState key: " + err.Error())
	}
	return s
}

// sealedState is what a requestState says: the request it belongs to
// (method, name, a hash of its arguments), the round, the data the
// server keeps in it, and when it expires.
type sealedState struct {
	Method string `json:"m"`
	Name   string `json:"n"`
	Args   string `json:"a"`
	Round  int    `json:"r"`
	Data   string `json:"d,omitempty"`
	Exp    int64  `json:"e"`
}

func argsHash(args any) string {
	b, _ := json.Marshal(args)
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:8])
}

func (s *sealer) mac(payload string) string {
	m := hmac.New(sha256.New, s.key[:])
	m.Write([]byte(payload))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

func (s *sealer) seal(st sealedState) string {
	st.Exp = time.Now().Add(stateTTL).Unix()
	b, _ := json.Marshal(st)
	p := base64.RawURLEncoding.EncodeToString(b)
	return p + "." + s.mac(p)
}

// open checks a requestState and that it belongs to this request; the
// error is the -32602 the client gets.
func (s *sealer) open(state, method, name, args string) (*sealedState, error) {
	bad := func(why string) error {
		return mcp.InvalidParams("requestState %s; send back the requestState of this request's last input_required result unchanged", why)
	}
	p, mac, ok := strings.Cut(state, ".")
	if !ok || !hmac.Equal([]byte(mac), []byte(s.mac(p))) {
		return nil, bad("failed its integrity check (it was changed, or is not this server's)")
	}
	b, err := base64.RawURLEncoding.DecodeString(p)
	var st sealedState
	if err != nil || json.Unmarshal(b, &st) != nil {
		return nil, bad("is malformed")
	}
	if st.Method != method || st.Name != name || st.Args != args {
		return nil, bad(fmt.Sprintf("was issued for another request (%s %q)", st.Method, st.Name))
	}
	if time.Now().Unix() > st.Exp {
		return nil, bad("has expired")
	}
	return &st, nil
}

// asks builds an InputRequiredError.
func asks(state string, reqs mcp.InputRequests) error {
	return &mcp.InputRequiredError{Result: &mcp.InputRequiredResult{InputRequests: reqs, RequestState: state}}
}

func elicitReq(message, prop, typ string) mcp.InputRequest {
	p, _ := json.Marshal(map[string]any{"message": message, "requestedSchema": map[string]any{
		"type": "object", "properties": map[string]any{prop: map[string]string{"type": typ}}, "required": []string{prop}}})
	return mcp.InputRequest{Method: mcp.MethodElicitationCreate, Params: p}
}

func samplingReq(text string, maxTokens int) mcp.InputRequest {
	p, _ := json.Marshal(map[string]any{"messages": []any{map[string]any{"role": "user", "content": map[string]string{"type": "text", "text": text}}}, "maxTokens": maxTokens})
	return mcp.InputRequest{Method: mcp.MethodSamplingCreateMessage, Params: p}
}

var rootsReq = mcp.InputRequest{Method: mcp.MethodRootsList, Params: json.RawMessage(`{}`)}

// response is the client's answer to input request key, nil if none.
func response(in *mcp.InputParams, key string) json.RawMessage {
	if in == nil {
		return nil
	}
	return in.InputResponses[key]
}

// elicited is an accepted elicitation's content field, "" otherwise.
func elicited(raw json.RawMessage, field string) (string, bool) {
	var r struct {
		Action  string
		Content map[string]any
	}
	if json.Unmarshal(raw, &r) != nil || r.Action != "accept" {
		return "", false
	}
	v, ok := r.Content[field]
	if !ok {
		return "", false
	}
	return fmt.Sprint(v), true
}

func sampledText(raw json.RawMessage) string {
	var r struct{ Content struct{ Text string } }
	json.Unmarshal(raw, &r)
	return r.Content.Text
}

// stateOf opens a retry's requestState for a tool call ("" and nil: none sent).
func (s *sealer) stateOf(req *mcp.CallToolRequest) (*sealedState, error) {
	if req.Input == nil || req.Input.RequestState == "" {
		return nil, nil
	}
	return s.open(req.Input.RequestState, mcp.MethodToolsCall, req.Name, argsHash(req.Arguments))
}

func (s *sealer) stateFor(req *mcp.CallToolRequest, round int, data string) string {
	return s.seal(sealedState{Method: mcp.MethodToolsCall, Name: req.Name, Args: argsHash(req.Arguments), Round: round, Data: data})
}

func addModernConformance(srv *mcp.Server, legacyOnly bool) {
	if legacyOnly {
		addLegacyAsks(srv)
	} else {
		addAsks(srv)
	}
	addStateless(srv)
}

// addAsks adds the input-required-result-* fixtures as a modern server
// serves them: each round answers with an InputRequiredResult.
func addAsks(srv *mcp.Server) {
	sl := newSealer()
	tool := func(name, desc string, h mcp.ToolHandler) { srv.AddTool(noArgs(name, desc), h) }

	tool("test_input_required_result_elicitation", "Asks the client's user for a name (input_required), then greets them.",
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if name, ok := elicited(response(req.Input, "user_name"), "name"); ok {
				return textResult("Hello, " + name + "!"), nil
			}
			return nil, asks("", mcp.InputRequests{"user_name": elicitReq("What is your name?", "name", "string")})
		})
	tool("test_input_required_result_sampling", "Asks the client's model a question (input_required), then returns its answer.",
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if r := response(req.Input, "capital_question"); r != nil {
				return textResult("The model said: " + sampledText(r)), nil
			}
			return nil, asks("", mcp.InputRequests{"capital_question": samplingReq("What is the capital of France?", 100)})
		})
	tool("test_input_required_result_list_roots", "Asks the client for its roots (input_required), then lists them.",
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if r := response(req.Input, "client_roots"); r != nil {
				var roots mcp.ListRootsResult
				json.Unmarshal(r, &roots)
				uris := make([]string, len(roots.Roots))
				for i, x := range roots.Roots {
					uris[i] = x.URI
				}
				return textResult("Client roots: " + strings.Join(uris, ", ")), nil
			}
			return nil, asks("", mcp.InputRequests{"client_roots": rootsReq})
		})
	sealedConfirm := func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		st, err := sl.stateOf(req)
		if err != nil {
			return nil, err
		}
		if st != nil && response(req.Input, "confirm") != nil {
			return textResult("state-ok: the requestState came back intact"), nil
		}
		return nil, asks(sl.stateFor(req, 1, ""), mcp.InputRequests{"confirm": elicitReq("Please confirm", "ok", "boolean")})
	}
	tool("test_input_required_result_request_state", "Asks for a confirmation with a sealed requestState, which must come back intact.", sealedConfirm)
	tool("test_input_required_result_tampered_state", "As test_input_required_result_request_state; a changed requestState is refused.", sealedConfirm)
	tool("test_input_required_result_multiple_inputs", "Asks for an elicitation, a sampling and the roots at once.",
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			st, err := sl.stateOf(req)
			if err != nil {
				return nil, err
			}
			all := mcp.InputRequests{
				"user_name":    elicitReq("What is your name?", "name", "string"),
				"greeting":     samplingReq("Generate a greeting", 50),
				"client_roots": rootsReq,
			}
			missing := mcp.InputRequests{}
			for k, q := range all {
				if response(req.Input, k) == nil {
					missing[k] = q
				}
			}
			if st != nil && len(missing) == 0 {
				name, _ := elicited(response(req.Input, "user_name"), "name")
				return textResult(fmt.Sprintf("All inputs received: name=%s, greeting=%s", name, sampledText(response(req.Input, "greeting")))), nil
			}
			if st == nil {
				missing = all
			}
			return nil, asks(sl.stateFor(req, 1, ""), missing)
		})
	tool("test_input_required_result_multi_round", "Asks for a name, then a colour (two rounds, the state evolving), then answers.",
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			st, err := sl.stateOf(req)
			if err != nil {
				return nil, err
			}
			step1 := elicitReq("Step 1: What is your name?", "name", "string")
			if st == nil {
				return nil, asks(sl.stateFor(req, 1, ""), mcp.InputRequests{"step1": step1})
			}
			switch st.Round {
			case 1:
				name, ok := elicited(response(req.Input, "step1"), "name")
				if !ok {
					return nil, asks(sl.stateFor(req, 1, ""), mcp.InputRequests{"step1": step1})
				}
				return nil, asks(sl.stateFor(req, 2, name), mcp.InputRequests{"step2": elicitReq("Step 2: What is your favorite color?", "color", "string")})
			default:
				color, ok := elicited(response(req.Input, "step2"), "color")
				if !ok {
					return nil, asks(sl.stateFor(req, 2, st.Data), mcp.InputRequests{"step2": elicitReq("Step 2: What is your favorite color?", "color", "string")})
				}
				return textResult(fmt.Sprintf("%s likes %s", st.Data, color)), nil
			}
		})
	tool("test_input_required_result_capabilities", "Asks only for the inputs the request's client capabilities allow.",
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if req.Input != nil && len(req.Input.InputResponses) > 0 {
				return textResult("Inputs received"), nil
			}
			m, _ := mcp.RequestMetaOf(ctx)
			reqs := mcp.InputRequests{}
			if m != nil && m.Capabilities.Sampling != nil {
				reqs["sample"] = samplingReq("Say hello", 20)
			}
			if m != nil && m.Capabilities.Elicitation != nil {
				reqs["ask"] = elicitReq("What is your name?", "name", "string")
			}
			if m != nil && m.Capabilities.Roots != nil {
				reqs["roots"] = rootsReq
			}
			if len(reqs) == 0 {
				return textResult("The client declared no capability to ask anything of"), nil
			}
			return nil, asks("", reqs)
		})
	srv.AddPrompt(mcp.Prompt{Name: "test_input_required_result_prompt", Description: "A prompt that asks the client's user for context first (input_required)."},
		func(ctx context.Context, _ *mcp.ServerSession, _ map[string]string) (*mcp.GetPromptResult, error) {
			if c, ok := elicited(response(mcp.InputOf(ctx), "user_context"), "context"); ok {
				return &mcp.GetPromptResult{Messages: []mcp.PromptMessage{{Role: "user", Content: mcp.TextContent("Use this context: " + c)}}}, nil
			}
			return nil, asks("", mcp.InputRequests{"user_context": elicitReq("What context should the prompt use?", "context", "string")})
		})

	tool("test_missing_capability", "Needs the client's sampling capability: refused with -32021 when the request did not declare it.",
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if r := response(req.Input, "sample"); r != nil {
				return textResult("Sampled: " + sampledText(r)), nil
			}
			return nil, asks("", mcp.InputRequests{"sample": samplingReq("Say hello", 20)})
		})
	tool("test_streaming_elicitation", "Asks the client's user for a name through input_required, never a request on the stream.",
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if name, ok := elicited(response(req.Input, "name"), "name"); ok {
				return textResult("Hello, " + name), nil
			}
			return nil, asks("", mcp.InputRequests{"name": elicitReq("What is your name?", "name", "string")})
		})
}

// addStateless adds server-stateless's diagnostic tools (those that ask
// nothing of the client: addAsks and addLegacyAsks have the others).
func addStateless(srv *mcp.Server) {
	tool := func(name, desc string, h mcp.ToolHandler) { srv.AddTool(noArgs(name, desc), h) }
	tool("test_logging_tool", "Logs three messages: they reach a request only if its _meta asked for a log level.",
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			for _, msg := range []string{"Tool execution started", "Tool processing data", "Tool execution completed"} {
				req.Session.Log(ctx, "info", "test_logging_tool", msg)
			}
			return textResult("Logging tool executed"), nil
		})
	var changes atomic.Int64
	tool("test_trigger_tool_change", "Changes the tool list (subscriptions/listen streams that asked are told).",
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			n := changes.Add(1)
			srv.AddTool(noArgs("test_changed_tool", fmt.Sprintf("Added by test_trigger_tool_change (change %d).", n)), fixed(mcp.TextContent("changed")))
			return textResult("The tool list changed"), nil
		})
	tool("test_trigger_prompt_change", "Changes the prompt list (subscriptions/listen streams that asked are told).",
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			n := changes.Add(1)
			srv.AddPrompt(mcp.Prompt{Name: "test_changed_prompt", Description: fmt.Sprintf("Added by test_trigger_prompt_change (change %d).", n)},
				func(context.Context, *mcp.ServerSession, map[string]string) (*mcp.GetPromptResult, error) {
					return &mcp.GetPromptResult{Messages: []mcp.PromptMessage{{Role: "user", Content: mcp.TextContent("changed")}}}, nil
				})
			return textResult("The prompt list changed"), nil
		})
	// A tool whose argument is mirrored into a header (x-mcp-header),
	// for the suite's Mcp-Param-* checks.
	srv.AddTool(mcp.Tool{Name: "test_header_param", Description: "Echoes its region, which clients mirror into Mcp-Param-Region.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}},"required":["region"]}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var a struct{ Region string }
			json.Unmarshal(req.Arguments, &a)
			return textResult("Region: " + a.Region), nil
		})
}
