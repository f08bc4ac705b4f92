package rules

import (
	"reflect"

	"github.com/nexus-mcp/nexus/sdk/event"
)

// The typed objects a rule reads. They are CEL native types: the checker
// knows their fields, so `agent.idd` is an error at config load, not a
// rule that never matches.

// Agent is the caller.
type Agent struct {
	ID         string `cel:"id"`
	Permission string `cel:"permission"`
}

// Info is what a server says of itself.
type Info struct {
	Name    string `cel:"name"`
	Version string `cel:"version"`
}

// Server is the server the event is about.
type Server struct {
	Name string `cel:"name"`
	Info Info   `cel:"info"`
}

// Annotations are a tool's hints, with MCP's defaults where the server
// gave none: not read-only, destructive unless read-only, not idempotent,
// open-world.
type Annotations struct {
	Title           string `cel:"title"`
	ReadOnlyHint    bool   `cel:"readOnlyHint"`
	DestructiveHint bool   `cel:"destructiveHint"`
	IdempotentHint  bool   `cel:"idempotentHint"`
	OpenWorldHint   bool   `cel:"openWorldHint"`
}

// Tool is the tool of a tools/call or tools/list event; its name is ""
// for other methods.
type Tool struct {
	Name        string      `cel:"name"`
	Annotations Annotations `cel:"annotations"`
}

// Variable is one name a rule's expressions may use.
type Variable struct {
	Name string // as written in an expression
	Type string // its CEL type
	Doc  string
}

// Variables are every name a rule may use, in the order the docs list
// them.
var Variables = []Variable{
	{"phase", "string", `"request" (policies) or "response" (sanitizers)`},
	{"method", "string", `the MCP method: "tools/call", "tools/list", "resources/read", "prompts/get", ...`},
	{"agent", "object", "agent.id and agent.permission (yolo, trusted, sandboxed)"},
	{"server", "object", "server.name, and server.info.name and server.info.version as the server reported them"},
	{"tool", "object", "tool.name and tool.annotations (title, readOnlyHint, destructiveHint, idempotentHint, openWorldHint, with MCP's defaults); tool.name is \"\" for events not about a tool"},
	{"args", "map(string, dyn)", "the arguments of a tools/call (empty otherwise); integers are int, other numbers double"},
	{"params", "map(string, dyn)", "the request's params, whole"},
	{"result", "map(string, dyn)", "the response's result (empty in the request phase)"},
	{"uri", "string", "the uri of a resources/read (\"\" otherwise)"},
	{"prompt", "string", "the name of a prompts/get (\"\" otherwise)"},
}

var nativeTypes = []any{reflect.TypeFor[Agent](), reflect.TypeFor[Info](), reflect.TypeFor[Server](), reflect.TypeFor[Annotations](), reflect.TypeFor[Tool]()}

func toolOf(t *event.Tool) Tool {
	if t == nil {
		return Tool{Annotations: annotationsOf(nil)}
	}
	return Tool{Name: t.Name, Annotations: annotationsOf(t.Annotations)}
}

func annotationsOf(a *event.Annotations) Annotations {
	out := Annotations{DestructiveHint: a.Destructive(), OpenWorldHint: true}
	if a == nil {
		return out
	}
	out.Title = a.Title
	if a.ReadOnlyHint != nil {
		out.ReadOnlyHint = *a.ReadOnlyHint
	}
	if a.IdempotentHint != nil {
		out.IdempotentHint = *a.IdempotentHint
	}
	if a.OpenWorldHint != nil {
		out.OpenWorldHint = *a.OpenWorldHint
	}
	return out
}
