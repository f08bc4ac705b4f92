package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/nexus-mcp/nexus/internal/wire"
)

// The stateless revision (2026-07-28) and what both sides of it share.
//
// A modern request carries its protocol version, client identity and
// client capabilities in params._meta; there is no initialize and no
// session. Server-to-client requests became Multi Round-Trip Requests:
// a server answers tools/call, resources/read or prompts/get with an
// InputRequiredResult, and the client retries the request with
// inputResponses and the requestState it was handed. Every result says
// what it is in resultType, and cacheable results carry ttlMs and
// cacheScope.
//
// The types here are the wire shapes both the client and the server role
// use; spec: ../shared/spec/2026-07-28 (basic/versioning, patterns/mrtr,
// server/discover, transports/streamable-http).

// Version20260728 is the stateless revision.
const Version20260728 = "2026-07-28"

// ModernVersions are the per-request-metadata versions Nexus speaks,
// newest first; LegacyVersions (SupportedVersions) are the handshake ones.
var ModernVersions = []string{Version20260728}

// AllVersions is every version Nexus speaks, modern first: what a
// dual-era server lists in server/discover and in
// UnsupportedProtocolVersionError.
var AllVersions = append(slices.Clone(ModernVersions), SupportedVersions...)

// IsModern reports whether v is a version without the initialize
// handshake (2026-07-28 and later, as far as Nexus knows them).
func IsModern(v string) bool { return slices.Contains(ModernVersions, v) }

// The `_meta` keys of the stateless revision.
const (
	MetaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	MetaClientInfo         = "io.modelcontextprotocol/clientInfo"
	MetaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	MetaLogLevel           = "io.modelcontextprotocol/logLevel"
	MetaServerInfo         = "io.modelcontextprotocol/serverInfo"
	MetaSubscriptionID     = "io.modelcontextprotocol/subscriptionId"
	// MetaInputKey (Nexus's) is how a legacy server names, in a
	// server-initiated request's _meta, the inputRequests key a bridging
	// gateway hands a modern client the request under.
	MetaInputKey = "io.nexus-mcp/inputKey"
)

// Error codes the stateless revision allocates (-32020..-32099 are the
// specification's).
const (
	CodeHeaderMismatch             = -32020
	CodeMissingRequiredCapability  = -32021
	CodeUnsupportedProtocolVersion = -32022
)

// Methods and notifications new in the stateless revision.
const (
	MethodServerDiscover           = "server/discover"
	MethodSubscriptionsListen      = "subscriptions/listen"
	NotificationSubscriptionsAcked = "notifications/subscriptions/acknowledged"
	ExtensionTasks                 = "io.modelcontextprotocol/tasks"
	ResultComplete                 = "complete"
	ResultInputRequired            = "input_required"
	CacheScopePublic               = "public"
	CacheScopePrivate              = "private"
	maxInputRequests               = 64
	maxRequestStateBytes           = 64 << 10
)

// AcceptsInputRequired reports whether a server may answer method with an
// InputRequiredResult (tools/call, resources/read and prompts/get only).
func AcceptsInputRequired(method string) bool {
	switch method {
	case "tools/call", "resources/read", "prompts/get":
		return true
	}
	return false
}

// RequestMeta is what a modern request says about itself in params._meta.
type RequestMeta struct {
	ProtocolVersion string
	ClientInfo      *Implementation
	Capabilities    ClientCapabilities
	// LogLevel is the level the client asked logs for this request at;
	// "" means it asked for none (a server sends no notifications/message).
	LogLevel LoggingLevel
}

// ParseRequestMeta reads the stateless revision's fields from a request's
// params. modern is false when params carry no protocol version in _meta
// (a legacy request); err reports fields that are present but malformed.
func ParseRequestMeta(params json.RawMessage) (m RequestMeta, modern bool, err error) {
	if len(params) == 0 || !bytes.Contains(params, []byte(MetaProtocolVersion)) {
		return m, false, nil
	}
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return m, false, fmt.Errorf("params: %w", err)
	}
	raw, ok := p.Meta[MetaProtocolVersion]
	if !ok {
		return m, false, nil
	}
	if err := json.Unmarshal(raw, &m.ProtocolVersion); err != nil || m.ProtocolVersion == "" {
		return m, true, fmt.Errorf("_meta[%q] must be a non-empty string", MetaProtocolVersion)
	}
	if raw, ok := p.Meta[MetaClientInfo]; ok && string(raw) != "null" {
		m.ClientInfo = new(Implementation)
		if err := json.Unmarshal(raw, m.ClientInfo); err != nil {
			return m, true, fmt.Errorf("_meta[%q]: %w", MetaClientInfo, err)
		}
	}
	if raw, ok := p.Meta[MetaClientCapabilities]; ok && string(raw) != "null" {
		if err := json.Unmarshal(raw, &m.Capabilities); err != nil {
			return m, true, fmt.Errorf("_meta[%q]: %w", MetaClientCapabilities, err)
		}
	}
	if raw, ok := p.Meta[MetaLogLevel]; ok && string(raw) != "null" {
		if err := json.Unmarshal(raw, &m.LogLevel); err != nil || !slices.Contains(LoggingLevels, m.LogLevel) {
			return m, true, fmt.Errorf("_meta[%q] must be one of %v", MetaLogLevel, LoggingLevels)
		}
	}
	return m, true, nil
}

// Put writes the fields into meta (a new map when meta is nil) and
// returns it.
func (m RequestMeta) Put(meta Meta) Meta {
	if meta == nil {
		meta = Meta{}
	}
	meta[MetaProtocolVersion], _ = json.Marshal(m.ProtocolVersion)
	if m.ClientInfo != nil {
		meta[MetaClientInfo], _ = json.Marshal(m.ClientInfo)
	}
	meta[MetaClientCapabilities], _ = json.Marshal(m.Capabilities)
	if m.LogLevel != "" {
		meta[MetaLogLevel], _ = json.Marshal(m.LogLevel)
	}
	return meta
}

type requestMetaKey struct{}

// WithRequestMeta returns ctx carrying a modern request's metadata, for
// the handlers that serve it.
func WithRequestMeta(ctx context.Context, m *RequestMeta) context.Context {
	return context.WithValue(ctx, requestMetaKey{}, m)
}

// RequestMetaOf is the metadata of the modern request ctx serves; ok is
// false for a legacy request.
func RequestMetaOf(ctx context.Context) (m *RequestMeta, ok bool) {
	m, ok = ctx.Value(requestMetaKey{}).(*RequestMeta)
	return m, ok && m != nil
}

// InputRequest is one server-to-client request inside an
// InputRequiredResult: elicitation/create, sampling/createMessage or
// roots/list, with its params.
type InputRequest struct {
	Method string          `json:"method"`
	Params json.RawMessage `json:"params,omitempty"`
}

// InputRequests maps server-chosen keys to requests; InputResponses maps
// the same keys to the client's results.
type (
	InputRequests  map[string]InputRequest
	InputResponses map[string]json.RawMessage
)

// InputRequiredResult is a server's interim answer: the client gathers
// InputRequests and retries the original request with the responses and
// RequestState (echoed byte for byte, never inspected).
type InputRequiredResult struct {
	ResultType    string        `json:"resultType"`
	InputRequests InputRequests `json:"inputRequests,omitempty"`
	RequestState  string        `json:"requestState,omitempty"`
	Meta          Meta          `json:"_meta,omitempty"`
}

// appendJSON encodes r straight into a frame buffer (Peer.respond), as
// encoding/json would but for HTML escapes, which no codec writes: its
// inputRequests in key order, each request's params as they came
// (checked to be one JSON value).
func (r *InputRequiredResult) appendJSON(b []byte) ([]byte, error) {
	b = wire.AppendString(append(b, `{"resultType":`...), r.ResultType)
	if len(r.InputRequests) > 0 {
		var buf [4]string
		keys := buf[:0]
		for k := range r.InputRequests {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b = append(b, `,"inputRequests":{`...)
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			q := r.InputRequests[k]
			b = wire.AppendString(append(wire.AppendString(b, k), `:{"method":`...), q.Method)
			if len(q.Params) > 0 {
				if !wire.ValidJSON(q.Params) {
					return b, fmt.Errorf("inputRequests[%q]: its params are not one valid JSON value", k)
				}
				b = append(append(b, `,"params":`...), q.Params...)
			}
			b = append(b, '}')
		}
		b = append(b, '}')
	}
	if r.RequestState != "" {
		b = wire.AppendString(append(b, `,"requestState":`...), r.RequestState)
	}
	b, err := appendMetaMember(b, r.Meta)
	return append(b, '}'), err
}

// Check reports what makes r invalid on the wire: neither inputRequests
// nor requestState, a method other than the three the pattern allows, or
// more than a client should be asked at once.
func (r *InputRequiredResult) Check() error {
	if len(r.InputRequests) == 0 && r.RequestState == "" {
		return fmt.Errorf("an input_required result carries neither inputRequests nor requestState")
	}
	if len(r.InputRequests) > maxInputRequests {
		return fmt.Errorf("an input_required result asks %d inputs; at most %d are accepted", len(r.InputRequests), maxInputRequests)
	}
	if len(r.RequestState) > maxRequestStateBytes {
		return fmt.Errorf("requestState of %d bytes is over the %d-byte limit", len(r.RequestState), maxRequestStateBytes)
	}
	for k, q := range r.InputRequests {
		switch q.Method {
		case "elicitation/create", "sampling/createMessage", "roots/list":
		default:
			return fmt.Errorf("inputRequests[%q] asks %q; only elicitation/create, sampling/createMessage and roots/list may be asked", k, q.Method)
		}
	}
	return nil
}

// InputRequiredError is returned by a server's tool, resource or prompt
// handler to answer with an InputRequiredResult instead of a result; the
// server role writes Result as the response.
type InputRequiredError struct{ Result *InputRequiredResult }

func (e *InputRequiredError) Error() string {
	keys := make([]string, 0, len(e.Result.InputRequests))
	for k := range e.Result.InputRequests {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return fmt.Sprintf("input required: %v", keys)
}

// InputParams are the retry fields of a request that answers an
// InputRequiredResult.
type InputParams struct {
	InputResponses InputResponses `json:"inputResponses,omitempty"`
	RequestState   string         `json:"requestState,omitempty"`
}

type inputKey struct{}

// WithInput returns ctx carrying a retried request's inputResponses and
// requestState, for the handler that serves it.
func WithInput(ctx context.Context, in *InputParams) context.Context {
	return context.WithValue(ctx, inputKey{}, in)
}

// InputOf is what the client sent back for an earlier InputRequiredResult
// (nil: this request is not a retry).
func InputOf(ctx context.Context) *InputParams {
	in, _ := ctx.Value(inputKey{}).(*InputParams)
	return in
}

type passInputKey struct{}

// WithPassInput marks ctx for a caller that answers a server's input
// requests itself (a gateway in front of a modern agent): a request
// answered input_required returns *InputRequiredError carrying the result
// unfulfilled instead of going through the client's handlers, and
// InputOf(ctx), when set, is sent as the first round's inputResponses and
// requestState (the agent's retry).
func WithPassInput(ctx context.Context) context.Context {
	return context.WithValue(ctx, passInputKey{}, true)
}

// PassInput reports whether WithPassInput marked ctx.
func PassInput(ctx context.Context) bool {
	v, _ := ctx.Value(passInputKey{}).(bool)
	return v
}

// LogAsker is implemented by a Handler whose clients get a server's logs
// without asking, as 2025-11-25 clients do (a gateway's legacy
// sessions): a request its handlers make to a modern server, which sends
// logs only when asked, asks for them at AskLogLevel ("" asks none). It
// is found through HandlerOf, so the request's context is not wrapped.
type LogAsker interface {
	AskLogLevel() LoggingLevel
}

func askedLogLevel(ctx context.Context) LoggingLevel {
	if a, ok := HandlerOf(ctx).(LogAsker); ok {
		return a.AskLogLevel()
	}
	return ""
}

type listMetaKey struct{}

// WithListMeta adds m's members to the _meta of the list requests
// (tools, resources, templates, prompts) made on ctx, of either era: a
// gateway continues its client's trace with them. A list served from
// the cache sends nothing.
func WithListMeta(ctx context.Context, m Meta) context.Context {
	return context.WithValue(ctx, listMetaKey{}, m)
}

func listMetaOf(ctx context.Context) Meta {
	m, _ := ctx.Value(listMetaKey{}).(Meta)
	return m
}

// CacheHint is a cacheable result's freshness (ttlMs) and who may share
// it (cacheScope).
type CacheHint struct {
	TTLMs      int64  `json:"ttlMs"`
	CacheScope string `json:"cacheScope"`
}

// DiscoverResult answers server/discover.
type DiscoverResult struct {
	ResultType        string             `json:"resultType"`
	SupportedVersions []string           `json:"supportedVersions"`
	Capabilities      ServerCapabilities `json:"capabilities"`
	Instructions      string             `json:"instructions,omitempty"`
	TTLMs             int64              `json:"ttlMs"`
	CacheScope        string             `json:"cacheScope"`
	Meta              Meta               `json:"_meta,omitempty"`
}

// SubscriptionFilter is what a subscriptions/listen stream opts in to.
type SubscriptionFilter struct {
	ToolsListChanged      bool     `json:"toolsListChanged,omitempty"`
	PromptsListChanged    bool     `json:"promptsListChanged,omitempty"`
	ResourcesListChanged  bool     `json:"resourcesListChanged,omitempty"`
	ResourceSubscriptions []string `json:"resourceSubscriptions,omitempty"`
}

// SubscriptionsListenParams opens a subscriptions/listen stream.
type SubscriptionsListenParams struct {
	Notifications SubscriptionFilter `json:"notifications"`
	Meta          Meta               `json:"_meta,omitempty"`
}

// UnsupportedProtocolVersion is the error for a request in a version the
// server does not speak; supported lists what it does.
func UnsupportedProtocolVersion(requested string, supported []string) *RPCError {
	data, _ := json.Marshal(map[string]any{"supported": supported, "requested": requested})
	return &RPCError{Code: CodeUnsupportedProtocolVersion, Message: fmt.Sprintf("Unsupported protocol version: %q; supported: %q", requested, supported), Data: data}
}

// HeaderMismatch is the error for HTTP headers that disagree with the
// body, or required ones that are missing or malformed.
func HeaderMismatch(format string, args ...any) *RPCError {
	return &RPCError{Code: CodeHeaderMismatch, Message: "Header mismatch: " + fmt.Sprintf(format, args...)}
}

// MissingRequiredCapability is the error for a request that needs a
// client capability the request did not declare.
func MissingRequiredCapability(required ClientCapabilities, why string) *RPCError {
	data, _ := json.Marshal(map[string]any{"requiredCapabilities": required})
	return &RPCError{Code: CodeMissingRequiredCapability, Message: "Missing required client capability: " + why, Data: data}
}

// ModernError reports whether code is one of the errors only a modern
// server sends: a client that gets one knows the server's era.
func ModernError(code int) bool {
	switch code {
	case CodeHeaderMismatch, CodeMissingRequiredCapability, CodeUnsupportedProtocolVersion:
		return true
	}
	return false
}
