package filter

import (
	abi "github.com/nexus-mcp/nexus/internal/filterabi"

	"github.com/nexus-mcp/nexus/sdk/event"
)

// View is one event as a policy or sanitizer sees it through PolicyView or
// SanitizerView. Its field accessors ask the host for one field each (and
// remember the answer for the rest of the call), so a cheap policy stays
// cheap: checking a tool name costs one host call, not a JSON parse. Event
// decodes the whole event when a filter does need it.
//
// A View is valid only during the call it was passed to.
type View struct {
	raw     []byte
	fields  [numFields]fieldCache
	ev      *event.Event
	evErr   error
	decoded bool

	texts     []*string // native harness: the result's content items
	textsDone bool
}

const numFields = int(abi.FieldListingID) + 1

type fieldCache struct {
	s    string
	b    []byte // Params and Result, fetched as bytes
	ok   bool
	have bool
}

func (v *View) reset(raw []byte) {
	v.raw = raw
	v.fields = [numFields]fieldCache{}
	v.ev, v.evErr, v.decoded = nil, nil, false
	v.texts, v.textsDone = nil, false
}

// Raw is the event JSON as the host sent it. It is only valid during the
// call: copy it to keep it.
func (v *View) Raw() []byte { return v.raw }

// Event decodes the whole event (once per call).
func (v *View) Event() (*event.Event, error) {
	if !v.decoded {
		v.decoded = true
		e := new(event.Event)
		if err := DecodeEvent(v.raw, e); err != nil {
			v.evErr = wrapError{"decoding the event: ", err}
		} else {
			v.ev = e
		}
	}
	return v.ev, v.evErr
}

// get returns one field of the event by its ABI id, and whether the event
// has it, asking the host once per field and event.
func (v *View) get(id abi.Field) (string, bool) {
	if id >= 0 && int(id) < numFields {
		c := &v.fields[id]
		if !c.have {
			c.s, c.ok = v.field(id)
			c.have = true
		}
		return c.s, c.ok
	}
	return v.field(id)
}

func (v *View) field(id abi.Field) (string, bool) {
	if raw(id) {
		b := v.rawField(id)
		return string(b), b != nil
	}
	s, n := fieldHost(v, id)
	return s, n >= 0
}

// raw reports whether a field can be long: such fields are fetched
// straight into a slice of their own (see rawField).
func raw(id abi.Field) bool {
	return id == abi.FieldParams || id == abi.FieldResult || id == abi.FieldDefinition || id == abi.FieldListing
}

func (v *View) str(id abi.Field) string { s, _ := v.get(id); return s }

// Phase is "request" or "response".
func (v *View) Phase() string { return v.str(abi.FieldPhase) }

// Method is the MCP method, such as "tools/call".
func (v *View) Method() string { return v.str(abi.FieldMethod) }

// Server is the name of the server the call goes to.
func (v *View) Server() string { return v.str(abi.FieldServer) }

// Tool is the tool's name, or "" when the event is not about a tool.
func (v *View) Tool() string { return v.str(abi.FieldTool) }

// AgentID names who makes the call.
func (v *View) AgentID() string { return v.str(abi.FieldAgentID) }

// Permission is the agent's permission level: "yolo", "trusted" or
// "sandboxed".
func (v *View) Permission() string { return v.str(abi.FieldPermission) }

// Session is an unguessable id of the host session: the same for every
// call of one session, different in the next, never sent to a server.
func (v *View) Session() string { return v.str(abi.FieldSession) }

// Annotations are the tool's annotations, or nil when it has none.
func (v *View) Annotations() *event.Annotations {
	s, ok := v.get(abi.FieldAnnotations)
	if !ok || s == "" {
		return nil
	}
	a := new(event.Annotations)
	if !decodeAnnotations([]byte(s), a) && decodeFallback([]byte(s), a) != nil {
		return nil
	}
	return a
}

// Params is the request's params as JSON, or nil. Like every field it
// comes from the host without parsing the event. The bytes are the
// filter's to keep; every call of Params during one event returns the
// same slice.
func (v *View) Params() []byte { return v.rawField(abi.FieldParams) }

// Result is the response's result as JSON, or nil: what a sanitizer
// rewrites, fetched without parsing the event. The bytes are the filter's
// to keep; every call of Result during one event returns the same slice.
func (v *View) Result() []byte { return v.rawField(abi.FieldResult) }

// Definition is, for a tools/list event, the tool's definition as the
// server listed it (name, title, description, inputSchema, outputSchema,
// annotations) as JSON, or nil: what a policy reviews before the agent
// sees the tool. The bytes are the filter's to keep.
func (v *View) Definition() []byte { return v.rawField(abi.FieldDefinition) }

// Listing is, for a tools/list event, every tool of the listing the
// event's tool is part of, from every server the agent sees: one line per
// tool, its server's name, a tab and its name. Nil when absent. A listing
// of n tools sends n events with the same listing: parse it once per
// ListingID and keep it.
func (v *View) Listing() []byte { return v.rawField(abi.FieldListing) }

// ListingID changes whenever the listing does; "" when the event has no
// listing.
func (v *View) ListingID() string { return v.str(abi.FieldListingID) }

// rawField fetches a JSON field straight into a slice of its own: one
// allocation and one copy, however long the field is.
func (v *View) rawField(id abi.Field) []byte {
	c := &v.fields[id]
	if !c.have {
		c.b, c.ok = rawFieldHost(v, id)
		c.have = true
	}
	return c.b
}

// HasTool reports whether the event is about a tool.
func (v *View) HasTool() bool { _, ok := v.get(abi.FieldTool); return ok }

// ContentText returns the text of the result's content item i (response
// phase of tools/call), and false when there is no item i or it is not a
// text item.
func (v *View) ContentText(i int) (string, bool) {
	s, n := contentTextHost(v, i)
	return s, n >= 0
}

// Texts calls fn with every text item of the result's content, in order,
// until fn returns false.
func (v *View) Texts(fn func(i int, text string) bool) {
	for i := 0; ; i++ {
		s, n := contentTextHost(v, i)
		if n == abi.Absent || n == abi.OutOfRange {
			return
		}
		if n >= 0 && !fn(i, s) {
			return
		}
	}
}
