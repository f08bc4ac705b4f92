package event

import (
	"encoding/json"
	"strings"
)

// ABI is the major version of the event and decision JSON. A filter or
// plugin built for another major version is refused at load.
const ABI = 1

// Phases of an event: policies see requests, sanitizers see responses.
const (
	PhaseRequest  = "request"
	PhaseResponse = "response"
)

// Actions a Decision can take.
const (
	Allow  = "allow"
	Deny   = "deny"
	Modify = "modify"
)

// Permission levels of an agent.
const (
	Yolo      = "yolo"
	Trusted   = "trusted"
	Sandboxed = "sandboxed"
)

// Event is what every policy and sanitizer sees, in WASM and in plugins
// alike, so a filter's logic can move between the two unchanged.
type Event struct {
	ABI    int    `json:"abi"`
	Phase  string `json:"phase"`
	Method string `json:"method"`
	Agent  Agent  `json:"agent"`
	Server Server `json:"server"`
	// Tool is set for tools/call and for each tool of tools/list.
	Tool *Tool `json:"tool,omitempty"`
	// Params of the request; for a response, the params that were sent.
	Params json.RawMessage `json:"params,omitempty"`
	// Result of the response phase.
	Result json.RawMessage `json:"result,omitempty"`

	// Listing is, for a tools/list event, every tool of the listing the
	// event's tool is part of. It is not in the event JSON, which would make
	// a listing of n tools cost n² bytes: a WASM filter fetches it through
	// the host function "field" (ids 11 and 12) when it needs it.
	Listing *Listing `json:"-"`
}

// Listing is the tools one tools/list shows an agent, from every server.
type Listing struct {
	// ID changes whenever the listing does, so a filter can parse the
	// listing once and keep it.
	ID    string
	Tools []ListedTool
}

// ListedTool is one tool of a Listing: its server's name and its own.
type ListedTool struct {
	Server, Name string
}

// Text is the listing as the host function "field" sends it: one line per
// tool, its server's name, a tab and its name. A tool whose names hold a
// tab or a line break is left out, since it would break the lines.
func (l *Listing) Text() string {
	n := 0
	for _, t := range l.Tools {
		n += len(t.Server) + len(t.Name) + 2
	}
	b := make([]byte, 0, n)
	for _, t := range l.Tools {
		if strings.ContainsAny(t.Server, "\t\r\n") || strings.ContainsAny(t.Name, "\t\r\n") {
			continue
		}
		b = append(b, t.Server...)
		b = append(b, '\t')
		b = append(b, t.Name...)
		b = append(b, '\n')
	}
	return string(b)
}

// Agent is who makes the call.
type Agent struct {
	ID         string `json:"id"`
	Permission string `json:"permission"`
}

// Server is the MCP server the call goes to.
type Server struct {
	Name string `json:"name"`
	Info *Info  `json:"info,omitempty"`
}

// Info is the server's own serverInfo.
type Info struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// Tool names the tool and carries its annotations. Annotations come from
// the server: hints, not guarantees.
type Tool struct {
	Name        string       `json:"name"`
	Annotations *Annotations `json:"annotations,omitempty"`
	// Definition is, for a tools/list event, the tool's definition as the
	// server listed it (name, title, description, inputSchema,
	// outputSchema, annotations): what a policy reviews before the agent
	// sees the tool. Absent for tools/call: a tool a policy hides from the
	// listing cannot be called either.
	Definition json.RawMessage `json:"definition,omitempty"`
}

// Annotations are the MCP tool annotations.
type Annotations struct {
	Title           string `json:"title,omitempty"`
	ReadOnlyHint    *bool  `json:"readOnlyHint,omitempty"`
	DestructiveHint *bool  `json:"destructiveHint,omitempty"`
	IdempotentHint  *bool  `json:"idempotentHint,omitempty"`
	OpenWorldHint   *bool  `json:"openWorldHint,omitempty"`
}

// Destructive reports the destructiveHint, which MCP defaults to true when
// absent on a tool that is not read-only.
func (a *Annotations) Destructive() bool {
	if a == nil {
		return true
	}
	if a.DestructiveHint != nil {
		return *a.DestructiveHint
	}
	return a.ReadOnlyHint == nil || !*a.ReadOnlyHint
}

// Decision is a filter's answer. Modify replaces Params (request phase) or
// Result (response phase).
type Decision struct {
	Action string          `json:"action"`
	Reason string          `json:"reason,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	// Flags are findings about a tools/list event's tool definition (a
	// poisoning scan's, say), one sentence each. With allow they are
	// warnings; with deny, the reasons behind the withholding. Either way
	// the host logs them, and nexus lock refuses to pin a flagged tool.
	Flags []string `json:"flags,omitempty"`
}

// Valid reports whether d names a known action and carries what it needs.
func (d Decision) Valid(phase string) bool {
	switch d.Action {
	case Allow, Deny:
		return true
	case Modify:
		if phase == PhaseResponse {
			return len(d.Result) > 0
		}
		return len(d.Params) > 0
	}
	return false
}
