package plugin

import (
	"context"
	"encoding/json"
	"errors"

	pb "github.com/nexus-mcp/nexus/internal/pluginwire"
	"github.com/nexus-mcp/nexus/sdk/event"
)

// Conn carries one MCP session between the plugin and a server: JSON-RPC
// messages, one message per frame, in both directions. It mirrors the
// host's own transport interface.
//
// ReadMessage blocks until the next message arrives from the server; the
// slice may be reused after the next call. It returns io.EOF when the
// server closed the session cleanly and any other error when the session
// broke; the error's text reaches the host's error messages. Only one
// goroutine calls ReadMessage.
//
// WriteMessage sends one complete message to the server; msg has no
// trailing newline and must not be kept after the call. Calls come from one
// goroutine at a time.
//
// Close ends the session and makes a blocked ReadMessage return. It may be
// called more than once.
type Conn interface {
	ReadMessage() ([]byte, error)
	WriteMessage(ctx context.Context, msg []byte) error
	Close() error
}

// Transport opens sessions to MCP servers. Open is called once per MCP
// session with the config block of the server that uses the plugin (a JSON
// object; "{}" when there is none). It should connect before returning, so
// that a wrong address or a refused login fails at Open with a clear error.
type Transport interface {
	Open(ctx context.Context, config json.RawMessage) (Conn, error)
}

// Decider answers events. Policies get request events and may allow, deny
// or modify the params; sanitizers get response events and may allow, deny
// or modify the result. Decide may be called concurrently.
type Decider interface {
	Decide(ctx context.Context, e *event.Event) (event.Decision, error)
}

// Policy makes a Decider for each policy filter that names the plugin,
// from that filter's config block. A plugin keeps its state (counters,
// caches, connections) in the Decider.
type Policy interface {
	NewPolicy(ctx context.Context, config json.RawMessage) (Decider, error)
}

// Sanitizer makes a Decider for each sanitizer filter that names the
// plugin; its Decider sees response events.
type Sanitizer interface {
	NewSanitizer(ctx context.Context, config json.RawMessage) (Decider, error)
}

// SchemaProvider is implemented by a Transport, Policy or Sanitizer whose
// config has a JSON Schema (draft 2020-12 unless the schema says otherwise).
// The host validates each config block against it when the plugin loads
// and reports errors with the config file and line; the plugin can then
// trust the shape of what it gets.
type SchemaProvider interface {
	ConfigSchema() json.RawMessage
}

// DecideFunc is a Decider, Policy and Sanitizer in one function, for
// filters that take no config.
type DecideFunc func(ctx context.Context, e *event.Event) (event.Decision, error)

// Decide calls f.
func (f DecideFunc) Decide(ctx context.Context, e *event.Event) (event.Decision, error) {
	return f(ctx, e)
}

// NewPolicy returns f, whatever the config.
func (f DecideFunc) NewPolicy(context.Context, json.RawMessage) (Decider, error) { return f, nil }

// NewSanitizer returns f, whatever the config.
func (f DecideFunc) NewSanitizer(context.Context, json.RawMessage) (Decider, error) { return f, nil }

var (
	_ Policy    = DecideFunc(nil)
	_ Sanitizer = DecideFunc(nil)
)

// Allow, Deny and Modify build decisions.
func Allow() event.Decision { return event.Decision{Action: event.Allow} }

// Deny refuses the call; reason is shown to the caller.
func Deny(reason string) event.Decision { return event.Decision{Action: event.Deny, Reason: reason} }

// ModifyParams replaces a request's params.
func ModifyParams(params json.RawMessage, reason string) event.Decision {
	return event.Decision{Action: event.Modify, Params: params, Reason: reason}
}

// ModifyResult replaces a response's result.
func ModifyResult(result json.RawMessage, reason string) event.Decision {
	return event.Decision{Action: event.Modify, Result: result, Reason: reason}
}

// Options say what a plugin binary serves; at least one kind must be set.
type Options struct {
	Transport Transport
	Policy    Policy
	Sanitizer Sanitizer

	// Name and Version describe the plugin in `nexus plugin inspect`.
	Name    string
	Version string
}

func (o Options) kinds() []string {
	var k []string
	if o.Transport != nil {
		k = append(k, pb.KindTransport)
	}
	if o.Policy != nil {
		k = append(k, pb.KindPolicy)
	}
	if o.Sanitizer != nil {
		k = append(k, pb.KindSanitizer)
	}
	return k
}

func (o Options) validate() error {
	if len(o.kinds()) == 0 {
		return errors.New("plugin.Serve: Options sets no Transport, Policy or Sanitizer; a plugin must serve at least one kind")
	}
	for kind, v := range map[string]any{pb.KindTransport: o.Transport, pb.KindPolicy: o.Policy, pb.KindSanitizer: o.Sanitizer} {
		if s, ok := v.(SchemaProvider); ok && v != nil {
			if b := s.ConfigSchema(); len(b) > 0 && !json.Valid(b) {
				return errors.New("plugin.Serve: the " + kind + " config schema is not valid JSON")
			}
		}
	}
	return nil
}

func (o Options) schemas() map[string][]byte {
	out := map[string][]byte{}
	for kind, v := range map[string]any{pb.KindTransport: o.Transport, pb.KindPolicy: o.Policy, pb.KindSanitizer: o.Sanitizer} {
		if s, ok := v.(SchemaProvider); ok && v != nil {
			if b := s.ConfigSchema(); len(b) > 0 {
				out[kind] = b
			}
		}
	}
	return out
}
