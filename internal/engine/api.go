package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/ctxval"
)

// CallOptions change one call.
type CallOptions struct {
	// OnProgress receives the server's progress notifications.
	OnProgress func(mcp.Progress)
	// Timeout overrides the request timeout.
	Timeout time.Duration
	// Wire, when not nil, is set to the result's JSON as the server sent
	// it when nothing on the way changed the result (no sanitizer, filter
	// or output cap did) and encoding it again would say exactly that;
	// to nil otherwise, and when the call fails. A program that passes
	// results on (the gateway does) writes these bytes instead of
	// encoding the result: a result is not encoded again when nothing
	// changed it. They share memory with the result's strings: read them,
	// do not write into them.
	Wire *json.RawMessage
}

// CheckedArgs are a tool call's arguments known to be one valid JSON
// value, from a frame the protocol layer validated (the gateway's) or
// checked once already: CallTool takes them as they are instead of
// scanning them again, as it does a json.RawMessage.
type CheckedArgs json.RawMessage

// Resource is a resource with the server that offers it.
type Resource struct {
	Server string `json:"server"`
	mcp.Resource
}

// Template is a resource template with its server.
type Template struct {
	Server string `json:"server"`
	mcp.ResourceTemplate
}

// Prompt is a prompt with its server.
type Prompt struct {
	Server string `json:"server"`
	mcp.Prompt
}

// SessionOptions are the handlers of a session's own upstream connections
// (see NewSession). A nil handler leaves its capability undeclared
// upstream, so servers do not send that kind of request.
type SessionOptions struct {
	// Agent is whom the session's server-initiated requests go to, as the
	// chain's events say.
	Agent string
	// Session names the downstream session in the audit log.
	Session string
	Roots   mcp.RootsHandler
	// RootsFor, when set, is used instead of Roots: it knows which
	// server asks.
	RootsFor    func(server string) mcp.RootsHandler
	Sampling    func(server string) mcp.SamplingHandler
	Elicitation func(server string) mcp.ElicitationHandler
	// Raw, when set, serves the sampling and elicitation requests that
	// Sampling and Elicitation declare, as they came (mcp.ClientOptions.Raw),
	// through the same links of the chain.
	Raw func(server string) mcp.RawHandler
	// CallOf, when set, is the context of the call a server's request
	// belongs to (ctx is the request's handler context), before the
	// chain judges it, for the request's audit record: the record names
	// that call (WithCallID) and its downstream session (WithSession).
	// One the chain refuses never reaches its handler, which names it
	// otherwise (SetCall). nil names none.
	CallOf func(ctx context.Context, server string) context.Context
	// OnLog receives the servers' log messages, OnListChanged their
	// list_changed notifications (kind: "tools", "resources" or
	// "prompts") once the list is refreshed, OnResourceUpdated their
	// resources/updated notifications, OnChange every change of a
	// server's state or lists.
	OnLog             func(server string, m mcp.LogMessage)
	OnListChanged     func(server, kind string)
	OnResourceUpdated func(server, uri string)
	OnChange          func(server string)
}

// Tool is a tool as an agent sees it.
type Tool struct {
	Name   string `json:"exposedName"` // mcp_<server>_<tool>, or under the server's prefix
	Server string `json:"server"`
	mcp.Tool
}

type metaKey struct{}

// WithTraceContext hands a request's W3C trace context (its _meta's
// "traceparent", "tracestate" and "baggage") to the host, whose span
// then continues it.
func WithTraceContext(ctx context.Context, meta map[string]string) context.Context {
	return ctxval.With(ctx, metaKey{}, meta)
}

type sessionKey struct{}

// WithSession names, for the audit log, the downstream session a
// request comes from (the gateway's).
func WithSession(ctx context.Context, id string) context.Context {
	return ctxval.With(ctx, sessionKey{}, id)
}

// SessionFrom is the downstream session WithSession named, if any.
func SessionFrom(ctx context.Context) (string, bool) {
	id, ok := ctx.Value(sessionKey{}).(string)
	return id, ok
}

type servedKey struct{}

// Served is what a request's span says of the client's side of it, as
// the OpenTelemetry conventions for MCP ask: the protocol version its
// session negotiated (a modern request's _meta names its own, which wins)
// and network.transport, "pipe" (stdio) or "tcp" (HTTP).
type Served struct{ Version, Transport string }

// WithServed hands the host what the gateway knows of the client's side
// of a request it serves.
func WithServed(ctx context.Context, s *Served) context.Context {
	return ctxval.With(ctx, servedKey{}, s)
}

// ServedFrom is what WithServed handed over, or nil.
func ServedFrom(ctx context.Context) *Served {
	s, _ := ctx.Value(servedKey{}).(*Served)
	return s
}

// TraceContextFrom is the trace context WithTraceContext handed over, if any.
func TraceContextFrom(ctx context.Context) map[string]string {
	meta, _ := ctx.Value(metaKey{}).(map[string]string)
	return meta
}

type listWaitKey struct{}

// WithListWait makes a listing (Tools, Resources, Templates, Prompts)
// wait at most d for servers that are not connected yet: those still
// starting when it passes are left out, each reported as a
// *StartingError in the listing's error, and keep starting; the host's
// OnChange says when they are up. The gateway lists this way, so a
// client's first tools/list is not held up by slow servers.
func WithListWait(ctx context.Context, d time.Duration) context.Context {
	return ctxval.With(ctx, listWaitKey{}, d)
}

// ListWaitFrom is the wait WithListWait set, or 0 (wait for every server).
func ListWaitFrom(ctx context.Context) time.Duration {
	d, _ := ctx.Value(listWaitKey{}).(time.Duration)
	return d
}

// StartingError is a server a listing left out because it was still
// starting when the listing's wait (WithListWait) passed.
type StartingError struct{ Server string }

func (e *StartingError) Error() string {
	return fmt.Sprintf("server %q is still starting; its items are listed once it is up (list_changed follows)", e.Server)
}

type answersInputKey struct{}

// WithAnswersInput marks a call made for a client that answers a
// server's input requests itself: a modern agent through the gateway
// (MCP 2026-07-28, Multi Round-Trip Requests). This is the seam between
// the gateway and the host's upstream client; on such a call:
//   - an upstream that answers with an InputRequiredResult makes the call
//     (CallTool, ReadResourceWith, GetPrompt) return *mcp.InputRequiredError
//     carrying it, unfulfilled: the gateway has the chain judge each input
//     request (the host's GuardInput) and hands the result to the agent;
//   - mcp.InputOf(ctx), when set, is the agent's retry (inputResponses and
//     the requestState it was handed), to be sent upstream as that
//     request's own fields;
//   - mcp.RequestMetaOf(ctx) is the agent's request metadata: the
//     capabilities it declared are the ones it can answer input requests
//     for.
//
// A host that passes a result's bytes on (CallOptions.Wire) may instead
// hand back the server's input_required result as those bytes; the
// gateway takes either.
func WithAnswersInput(ctx context.Context) context.Context {
	return ctxval.With(mcp.WithPassInput(ctx), answersInputKey{}, true)
}

// AnswersInput reports whether WithAnswersInput marked ctx.
func AnswersInput(ctx context.Context) bool {
	v, _ := ctx.Value(answersInputKey{}).(bool)
	return v
}

type callIDKey struct{}

// WithCallID names the logical call a request belongs to, for the audit
// log: the attempts of one call (a modern agent's retries with input
// responses) and the server requests made during it share it.
func WithCallID(ctx context.Context, id string) context.Context {
	return ctxval.With(ctx, callIDKey{}, id)
}

// CallIDFrom is the call id WithCallID set, or "".
func CallIDFrom(ctx context.Context) string {
	id, _ := ctx.Value(callIDKey{}).(string)
	return id
}

type callSlotKey struct{}

// callSlot is the call a server's request belongs to, as its audit
// record names it: the call's id and its downstream session.
type callSlot struct{ call, session string }

// withCallSlot gives a request whose audit record is being made a place
// for the call a handler learns only as it runs (a server's request
// during a call: the gateway's bridge knows which call it belongs to);
// SetCall fills it.
func withCallSlot(ctx context.Context) (context.Context, *callSlot) {
	slot := new(callSlot)
	return ctxval.With(ctx, callSlotKey{}, slot), slot
}

// set names call, a call's context: its id (WithCallID) and session
// (WithSession); nil names none.
func (s *callSlot) set(call context.Context) {
	*s = callSlot{}
	if call != nil {
		s.call = CallIDFrom(call)
		s.session, _ = SessionFrom(call)
	}
}

// SetCall names the call ctx's request (a server's, being served)
// belongs to by that call's context, call (nil: none), for the
// request's audit record: the call's id and session. Nothing happens
// without a record being made (SessionOptions.CallOf).
func SetCall(ctx, call context.Context) {
	if slot, ok := ctx.Value(callSlotKey{}).(*callSlot); ok {
		slot.set(call)
	}
}

type attemptKey struct{}

// Attempt is one attempt of a modern agent's logical call: a tools/call,
// resources/read or prompts/get that an upstream answered input_required
// and the agent retries with its input responses (MCP 2026-07-28, Multi
// Round-Trip Requests). The chain decides a call once, on its first
// attempt; the gateway carries what the host needs for the retries in
// the sealed requestState.
//
// On a first attempt (Retry false) the host runs the whole chain and,
// when the policies changed the request's params, sets Params to them.
// A retry (Retry true) brings those Params back: the host then skips
// what decided the call (the permission, the listing verdict, the
// policies' request phase, and the audit record, unless what still
// runs refuses or changes the request), keeps the checks of what goes
// out and comes back (the lockfile, the schemas, the sanitizers), and
// sends Params, when set, instead of the agent's own.
type Attempt struct {
	Retry  bool
	Params json.RawMessage
}

// WithAttempt marks ctx's request as an attempt of a logical call (see
// Attempt); the call's id is WithCallID's.
func WithAttempt(ctx context.Context, a *Attempt) context.Context {
	return ctxval.With(ctx, attemptKey{}, a)
}

// AttemptFrom is the attempt WithAttempt set, or nil.
func AttemptFrom(ctx context.Context) *Attempt {
	a, _ := ctx.Value(attemptKey{}).(*Attempt)
	return a
}

// Retried reports whether ctx's request is a retry of a call decided on
// its first attempt.
func Retried(ctx context.Context) bool {
	a := AttemptFrom(ctx)
	return a != nil && a.Retry
}
