package gateway

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/engine"
	"github.com/nexus-mcp/nexus/internal/policy"
	"github.com/nexus-mcp/nexus/internal/wire"
)

// Modern requests (MCP 2026-07-28): each carries its version, client
// info, capabilities and log level in params._meta, and is served on its
// own, with no initialize (see the package doc).

// removed are the methods the stateless revision dropped, with what a
// modern client uses instead.
var removed = map[string]string{
	mcp.MethodPing:                 "ping is not part of MCP 2026-07-28 (a request's answer shows the server is there)",
	mcp.MethodLoggingSetLevel:      "logging/setLevel is not part of MCP 2026-07-28: ask for a request's logs in its _meta[\"" + mcp.MetaLogLevel + "\"]",
	mcp.MethodResourcesSubscribe:   "resources/subscribe is not part of MCP 2026-07-28: open subscriptions/listen with notifications.resourceSubscriptions",
	mcp.MethodResourcesUnsubscribe: "resources/unsubscribe is not part of MCP 2026-07-28: close the subscriptions/listen stream",
	mcp.MethodInitialize:           "initialize is not part of MCP 2026-07-28: send requests with their _meta (server/discover says what Nexus speaks)",
	methodTasksResult:              "tasks/result is not part of MCP 2026-07-28 nor of its tasks extension (" + mcp.ExtensionTasks + "): tasks/get inlines a task's result",
	methodTasksList:                "tasks/list is not part of MCP 2026-07-28 nor of its tasks extension (" + mcp.ExtensionTasks + "): tasks are not listed; keep the taskId a call answered with",
}

// modernRequest serves a request that is not part of an initialized
// session: one with the stateless revision's _meta, or else the error
// that says what is missing.
func (s *session) modernRequest(ctx context.Context, method string, params json.RawMessage) (any, error) {
	f := scan(params)
	meta, modern, err := s.requestMeta(f.meta)
	if err != nil {
		return nil, mcp.InvalidParams("%s: %v", method, err)
	}
	if !modern {
		if s.modernOnly {
			return nil, &mcp.RPCError{Code: mcp.CodeInvalidRequest, Message: method + ": an MCP 2026-07-28 request must carry its version in params._meta[\"" + mcp.MetaProtocolVersion + "\"]"}
		}
		return nil, &mcp.RPCError{Code: mcp.CodeInvalidRequest, Message: "the session is not initialized: send initialize first (" + method + " came before it), " +
			"or, for MCP 2026-07-28, carry the version in params._meta[\"" + mcp.MetaProtocolVersion + "\"]"}
	}
	if !mcp.IsModern(meta.ProtocolVersion) {
		return nil, mcp.UnsupportedProtocolVersion(meta.ProtocolVersion, mcp.AllVersions)
	}
	if why, ok := removed[method]; ok {
		return nil, &mcp.RPCError{Code: mcp.CodeMethodNotFound, Message: why}
	}
	in, err := inputOf(method, f)
	if err != nil {
		return nil, err
	}
	ctx = withModern(ctx, meta, in)
	switch method {
	case mcp.MethodServerDiscover:
		return s.discover(), nil
	case mcp.MethodToolsList:
		return completed(s.tracedList(ctx, method, params, s.listTools))
	case mcp.MethodResourcesList:
		return completed(s.tracedList(ctx, method, params, s.listResources))
	case mcp.MethodResourcesTemplatesList:
		return completed(s.tracedList(ctx, method, params, s.listTemplates))
	case mcp.MethodPromptsList:
		return completed(s.tracedList(ctx, method, params, s.listPrompts))
	case mcp.MethodToolsCall:
		return s.modernCall(ctx, params, meta)
	case mcp.MethodResourcesRead:
		return s.modernRead(ctx, params, meta)
	case mcp.MethodPromptsGet:
		return s.modernPrompt(ctx, params, meta)
	case mcp.MethodComplete:
		res, err := s.complete(ctx, params)
		return completed(res, nil, err)
	case mcp.MethodSubscriptionsListen:
		return s.listen(ctx, params)
	case methodTasksGet, mcp.MethodTasksUpdate, methodTasksCancel:
		return s.modernTask(method, params, meta)
	}
	return nil, mcp.MethodNotFound(method)
}

// cachedMeta is the last _meta a session parsed: a client sends the same
// bytes on every request, and decoding them is most of what a modern
// request costs beyond a legacy one.
type cachedMeta struct {
	raw  []byte
	meta *mcp.RequestMeta // shared by the requests that sent raw: read only
}

// maxCachedMeta bounds the _meta a session keeps.
const maxCachedMeta = 4 << 10

// requestMeta decodes a request's _meta (raw; nil: there is none, a
// legacy request). Only _meta is decoded: the arguments are the
// upstream's.
func (s *session) requestMeta(raw json.RawMessage) (*mcp.RequestMeta, bool, error) {
	if raw == nil {
		return nil, false, nil
	}
	s.mu.Lock()
	c := s.lastMeta
	s.mu.Unlock()
	if c != nil && bytes.Equal(c.raw, raw) {
		return c.meta, true, nil
	}
	meta, modern, err := mcp.ParseRequestMeta(slices.Concat([]byte(`{"_meta":`), raw, []byte(`}`)))
	if err == nil && modern && len(raw) <= maxCachedMeta {
		s.mu.Lock()
		s.lastMeta = &cachedMeta{raw: slices.Clone(raw), meta: &meta}
		s.mu.Unlock()
	}
	return &meta, modern, err
}

// fields are the members of a request's params the gateway reads to
// serve it as modern.
type fields struct{ meta, inputResponses, requestState json.RawMessage }

// scan finds fields in one pass over params, which the Peer validated:
// a call's arguments may be megabytes, and are not decoded here.
func scan(params json.RawMessage) (f fields) {
	i := skipWS(params, 0)
	if i >= len(params) || params[i] != '{' {
		return f
	}
	wire.ValidMembers(params, func(k, v []byte) error {
		switch {
		case wire.KeyIs(k, "_meta"):
			f.meta = v
		case wire.KeyIs(k, "inputResponses"):
			f.inputResponses = v
		case wire.KeyIs(k, "requestState"):
			f.requestState = v
		}
		return nil
	})
	return f
}

// inputOf is a retry's inputResponses and requestState (nil for a first
// attempt); only the requests that may be answered with input_required
// take them.
func inputOf(method string, f fields) (*mcp.InputParams, error) {
	if (f.inputResponses == nil && f.requestState == nil) || method == mcp.MethodTasksUpdate {
		return nil, nil // tasks/update's inputResponses are its own (tasks_modern.go)
	}
	if !mcp.AcceptsInputRequired(method) {
		return nil, mcp.InvalidParams("%s: inputResponses and requestState answer an input_required result, which only tools/call, resources/read and prompts/get get", method)
	}
	var in mcp.InputParams
	if f.inputResponses != nil && string(f.inputResponses) != "null" {
		// Split, not decoded: the Peer validated params, and each answer
		// goes on as it came (checkAnswer reads it once).
		if f.inputResponses[0] != '{' {
			return nil, mcp.InvalidParams("%s: inputResponses must be an object of results by key", method)
		}
		in.InputResponses = mcp.InputResponses{}
		err := wire.ValidMembers(f.inputResponses, func(k, v []byte) error {
			key, err := wire.Unquote(k)
			in.InputResponses[key] = bytes.Clone(v)
			return err
		})
		if err != nil {
			return nil, mcp.InvalidParams("%s: inputResponses must be an object of results by key: %v", method, err)
		}
	}
	if f.requestState != nil && string(f.requestState) != "null" {
		s, err := wire.Unquote(f.requestState)
		if err != nil {
			return nil, mcp.InvalidParams("%s: requestState must be the string it was handed: %v", method, err)
		}
		in.RequestState = s
	}
	return &in, nil
}

// modernCtx is a modern request's context: the request's own, with the
// values the host reads (mcp.RequestMetaOf, mcp.InputOf,
// engine.AnswersInput) looked up first in vals. It keeps the request
// context's AfterFunc, as ctxval does: context.WithValue would hide it
// and cost every context derived from the request a goroutine.
type modernCtx struct {
	context.Context
	vals context.Context // values only, over context.Background
}

func withModern(ctx context.Context, meta *mcp.RequestMeta, in *mcp.InputParams) context.Context {
	vals := engine.WithAnswersInput(mcp.WithRequestMeta(context.Background(), meta))
	if in != nil {
		vals = mcp.WithInput(vals, in)
	}
	return &modernCtx{ctx, vals}
}

func (c *modernCtx) Value(key any) any {
	if v := c.vals.Value(key); v != nil {
		return v
	}
	return c.Context.Value(key)
}

func (c *modernCtx) AfterFunc(f func()) (stop func() bool) {
	if a, ok := c.Context.(interface{ AfterFunc(func()) func() bool }); ok {
		return a.AfterFunc(f)
	}
	return context.AfterFunc(c.Context, f)
}

// modernCaps are the capabilities the gateway serves modern clients:
// its lists change (subscriptions/listen tells), resources can be
// watched, logs come per request, and the tasks extension
// (tasks_modern.go) replaces 2025-11-25 tasks.
var modernCaps = mcp.ServerCapabilities{
	Tools:       &mcp.ListChangedCapability{ListChanged: true},
	Resources:   &mcp.ResourcesCapability{Subscribe: true, ListChanged: true},
	Prompts:     &mcp.ListChangedCapability{ListChanged: true},
	Logging:     &struct{}{},
	Completions: &struct{}{},
	Extensions:  map[string]json.RawMessage{mcp.ExtensionTasks: json.RawMessage(`{}`)},
}

// discover answers server/discover. It is the same for every agent, so
// any cache may share it.
func (s *session) discover() *mcp.DiscoverResult {
	info, _ := json.Marshal(mcp.Implementation{Name: "nexus", Title: "Nexus MCP gateway", Version: s.g.opts.Version})
	return &mcp.DiscoverResult{
		ResultType:        mcp.ResultComplete,
		SupportedVersions: mcp.AllVersions,
		Capabilities:      modernCaps,
		Instructions:      s.g.opts.Instructions,
		TTLMs:             s.g.opts.CacheTTL.Milliseconds(),
		CacheScope:        mcp.CacheScopePublic,
		Meta:              mcp.Meta{mcp.MetaServerInfo: info},
	}
}

// ---- results ----------------------------------------------------------------

// completed is a result as a modern client gets it: with resultType
// "complete" and, for a cacheable one (hint not nil), ttlMs and
// cacheScope, replacing any the upstream gave.
func completed(res any, hint *mcp.CacheHint, err error) (any, error) {
	if err != nil {
		return nil, err
	}
	var raw []byte
	switch r := res.(type) {
	case *json.RawMessage:
		raw = *r
	case json.RawMessage:
		raw = r
	default:
		if raw, err = json.Marshal(res); err != nil {
			return nil, err
		}
	}
	i := skipWS(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return nil, &mcp.RPCError{Code: mcp.CodeInternalError, Message: "the result is not a JSON object, so it cannot be answered as MCP 2026-07-28"}
	}
	has := mcp.Member(raw, "resultType") != nil
	if hint == nil && has {
		return res, nil // a modern upstream's own: "complete", as input_required is taken first
	}
	if has || (hint != nil && (mcp.Member(raw, "ttlMs") != nil || mcp.Member(raw, "cacheScope") != nil)) {
		// A modern upstream's fields: the gateway's replace them.
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, err
		}
		delete(m, "resultType")
		delete(m, "ttlMs")
		delete(m, "cacheScope")
		if raw, err = json.Marshal(m); err != nil {
			return nil, err
		}
		i = 0
	}
	// Spliced in front of the members: the result's bytes are not
	// decoded again (a tool's result may be megabytes).
	out := make([]byte, 0, len(raw)+64)
	out = append(out, `{"resultType":"complete"`...)
	if hint != nil {
		out = append(out, `,"ttlMs":`...)
		out = strconv.AppendInt(out, max(hint.TTLMs, 0), 10)
		out = append(out, `,"cacheScope":`...)
		out = strconv.AppendQuote(out, hint.CacheScope)
	}
	rest := raw[skipWS(raw, i+1):]
	if len(rest) > 0 && rest[0] != '}' {
		out = append(out, ',')
	}
	out = append(out, rest...)
	msg := json.RawMessage(out)
	return &msg, nil
}

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// listHint is the cache hint of a list the gateway built for the agent:
// private, since it is filtered per agent whatever the servers said;
// fresh for Options.CacheTTL, or stale at once when servers were left
// out (still starting or failed), so the client lists again soon.
func (s *session) listHint(partial bool) *mcp.CacheHint {
	h := &mcp.CacheHint{TTLMs: s.g.opts.CacheTTL.Milliseconds(), CacheScope: mcp.CacheScopePrivate}
	if partial {
		h.TTLMs = 0
	}
	return h
}

// readHint is a read's cache hint: private (the read passed this agent's
// policies), fresh no longer than the server said (a server that says
// nothing promises nothing: 0) nor Options.CacheTTL.
func (s *session) readHint(raw json.RawMessage) *mcp.CacheHint {
	h := &mcp.CacheHint{CacheScope: mcp.CacheScopePrivate}
	if v := mcp.Member(raw, "ttlMs"); v != nil {
		var ttl int64
		if json.Unmarshal(v, &ttl) == nil && ttl > 0 {
			h.TTLMs = min(ttl, s.g.opts.CacheTTL.Milliseconds())
		}
	}
	return h
}

// ---- calls, reads and prompts -------------------------------------------------

// checkParamHeaders holds a modern call that came over streamable HTTP to
// the Mcp-Param-* headers its tool's schema asks for (x-mcp-header), as
// the server behind would: a header that disagrees with the body never
// reaches the chain, so policies and the upstream see one value. Only a
// conn with headers (HTTP) pays for the tool lookup, and that is the one
// tool's (toolFinder) when the upstream has it: listing every tool for
// the agent built the whole catalog on each call, which made a modern
// call cost 1.2-1.3x a legacy one (issue 41, BenchmarkModernHTTP).
func (s *session) checkParamHeaders(ctx context.Context, p mcp.CallToolParams) error {
	conn := s.peer.Conn()
	if _, ok := conn.(mcp.ParamHeaderConn); !ok {
		return nil
	}
	up := s.host()
	t, err := up.Tool(ctx, s.agent, p.Name)
	if err != nil {
		return nil // an unknown tool: the call reports it
	}
	if mcp.CheckParamHeaders(ctx, conn, t.InputSchema, p.Arguments) == nil {
		return nil
	}
	// A mismatch is said only of a tool the agent is listed (a filter
	// may hide one Tool still finds): the slow path below.
	tools, _ := up.Tools(ctx, s.agent)
	for _, t := range tools {
		if t.Name == p.Name {
			return mcp.CheckParamHeaders(ctx, conn, t.InputSchema, p.Arguments)
		}
	}
	return nil // an unknown tool: the call reports it
}

func (s *session) modernCall(ctx context.Context, params json.RawMessage, meta *mcp.RequestMeta) (any, error) {
	p, err := mcp.DecodeValidCallToolParams(params)
	if err != nil {
		return nil, mcp.InvalidParams("tools/call: %v", err)
	}
	if p.Name == "" {
		return nil, mcp.InvalidParams("tools/call: params need the tool's name")
	}
	// A 2025-11-25 `task` param is tolerated and ignored: under the tasks
	// extension the server decides what runs as a task.
	if err := s.checkParamHeaders(ctx, p); err != nil {
		return nil, err
	}
	server := s.toolServer(ctx, p.Name)
	b := bindingOf(mcp.MethodToolsCall, p.Name, p.Arguments)
	at := new(attempt)
	in := mcp.InputOf(ctx)
	if mcp.DeclaresTasks(meta.Capabilities) {
		// A retry is opened as bridged opens it: one call, decided once.
		ctx, st, err := s.retry(ctx, server, b, at)
		if err != nil {
			return s.modernAnswer(ctx, p, params, meta, at, nil, nil, err)
		}
		if st != nil { // a bridged call's, its first attempt made without the extension
			res, err, ask := s.g.br.resume(ctx, st, meta, in, mcp.MethodToolsCall, params)
			if ask != nil {
				return ask, nil
			}
			return s.modernAnswer(ctx, p, params, meta, at, nil, res, err)
		}
		return s.modernTaskCall(ctx, server, p, meta, at, params, early(in))
	}
	// The same call as a legacy client's (call): the same event to the
	// chain, the same audit record, once however many rounds of input
	// a legacy server asks (bridged).
	res, err, ask := s.bridged(ctx, server, b, meta, mcp.MethodToolsCall, params, at,
		func(cctx, nctx context.Context) (any, error) { return s.call(cctx, nctx, p, true) })
	if ask != nil {
		return ask, nil
	}
	return s.modernAnswer(ctx, p, params, meta, at, early(in), res, err)
}

// modernAnswer is what a modern call's outcome answers the agent: an
// upstream's input_required passed on (through the chain), or the result.
// at is the call's attempt (nil: a call whose retries do not come back
// through bridged). early is the answers the request brought without a
// requestState: if they answer every question, the call is retried with
// them at once (earlyRetry).
func (s *session) modernAnswer(ctx context.Context, p mcp.CallToolParams, params json.RawMessage, meta *mcp.RequestMeta, at *attempt, early mcp.InputResponses, res any, err error) (any, error) {
	server, _ := s.serverOf(p.Name)
	if r, ok, ierr := inputRequired(res, err); ok || ierr != nil {
		if ierr != nil {
			return nil, ierr
		}
		res, err = s.passInput(ctx, server, bindingOf(mcp.MethodToolsCall, p.Name, p.Arguments), r, meta, at)
		if err == nil {
			if rctx := earlyRetry(ctx, early, res); rctx != nil {
				return s.modernCall(rctx, params, meta)
			}
			return res, nil
		}
	}
	if text, ok := s.g.refusal(s.agent, err); ok {
		// As a refused call is: a tool result the model reads (a refused
		// input request, or a refused answer to one).
		return completed(&mcp.CallToolResult{Content: []mcp.Content{{Type: mcp.ContentText, Text: "Nexus refused this call: " + text}}, IsError: true}, nil, nil)
	}
	return completed(res, nil, err)
}

func (s *session) modernRead(ctx context.Context, params json.RawMessage, meta *mcp.RequestMeta) (any, error) {
	uri, err := uriParam(mcp.MethodResourcesRead, params)
	if err != nil {
		return nil, err
	}
	server, err := s.route(ctx, uri)
	if err != nil {
		return nil, notFound(err, uri)
	}
	at := new(attempt)
	in := mcp.InputOf(ctx)
	res, err, ask := s.bridged(ctx, server, bindingOf(mcp.MethodResourcesRead, uri, nil), meta, mcp.MethodResourcesRead, params, at,
		func(cctx, _ context.Context) (any, error) { return s.read(traced(cctx, params), server, uri) })
	if ask != nil {
		return ask, nil
	}
	if r, ok, ierr := inputRequired(res, err); ok || ierr != nil {
		if ierr != nil {
			return nil, ierr
		}
		out, err := s.passInput(ctx, server, bindingOf(mcp.MethodResourcesRead, uri, nil), r, meta, at)
		if rctx := earlyRetry(ctx, early(in), out); err == nil && rctx != nil {
			return s.modernRead(rctx, params, meta)
		}
		return out, s.refused(err)
	}
	if isRefusal(err) {
		return nil, s.refused(err)
	}
	if err != nil {
		return nil, notFound(s.g.rpcErrorOf(s.agent, err), uri)
	}
	var hint *mcp.CacheHint
	if raw, ok := res.(*json.RawMessage); ok {
		hint = s.readHint(*raw)
	} else {
		hint = s.readHint(nil)
	}
	if in != nil {
		hint.TTLMs = 0 // a retry's result depends on its input: not to be cached
	}
	return completed(res, hint, nil)
}

func (s *session) modernPrompt(ctx context.Context, params json.RawMessage, meta *mcp.RequestMeta) (any, error) {
	ref, args, err := s.promptParams(ctx, params)
	if err != nil {
		return nil, err
	}
	h := s.host()
	at := new(attempt)
	in := mcp.InputOf(ctx)
	res, err, ask := s.bridged(ctx, ref.server, bindingOf(mcp.MethodPromptsGet, ref.name, mcp.Member(params, "arguments")), meta, mcp.MethodPromptsGet, params, at,
		func(cctx, _ context.Context) (any, error) {
			defer s.untrack(ref.server, s.track(cctx, ref.server))
			return h.GetPrompt(traced(cctx, params), s.agent, ref.server, ref.name, args)
		})
	if ask != nil {
		return ask, nil
	}
	if r, ok, ierr := inputRequired(nil, err); ok || ierr != nil {
		if ierr != nil {
			return nil, ierr
		}
		out, err := s.passInput(ctx, ref.server, bindingOf(mcp.MethodPromptsGet, ref.name, mcp.Member(params, "arguments")), r, meta, at)
		if rctx := earlyRetry(ctx, early(in), out); err == nil && rctx != nil {
			return s.modernPrompt(rctx, params, meta)
		}
		return out, s.refused(err)
	}
	if isRefusal(err) {
		return nil, s.refused(err)
	}
	if err != nil {
		return nil, s.g.rpcErrorOf(s.agent, err)
	}
	return completed(res, nil, nil)
}

// toolServer is the server of an exposed tool name: what a server asks
// during the call is matched to it by its server (bridge.go).
func (s *session) toolServer(ctx context.Context, name string) string {
	if server, ok := s.serverOf(name); ok {
		return server
	}
	// The one tool, from the cached catalog (a bare name, say): listing
	// every tool built the agent's catalog on each call.
	if t, err := s.host().Tool(ctx, s.agent, name); err == nil {
		return t.Server
	}
	return "" // an unknown tool: the call reports it
}

// attempt is a modern request's logical call as its attempts carry it
// (in the sealed requestState): its id, which names it in the audit
// log, and what the host needs to decide it once (engine.Attempt).
type attempt struct {
	id [16]byte
	engine.Attempt
}

func (a *attempt) callID() string { return hex.EncodeToString(a.id[:]) }

// bridged runs a modern request's upstream call through the bridge
// (bridge.go): a retry with a requestState the bridge sealed resumes its
// call; anything else starts one. ask is the input_required answer when
// the server asked the client something. at is the call's attempt: a
// first one gets a new id; a retry of a modern upstream's call gets its
// first attempt's id and params, and its answers pass the chain first.
func (s *session) bridged(ctx context.Context, server string, b binding, meta *mcp.RequestMeta, method string, params json.RawMessage, at *attempt,
	run func(ctx, nctx context.Context) (any, error)) (res any, err error, ask *mcp.InputRequiredResult) {
	in := mcp.InputOf(ctx)
	ctx, st, err := s.retry(ctx, server, b, at)
	if err != nil {
		return nil, err, nil
	}
	if st != nil {
		return s.g.br.resume(ctx, st, meta, in, method, params)
	}
	return s.g.br.start(ctx, s, server, b, meta, early(in), at, params, run)
}

// early is the answers a request brought without a requestState (nil:
// none). The upstream never gets them as they came (retry drops them):
// the bridge may give one to a legacy server's question of the call
// whose key it names (take), as the answer of that server request,
// which passes the chain as any does, the question first; a modern
// upstream's questions, once the chain has judged them, may be answered
// by them in a retry the gateway makes at once (earlyRetry).
func early(in *mcp.InputParams) mcp.InputResponses {
	if in == nil || in.RequestState != "" {
		return nil
	}
	return in.InputResponses
}

// earlyRetry is the context of the retry that a request's early answers
// make of out, the input_required result passInput handed back (its
// questions judged by the chain, its state sealed), when they answer
// every question in it: the call goes on at once as the agent's retry
// with them would (their answers pass the chain against the questions,
// guardAnswers; the attempt is audited as a retry), and keys it did not
// ask are ignored, as a server ignores what it does not recognize
// (patterns/mrtr). nil: they do not, and the agent gets out. The retry
// carries a state, so it makes no retry of its own.
func earlyRetry(ctx context.Context, early mcp.InputResponses, out any) context.Context {
	r, ok := out.(*mcp.InputRequiredResult)
	if !ok || len(early) == 0 || r.RequestState == "" || len(r.InputRequests) == 0 {
		return nil
	}
	in := &mcp.InputParams{RequestState: r.RequestState, InputResponses: make(mcp.InputResponses, len(r.InputRequests))}
	for k := range r.InputRequests {
		raw, ok := early[k]
		if !ok {
			return nil
		}
		in.InputResponses[k] = raw
	}
	return mcp.WithInput(ctx, in)
}

// retry opens the requestState a retry brings, held to this agent and
// request b first. A first attempt's ctx carries no input for the
// upstream: answers it brought without a state are the caller's to use
// (early), never sent as they came. A bridged
// call's state is returned, for the bridge to resume its call. A modern
// upstream's is applied: its answers pass the chain (guardAnswers), ctx
// carries the input the upstream gets (its own requestState, as it gave
// it: any replica may, the upstream keeps no session), and at the
// call's id and params, decided on the first attempt.
func (s *session) retry(ctx context.Context, server string, b binding, at *attempt) (context.Context, *state, error) {
	in := mcp.InputOf(ctx)
	switch {
	case in == nil:
		return ctx, nil, nil
	case in.RequestState == "":
		// Answers without a state (a client may send them on a first
		// request: the conformance suite's ignore-extra-params does)
		// answer no question the chain judged, so they do not go up as
		// they came: a modern server might take them (one that asks
		// "confirm?" needs no state to read the answer), and the agent
		// would have answered what the chain never let it be asked, with
		// what the chain never saw. The first attempt goes up without
		// them; they may answer the questions it brings back once the
		// chain has judged those, as a retry's answers (early).
		if len(in.InputResponses) > 0 {
			s.g.log.Debug("inputResponses without a requestState are held back from the upstream; they answer only questions the chain judged first",
				"agent", s.agent, "server", server, "method", b.method, "keys", len(in.InputResponses))
		}
		return mcp.WithInput(ctx, nil), nil, nil
	case !strings.HasPrefix(in.RequestState, statePrefix):
		return ctx, nil, badState("is not one this gateway handed out")
	}
	st, err := s.g.br.seal.open(in.RequestState)
	if err == nil {
		err = st.check(s.agent, b, time.Now())
	}
	if err != nil {
		return ctx, nil, err
	}
	if !st.upstream {
		return ctx, st, nil
	}
	answers, err := s.guardAnswers(ctx, server, st, in.InputResponses)
	if err != nil {
		return ctx, nil, err
	}
	up := *in
	up.RequestState, up.InputResponses = st.inner, answers
	at.id, at.Retry = st.call, true
	if st.params != "" {
		at.Params = json.RawMessage(st.params)
	}
	return mcp.WithInput(ctx, &up), nil, nil
}

// guardAnswers runs a retry's answers to a modern upstream's questions
// (those st carries) through the chain's response half, as the answers
// to the server-initiated requests they replace would go: an answer to
// a question never asked, or not of its method's shape, is invalid
// params; one the chain refuses refuses the call. Either way nothing
// reaches the upstream.
func (s *session) guardAnswers(ctx context.Context, server string, st *state, answers mcp.InputResponses) (mcp.InputResponses, error) {
	if len(answers) == 0 {
		return answers, nil
	}
	byKey := make(map[string]*asked, len(st.asks))
	keys := make([]string, 0, len(st.asks))
	for i := range st.asks {
		a := &st.asks[i]
		byKey[a.key] = a
		keys = append(keys, fmt.Sprintf("%q", a.key))
	}
	for k, raw := range answers {
		a := byKey[k]
		if a == nil {
			return nil, mcp.InvalidParams("inputResponses[%q] answers an input request this call never asked (it asked %s); send the answers under the keys of the last inputRequests", k, strings.Join(keys, ", "))
		}
		if err := checkAnswer(a.method, raw); err != nil {
			return nil, mcp.InvalidParams("inputResponses[%q] is not a %s result: %v", k, a.method, err)
		}
	}
	g := s.host()
	ctx = engine.WithCallID(ctx, hex.EncodeToString(st.call[:]))
	out := make(mcp.InputResponses, len(answers))
	for _, a := range st.asks { // in the order asked (by key)
		raw, ok := answers[a.key]
		if !ok {
			continue
		}
		res, err := guardAnswer(ctx, g, server, a.key, mcp.InputRequest{Method: a.method, Params: a.params}, raw)
		if err != nil {
			return nil, err
		}
		out[a.key] = res
	}
	return out, nil
}

// guardAnswer runs the agent's answer (raw) to the input request q (by
// key) through the chain's response half; a refusal says which.
func guardAnswer(ctx context.Context, g *engine.Host, server, key string, q mcp.InputRequest, raw json.RawMessage) (json.RawMessage, error) {
	params := q.Params
	if len(params) == 0 {
		params = json.RawMessage(`{}`) // roots/list's: none
	}
	out, err := g.GuardAnswer(ctx, server, q.Method, params, raw)
	if err != nil {
		var de *policy.DeniedError
		if errors.As(err, &de) {
			return nil, fmt.Errorf("the answer to server %q's %s (input %q) was refused by the policy: %w", server, q.Method, key, err)
		}
		return nil, &mcp.RPCError{Code: mcp.CodeInternalError, Message: fmt.Sprintf("the answer to server %q's %s (input %q) and the policy chain failed: %s", server, q.Method, key, oneLine(err))}
	}
	return out, nil
}

// isRefusal says whether err is the chain's refusal.
func isRefusal(err error) bool {
	var de *policy.DeniedError
	return errors.As(err, &de)
}

// notFound renumbers a resource that is not found: -32002 until
// 2025-11-25 (the gateway's own, or a legacy server's), -32602 (invalid
// params) in 2026-07-28, whose data names the uri (SEP-2164: a client
// tells a missing resource from other bad params by it).
func notFound(err error, uri string) error {
	var rerr *mcp.RPCError
	if !errors.As(err, &rerr) || (rerr.Code != -32002 && rerr.Code != mcp.CodeInvalidParams) {
		return err
	}
	out := *rerr
	out.Code = mcp.CodeInvalidParams
	data := map[string]json.RawMessage{}
	if len(out.Data) > 0 && json.Unmarshal(out.Data, &data) != nil {
		return &out // data that is not an object: left as the server sent it
	}
	if _, ok := data["uri"]; !ok {
		data["uri"], _ = json.Marshal(uri)
		out.Data, _ = json.Marshal(data)
	}
	return &out
}

// ---- input required (Multi Round-Trip Requests) ----------------------------

// inputRequired finds an upstream's interim answer in what the host
// returned: *mcp.InputRequiredError (the seam, see
// engine.WithAnswersInput), or a result whose bytes (CallOptions.Wire)
// say input_required. ierr is an interim answer that cannot be passed on.
func inputRequired(res any, err error) (r *mcp.InputRequiredResult, ok bool, ierr error) {
	var ie *mcp.InputRequiredError
	if errors.As(err, &ie) && ie.Result != nil {
		return ie.Result, true, nil
	}
	raw, isRaw := res.(*json.RawMessage)
	if err != nil || !isRaw {
		return nil, false, nil
	}
	t := mcp.Member(*raw, "resultType")
	if t == nil || string(t) != `"`+mcp.ResultInputRequired+`"` {
		return nil, false, nil
	}
	r = new(mcp.InputRequiredResult)
	if err := json.Unmarshal(*raw, r); err != nil {
		return nil, false, &mcp.RPCError{Code: mcp.CodeInternalError, Message: "a server's input_required result does not decode: " + err.Error()}
	}
	return r, true, nil
}

// passInput hands an upstream's InputRequiredResult to the modern agent:
// each input request asks for something the agent declared, and passes
// the chain exactly as the server-initiated request it replaces would
// (sampling, elicitation, roots links; audited). A refused one refuses
// the request: the agent is not asked.
//
// The upstream's requestState goes to the agent sealed, bound to the
// agent and b, the request it answers (see statePrefix), with what the
// retry needs to be the same call (at: its id, the params a policy
// changed) and the questions as the agent got them, whose answers pass
// the chain on the retry (guardAnswers). at nil: the questions' answers
// come back another way (a task's tasks/update).
func (s *session) passInput(ctx context.Context, server string, b binding, r *mcp.InputRequiredResult, meta *mcp.RequestMeta, at *attempt) (any, error) {
	if err := r.Check(); err != nil {
		return nil, &mcp.RPCError{Code: mcp.CodeInternalError, Message: fmt.Sprintf("server %q answered with an invalid input_required result: %v", server, err)}
	}
	if len(r.RequestState) > maxInner {
		return nil, &mcp.RPCError{Code: mcp.CodeInternalError, Message: fmt.Sprintf("server %q answered input_required with a requestState of %d bytes, over the gateway's %d-byte limit; refused", server, len(r.RequestState), maxInner)}
	}
	g := s.host()
	keys := make([]string, 0, len(r.InputRequests))
	for k := range r.InputRequests {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := mcp.InputRequiredResult{ResultType: mcp.ResultInputRequired, Meta: r.Meta}
	if at != nil {
		// The questions are audited under the call, as its attempts are.
		ctx = engine.WithCallID(ctx, at.callID())
	}
	if len(keys) > 0 {
		out.InputRequests = make(mcp.InputRequests, len(keys))
	}
	// All asked of the agent must be what it declared, before any is
	// judged (and audited).
	for _, k := range keys {
		if err := declared(meta.Capabilities, r.InputRequests[k]); err != nil {
			return nil, err
		}
	}
	for _, k := range keys {
		q := r.InputRequests[k]
		p, err := g.GuardInput(ctx, server, q.Method, q.Params)
		if err != nil {
			var de *policy.DeniedError
			if errors.As(err, &de) {
				return nil, fmt.Errorf("server %q asked for %s (input %q) and the policy refused it: %w", server, q.Method, k, err)
			}
			return nil, &mcp.RPCError{Code: mcp.CodeInternalError, Message: fmt.Sprintf("server %q asked for %s (input %q) and the policy chain failed: %s", server, q.Method, k, oneLine(err))}
		}
		q.Params = p
		out.InputRequests[k] = q
	}
	// With at, a state goes to the agent even when the upstream gave
	// none: it carries what the retry needs to be the same call.
	if r.RequestState != "" || at != nil {
		br := s.g.br
		st := &state{upstream: true, replica: br.seal.replica, expires: time.Now().Add(br.ttl).Unix() + 1, agent: s.agent, bind: b, inner: r.RequestState}
		if at != nil {
			st.call, st.params = at.id, string(at.Params)
			for _, k := range keys {
				st.asks = append(st.asks, asked{key: k, method: out.InputRequests[k].Method, params: out.InputRequests[k].Params})
			}
			if n := st.carried(); n > maxCarried {
				return nil, &mcp.RPCError{Code: mcp.CodeInternalError, Message: fmt.Sprintf(
					"server %q asks for input whose requests come to %d bytes, over the %d bytes the gateway carries in requestState to check the answers against them; refused (ask the server's maintainers for smaller input requests)", server, n, maxCarried)}
			}
		}
		out.RequestState = br.seal.seal(st)
	}
	return &out, nil
}

// refused is a refused input request as the JSON-RPC error a read or a
// prompt gets.
func (s *session) refused(err error) error {
	if r := s.g.refusalOf(s.agent, err); r != nil {
		return r
	}
	return err
}

// declared checks that the agent's request declared the capability an
// input request needs: a server must not ask a client for more
// (patterns/mrtr), and a gateway does not pass on what the client cannot
// answer.
func declared(c mcp.ClientCapabilities, q mcp.InputRequest) error {
	var need mcp.ClientCapabilities
	switch q.Method {
	case mcp.MethodSamplingCreateMessage:
		if c.Sampling != nil {
			return nil
		}
		need.Sampling = &mcp.SamplingCapability{}
	case mcp.MethodElicitationCreate:
		url := string(mcp.Member(q.Params, "mode")) == `"url"`
		if c.Elicitation != nil && (!url || c.Elicitation.URL != nil) {
			return nil
		}
		need.Elicitation = &mcp.ElicitationCapability{Form: &struct{}{}}
		if url {
			need.Elicitation = &mcp.ElicitationCapability{URL: &struct{}{}}
		}
	case mcp.MethodRootsList:
		if c.Roots != nil {
			return nil
		}
		need.Roots = &mcp.RootsCapability{}
	}
	return mcp.MissingRequiredCapability(need, "the server asks for "+q.Method+", which this request's _meta clientCapabilities do not declare")
}
