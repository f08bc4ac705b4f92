package mcp

import (
	"encoding/json"
	"errors"

	"github.com/nexus-mcp/nexus/internal/wire"
)

// Message is the routing view of one JSON-RPC message, for transports that
// must route frames without decoding them. The raw fields point into the
// frame it was parsed from (nil when absent).
type Message struct {
	ID     json.RawMessage
	Method string // "" for responses
	Params json.RawMessage
	Result json.RawMessage
	Error  json.RawMessage
}

// HasID reports whether the message carries a non-null id.
func (m *Message) HasID() bool { return len(m.ID) > 0 && !isNull(m.ID) }

// IsRequest reports whether the message is a request (a method and an id).
func (m *Message) IsRequest() bool { return m.Method != "" && m.HasID() }

// IsResponse reports whether the message is a response (an id, no method).
func (m *Message) IsResponse() bool { return m.Method == "" && m.HasID() }

// ParseMessage validates msg as one JSON object in a single pass, about
// ten times faster than encoding/json, and returns its JSON-RPC wire.Members.
// Errors read like encoding/json's syntax errors.
func ParseMessage(msg []byte) (Message, error) {
	var e envelope
	if err := parseEnvelope(msg, &e); err != nil {
		return Message{}, err
	}
	m := Message{ID: e.id, Params: e.params, Result: e.result, Error: e.err}
	if e.method != nil {
		method, err := internMethod(e.method)
		if err != nil {
			return Message{}, err
		}
		if method == "" {
			return Message{}, errors.New(`"method" is empty`)
		}
		m.Method = method
	}
	return m, nil
}

// CheckRequestID says why id (raw JSON, as a request carries it) is not a
// JSON-RPC request id, or nil when it is one. MCP takes a string or an
// integer; null (which JSON-RPC 2.0 merely discourages) and objects,
// arrays, booleans and fractions are refused: such an id cannot be echoed
// back faithfully nor used as a key, and a client sending one is broken.
// Integers are digits with an optional minus sign (1e3 and 1.0 are
// fractions as far as the syntax goes, and refused as such).
func CheckRequestID(id []byte) error {
	if len(id) == 0 {
		return nil
	}
	switch c := id[0]; {
	case c == '"':
		return nil
	case c == '-' || c >= '0' && c <= '9':
		for _, d := range id[1:] {
			if d < '0' || d > '9' {
				if len(id) > 32 {
					id = append(id[:32:32], "..."...)
				}
				return errors.New("the request's id " + string(id) + " is not an integer; a JSON-RPC id is a string or an integer")
			}
		}
		if c == '-' && len(id) == 1 {
			return errors.New(`the id "-" is not a number`)
		}
		return nil
	}
	kind := "an object"
	switch id[0] {
	case '[':
		kind = "an array"
	case 't', 'f':
		kind = "a boolean"
	case 'n':
		kind = "null"
	}
	return errors.New("the request's id is " + kind + "; a JSON-RPC id is a string or an integer")
}

// errFound stops Member's scan.
var errFound = errors.New("found")

// Member returns the raw value of key in obj, a JSON object that has been
// validated (a member of a parsed Message, or one of its wire.Members), or nil
// when obj is not an object or has no such key.
func Member(obj []byte, key string) json.RawMessage {
	i := wire.SkipWS(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return nil
	}
	var found []byte
	wire.EachMember(obj, i, 0, func(k, v []byte) error {
		if wire.KeyIs(k, key) {
			found = v
			return errFound
		}
		return nil
	})
	return found
}

// internMethod returns the constant for well-known method names so that
// decoding them allocates nothing.
func internMethod(raw []byte) (string, error) {
	if len(raw) >= 2 {
		switch string(raw[1 : len(raw)-1]) {
		case MethodToolsCall:
			return MethodToolsCall, nil
		case MethodToolsList:
			return MethodToolsList, nil
		case MethodPing:
			return MethodPing, nil
		case NotificationProgress:
			return NotificationProgress, nil
		case NotificationMessage:
			return NotificationMessage, nil
		case NotificationCancelled:
			return NotificationCancelled, nil
		case MethodInitialize:
			return MethodInitialize, nil
		case NotificationInitialized:
			return NotificationInitialized, nil
		}
	}
	return wire.Unquote(raw)
}
