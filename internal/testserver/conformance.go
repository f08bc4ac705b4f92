package testserver

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/nexus-mcp/nexus/host/mcp"
)

// The fixtures the official conformance suite's server scenarios call by
// name (@modelcontextprotocol/conformance, `conformance server --url`):
// tools test_*, resources test://..., prompts test_*. They are added with
// Options.Conformance (`nexus testserver --conformance`), so the default
// server keeps its own, smaller catalog.

const (
	uriStaticText   = "test://static-text"
	uriStaticBinary = "test://static-binary"
	uriWatched      = "test://watched-resource"
	templateData    = "test://template/{id}/data"
)

func noArgs(name, description string) mcp.Tool {
	return mcp.Tool{Name: name, Description: description, InputSchema: schemaNoArgs}
}

func fixed(content ...mcp.Content) mcp.ToolHandler {
	return func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: content}, nil
	}
}

func addConformance(s *mcp.Server, legacyOnly bool) {
	image := mcp.Content{Type: mcp.ContentImage, Data: logoPNGBase64, MimeType: "image/png"}
	s.AddTool(noArgs("test_simple_text", "Returns a simple text response."),
		fixed(mcp.TextContent("This is a simple text response for testing.")))
	s.AddTool(noArgs("test_image_content", "Returns an image (PNG)."), fixed(image))
	s.AddTool(noArgs("test_audio_content", "Returns audio (WAV)."),
		fixed(mcp.Content{Type: mcp.ContentAudio, Data: toneWAVBase64, MimeType: "audio/wav"}))
	s.AddTool(noArgs("test_embedded_resource", "Returns an embedded resource."),
		fixed(mcp.Content{Type: mcp.ContentResource, Resource: &mcp.ResourceContents{URI: "test://embedded-resource", MimeType: "text/plain", Text: "This is an embedded resource content."}}))
	s.AddTool(noArgs("test_multiple_content_types", "Returns text, an image and an embedded resource."),
		fixed(mcp.TextContent("Multiple content types test:"), image,
			mcp.Content{Type: mcp.ContentResource, Resource: &mcp.ResourceContents{URI: "test://mixed-content-resource", MimeType: "application/json", Text: `{"test":"data","value":123}`}}))
	s.AddTool(noArgs("test_tool_with_logging", "Sends three log messages while it runs."), func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		for i, msg := range []string{"Tool execution started", "Tool processing data", "Tool execution completed"} {
			if i > 0 && !sleep(ctx, 50*time.Millisecond) {
				return nil, ctx.Err()
			}
			req.Session.Log(ctx, "info", "test_tool_with_logging", msg)
		}
		return textResult("Tool with logging executed successfully"), nil
	})
	s.AddTool(noArgs("test_error_handling", "Always fails with a tool error."),
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return errorResult("This tool intentionally returns an error for testing"), nil
		})
	s.AddTool(noArgs("test_tool_with_progress", "Reports progress 0, 50 and 100 of 100."), func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		for i, p := range []float64{0, 50, 100} {
			if i > 0 && !sleep(ctx, 50*time.Millisecond) {
				return nil, ctx.Err()
			}
			if err := req.Progress(ctx, p, 100, ""); err != nil {
				return nil, err
			}
		}
		return textResult("Tool with progress executed successfully"), nil
	})
	s.AddTool(mcp.Tool{Name: "test_sampling", Description: "Asks the client's model to answer a prompt.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"prompt":{"type":"string","description":"The prompt to send to the LLM"}},"required":["prompt"]}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var a struct{ Prompt string }
			json.Unmarshal(req.Arguments, &a)
			content, _ := json.Marshal(map[string]string{"type": "text", "text": a.Prompt})
			res, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{Messages: []mcp.SamplingMessage{{Role: "user", Content: content}}, MaxTokens: 100})
			if err != nil {
				return nil, err
			}
			var c struct{ Text string }
			json.Unmarshal(res.Content, &c)
			return textResult("LLM response: " + c.Text), nil
		})
	elicit := func(message string, schema string) mcp.ToolHandler {
		return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			msg := message
			if msg == "" {
				var a struct{ Message string }
				json.Unmarshal(req.Arguments, &a)
				msg = a.Message
			}
			res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: msg, RequestedSchema: json.RawMessage(schema)})
			if err != nil {
				return nil, err
			}
			content, _ := json.Marshal(res.Content)
			if message == "" {
				return textResult(fmt.Sprintf("User response: action=%s, content=%s", res.Action, content)), nil
			}
			return textResult(fmt.Sprintf("Elicitation completed: action=%s, content=%s", res.Action, content)), nil
		}
	}
	s.AddTool(mcp.Tool{Name: "test_elicitation", Description: "Asks the client's user for a username and an email address.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"message":{"type":"string","description":"The message to show the user"}},"required":["message"]}`)},
		elicit("", `{"type":"object","properties":{"username":{"type":"string","description":"User's response"},"email":{"type":"string","description":"User's email address"}},"required":["username","email"]}`))
	s.AddTool(noArgs("test_elicitation_sep1034_defaults", "Asks the client's user for values that all have defaults (SEP-1034)."),
		elicit("Please review and update the form fields with defaults", `{"type":"object","properties":{`+
			`"name":{"type":"string","description":"User name","default":"John Doe"},`+
			`"age":{"type":"integer","description":"User age","default":30},`+
			`"score":{"type":"number","description":"User score","default":95.5},`+
			`"status":{"type":"string","description":"User status","enum":["active","inactive","pending"],"default":"active"},`+
			`"verified":{"type":"boolean","description":"Verification status","default":true}},`+
			`"required":[]}`))
	s.AddTool(noArgs("test_elicitation_sep1330_enums", "Asks the client's user to choose from every kind of enum (SEP-1330)."),
		elicit("Please select options from the enum fields", `{"type":"object","properties":{`+
			`"untitledSingle":{"type":"string","description":"Choose an option","enum":["option1","option2","option3"]},`+
			`"titledSingle":{"type":"string","description":"Choose a titled option","oneOf":[{"const":"value1","title":"First Option"},{"const":"value2","title":"Second Option"},{"const":"value3","title":"Third Option"}]},`+
			`"legacyEnum":{"type":"string","description":"Choose a legacy option","enum":["opt1","opt2","opt3"],"enumNames":["Option One","Option Two","Option Three"]},`+
			`"untitledMulti":{"type":"array","description":"Choose multiple options","items":{"type":"string","enum":["option1","option2","option3"]}},`+
			`"titledMulti":{"type":"array","description":"Choose multiple titled options","items":{"anyOf":[{"const":"value1","title":"First Choice"},{"const":"value2","title":"Second Choice"},{"const":"value3","title":"Third Choice"}]}}},`+
			`"required":[]}`))
	s.AddTool(mcp.Tool{Name: "json_schema_2020_12_tool", Description: "Tool with JSON Schema 2020-12 features",
		InputSchema: json.RawMessage(`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object",` +
			`"$defs":{"address":{"$anchor":"addressDef","type":"object","properties":{"street":{"type":"string"},"city":{"type":"string"}}}},` +
			`"properties":{"name":{"type":"string"},"address":{"$ref":"#/$defs/address"},"contactMethod":{"type":"string","enum":["phone","email"]},"phone":{"type":"string"},"email":{"type":"string"}},` +
			`"allOf":[{"anyOf":[{"required":["phone"]},{"required":["email"]}]}],` +
			`"if":{"properties":{"contactMethod":{"const":"phone"}},"required":["contactMethod"]},"then":{"required":["phone"]},"else":{"required":["email"]},` +
			`"additionalProperties":false}`)},
		fixed(mcp.TextContent("JSON Schema 2020-12 tool called")))

	s.AddResource(mcp.Resource{URI: uriStaticText, Name: "static-text", Description: "A static text resource", MimeType: "text/plain"},
		func(context.Context, *mcp.ServerSession, string) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []mcp.ResourceContents{{URI: uriStaticText, MimeType: "text/plain", Text: "This is the content of the static text resource."}}}, nil
		})
	s.AddResource(mcp.Resource{URI: uriStaticBinary, Name: "static-binary", Description: "A static binary resource (PNG)", MimeType: "image/png"},
		func(context.Context, *mcp.ServerSession, string) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []mcp.ResourceContents{{URI: uriStaticBinary, MimeType: "image/png", Blob: logoPNGBase64}}}, nil
		})
	s.AddResource(mcp.Resource{URI: uriWatched, Name: "watched-resource", Description: "A resource to subscribe to", MimeType: "text/plain"},
		func(context.Context, *mcp.ServerSession, string) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []mcp.ResourceContents{{URI: uriWatched, MimeType: "text/plain", Text: "Watched resource content."}}}, nil
		})
	s.AddResourceTemplate(mcp.ResourceTemplate{URITemplate: templateData, Name: "template-data", Description: "Data by id", MimeType: "application/json"},
		func(_ context.Context, _ *mcp.ServerSession, uri string) (*mcp.ReadResourceResult, error) {
			id := mcp.TemplateVars(templateData, uri)["id"]
			b, _ := json.Marshal(map[string]any{"id": id, "templateTest": true, "data": "Data for ID: " + id})
			return &mcp.ReadResourceResult{Contents: []mcp.ResourceContents{{URI: uri, MimeType: "application/json", Text: string(b)}}}, nil
		})

	user := func(c mcp.Content) mcp.PromptMessage { return mcp.PromptMessage{Role: "user", Content: c} }
	s.AddPrompt(mcp.Prompt{Name: "test_simple_prompt", Description: "A simple prompt without arguments"},
		func(context.Context, *mcp.ServerSession, map[string]string) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []mcp.PromptMessage{user(mcp.TextContent("This is a simple prompt for testing."))}}, nil
		})
	s.AddPrompt(mcp.Prompt{Name: "test_prompt_with_arguments", Description: "A prompt with two required arguments",
		Arguments: []mcp.PromptArgument{{Name: "arg1", Description: "First test argument", Required: true}, {Name: "arg2", Description: "Second test argument", Required: true}}},
		func(_ context.Context, _ *mcp.ServerSession, args map[string]string) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []mcp.PromptMessage{user(mcp.TextContent(fmt.Sprintf("Prompt with arguments: arg1='%s', arg2='%s'", args["arg1"], args["arg2"])))}}, nil
		})
	s.AddPrompt(mcp.Prompt{Name: "test_prompt_with_embedded_resource", Description: "A prompt that embeds a resource",
		Arguments: []mcp.PromptArgument{{Name: "resourceUri", Description: "URI of the resource to embed", Required: true}}},
		func(_ context.Context, _ *mcp.ServerSession, args map[string]string) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []mcp.PromptMessage{
				user(mcp.Content{Type: mcp.ContentResource, Resource: &mcp.ResourceContents{URI: args["resourceUri"], MimeType: "text/plain", Text: "Embedded resource content for testing."}}),
				user(mcp.TextContent("Please process the embedded resource above.")),
			}}, nil
		})
	s.AddPrompt(mcp.Prompt{Name: "test_prompt_with_image", Description: "A prompt with an image"},
		func(context.Context, *mcp.ServerSession, map[string]string) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []mcp.PromptMessage{user(image), user(mcp.TextContent("Please analyze the image above."))}}, nil
		})
	addModernConformance(s, legacyOnly)
	addTasksConformance(s)
}

// conformanceCompletions are test_prompt_with_arguments' completions.
var conformanceCompletions = []string{"paris", "park", "party", "hello", "world"}

// sleep waits d or until ctx ends; it reports whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
