package testserver

import (
	"context"
	"strconv"
	"strings"

	"github.com/nexus-mcp/nexus/host/mcp"
)

func addPrompts(s *mcp.Server) {
	s.AddPrompt(mcp.Prompt{
		Name:        "greeting",
		Title:       "Greeting",
		Description: "Generate a greeting for someone, formal or friendly.",
		Arguments: []mcp.PromptArgument{
			{Name: "name", Title: "Name", Description: "Who to greet.", Required: true},
			{Name: "formal", Title: "Formal", Description: `"true" for a formal greeting, "false" (default) for a friendly one.`},
		},
	}, greeting)
	s.AddPrompt(mcp.Prompt{
		Name:        "code_review",
		Title:       "Code review",
		Description: "Ask for a review of code in a given language.",
		Arguments: []mcp.PromptArgument{
			{Name: "language", Title: "Language", Description: "The programming language of the code (completable).", Required: true},
			{Name: "focus", Title: "Focus", Description: "What the review should concentrate on (default: correctness, readability and security)."},
		},
	}, codeReview)
	s.AddPrompt(mcp.Prompt{
		Name:        "summarize",
		Title:       "Summarize",
		Description: "Ask for a summary of a text, optionally bounded in length.",
		Arguments: []mcp.PromptArgument{
			{Name: "max_length", Title: "Maximum length", Description: "The most words the summary may have (a positive integer)."},
		},
	}, summarize)
}

func message(role, text string) mcp.PromptMessage {
	return mcp.PromptMessage{Role: role, Content: mcp.TextContent(text)}
}

func greeting(ctx context.Context, s *mcp.ServerSession, args map[string]string) (*mcp.GetPromptResult, error) {
	name := args["name"]
	formal := false
	switch v := strings.ToLower(strings.TrimSpace(args["formal"])); v {
	case "", "false":
	case "true":
		formal = true
	default:
		return nil, mcp.InvalidParams("prompt \"greeting\": argument \"formal\" must be \"true\" or \"false\", got %q", args["formal"])
	}
	if formal {
		return &mcp.GetPromptResult{
			Description: "A formal greeting for " + name,
			Messages: []mcp.PromptMessage{
				message("user", "Please write a formal greeting for "+name+"."),
				message("assistant", "Good day, "+name+". It is a pleasure to make your acquaintance."),
			},
		}, nil
	}
	return &mcp.GetPromptResult{
		Description: "A friendly greeting for " + name,
		Messages: []mcp.PromptMessage{
			message("user", "Please write a friendly greeting for "+name+"."),
			message("assistant", "Hi "+name+"! Great to see you."),
		},
	}, nil
}

func codeReview(ctx context.Context, s *mcp.ServerSession, args map[string]string) (*mcp.GetPromptResult, error) {
	lang := args["language"]
	focus := args["focus"]
	if focus == "" {
		focus = "correctness, readability and security"
	}
	return &mcp.GetPromptResult{
		Description: "Review " + lang + " code",
		Messages: []mcp.PromptMessage{
			message("user", "Please review the following "+lang+" code. Focus on "+focus+
				". Point out problems with line references and suggest concrete fixes."),
		},
	}, nil
}

func summarize(ctx context.Context, s *mcp.ServerSession, args map[string]string) (*mcp.GetPromptResult, error) {
	text := "Summarize the following text concisely."
	if v := strings.TrimSpace(args["max_length"]); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return nil, mcp.InvalidParams("prompt \"summarize\": argument \"max_length\" must be a positive integer, got %q", args["max_length"])
		}
		text = "Summarize the following text in at most " + strconv.Itoa(n) + " words."
	}
	return &mcp.GetPromptResult{
		Description: "Summarize a text",
		Messages:    []mcp.PromptMessage{message("user", text)},
	}, nil
}

// languages complete code_review's language argument.
var languages = []string{
	"bash", "c", "cpp", "csharp", "go", "haskell", "java", "javascript", "kotlin",
	"php", "python", "ruby", "rust", "scala", "sql", "swift", "typescript",
}

// maxCompletions is the most values one completion/complete answer carries
// (the spec's limit).
const maxCompletions = 100

// complete serves completion/complete: code_review's language, greeting's
// formal and the id of file:///users/{id}, all by case-insensitive prefix.
// Arguments without completions get an empty list; an unknown prompt or
// template is an invalid-params error.
func complete(ctx context.Context, s *mcp.ServerSession, p *mcp.CompleteParams) (*mcp.CompleteResult, error) {
	var candidates []string
	switch p.Ref.Type {
	case "ref/prompt":
		switch p.Ref.Name {
		case "code_review":
			if p.Argument.Name == "language" {
				candidates = languages
			}
		case "greeting":
			if p.Argument.Name == "formal" {
				candidates = []string{"false", "true"}
			}
		case "summarize":
		case "test_prompt_with_arguments":
			candidates = conformanceCompletions
		case "test_simple_prompt", "test_prompt_with_embedded_resource", "test_prompt_with_image":
		default:
			return nil, mcp.InvalidParams("completion/complete: unknown prompt %q", p.Ref.Name)
		}
	case "ref/resource":
		if p.Ref.URI != templateUser {
			return nil, mcp.InvalidParams("completion/complete: unknown resource template %q", p.Ref.URI)
		}
		if p.Argument.Name == "id" {
			for _, u := range users {
				candidates = append(candidates, u.ID)
			}
		}
	default:
		return nil, mcp.InvalidParams("completion/complete: unknown reference type %q (want ref/prompt or ref/resource)", p.Ref.Type)
	}
	prefix := strings.ToLower(p.Argument.Value)
	values := []string{}
	for _, c := range candidates {
		if strings.HasPrefix(c, prefix) {
			values = append(values, c)
		}
	}
	total := len(values)
	res := &mcp.CompleteResult{Completion: mcp.Completion{Values: values, Total: &total}}
	if total > maxCompletions {
		res.Completion.Values = values[:maxCompletions]
		res.Completion.HasMore = true
	}
	return res, nil
}
