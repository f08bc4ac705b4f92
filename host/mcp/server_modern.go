package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The server role's stateless era (2026-07-28). A request whose _meta
// names a protocol version carries everything the server needs to know of
// its client, so it is served on its own: no initialize, capabilities
// from its own _meta, logs only when it asked for them, and no request to
// the client (a handler returns *InputRequiredError instead, MRTR). Any
// session, stdio or HTTP, may carry such requests beside legacy ones.

// removedMethods are legacy methods 2026-07-28 dropped: a modern request
// for one gets method not found.
var removedMethods = []string{MethodInitialize, MethodPing, MethodLoggingSetLevel, MethodResourcesSubscribe, MethodResourcesUnsubscribe}

// cacheable are the methods whose results carry ttlMs and cacheScope.
var cacheable = []string{MethodToolsList, MethodPromptsList, MethodResourcesList, MethodResourcesTemplatesList, MethodResourcesRead}

// ParamHeaderConn is implemented by conns that carry requests with HTTP
// headers (streamable HTTP): ParamHeaders returns the Mcp-Param-* headers
// of the modern request id, by lower-case name without the prefix and
// with their values decoded, and ok false when the request came without
// headers (stdio, a legacy POST) and there is nothing to check.
type ParamHeaderConn interface {
	ParamHeaders(id json.RawMessage) (h map[string]string, ok bool)
}

// serveModern checks a modern request's _meta, then serves it with its
// metadata (and, on a retry, its inputResponses) in ctx.
func (ss *ServerSession) serveModern(ctx context.Context, method string, params json.RawMessage, m *RequestMeta, perr error) (any, error) {
	if perr != nil {
		return nil, InvalidParams("invalid _meta: %v", perr)
	}
	if Member(Member(params, "_meta"), MetaClientCapabilities) == nil {
		return nil, InvalidParams("_meta has no %q: a request of %s carries the client's capabilities (an empty object for none)", MetaClientCapabilities, m.ProtocolVersion)
	}
	if !IsModern(m.ProtocolVersion) {
		return nil, UnsupportedProtocolVersion(m.ProtocolVersion, ss.srv.versions())
	}
	if slices.Contains(removedMethods, method) {
		return nil, &RPCError{Code: CodeMethodNotFound, Message: fmt.Sprintf("Method not found: %s (removed in %s)", method, m.ProtocolVersion)}
	}
	ctx = WithRequestMeta(ctx, m)
	switch method {
	case MethodServerDiscover:
		return ss.discover(), nil
	case MethodSubscriptionsListen:
		return ss.listen(ctx, params)
	case MethodTasksGet, MethodTasksUpdate, MethodTasksCancel:
		if !DeclaresTasks(m.Capabilities) {
			return nil, TasksRequired(method + " is the tasks extension's")
		}
		return ss.srv.serveTask(method, params)
	case MethodTasksResult, MethodTasksList:
		return nil, &RPCError{Code: CodeMethodNotFound, Message: fmt.Sprintf("Method not found: %s (the tasks extension has none: tasks/get inlines the result, and tasks are not listed)", method)}
	}
	var a *asked
	if AcceptsInputRequired(method) {
		in, err := parseInput(params)
		if err != nil {
			return nil, err
		}
		if in != nil {
			ctx = WithInput(ctx, in)
		}
		if ctx, a, err = ss.srv.startAsking(ctx, method, params, in); err != nil {
			return nil, err
		}
	}
	res, err := ss.handle(ctx, method, params)
	var ir *InputRequiredError
	if err != nil && errors.As(err, &ir) {
		return answerInputRequired(method, m, ir)
	}
	if a != nil {
		// The handler asked what this round has no answer to (server_ask.go):
		// that is the answer, whatever it made of the missing one.
		asked, aerr := a.result(ss.srv, method, params)
		if aerr != nil {
			return nil, aerr
		}
		if asked != nil {
			return answerInputRequired(method, m, asked)
		}
	}
	if err != nil {
		return nil, err
	}
	extra := []field{{"resultType", `"` + ResultComplete + `"`}}
	if slices.Contains(cacheable, method) {
		extra = append(extra, ss.srv.cacheFields()...)
	}
	return withFields(res, extra)
}

// answerInputRequired checks a handler's InputRequiredResult and that the
// request declared every capability its input requests need.
func answerInputRequired(method string, m *RequestMeta, ir *InputRequiredError) (any, error) {
	if ir.Result == nil || !AcceptsInputRequired(method) {
		return nil, &RPCError{Code: CodeInternalError, Message: "the server's handler asked for input on " + method + ", which cannot return input_required"}
	}
	r := *ir.Result
	r.ResultType = ResultInputRequired
	if err := r.Check(); err != nil {
		return nil, &RPCError{Code: CodeInternalError, Message: "the server's handler returned an invalid input_required result: " + err.Error()}
	}
	var need ClientCapabilities
	var names []string
	for _, q := range r.InputRequests {
		switch {
		case q.Method == MethodElicitationCreate && m.Capabilities.Elicitation == nil:
			need.Elicitation, names = &ElicitationCapability{}, append(names, "elicitation")
		case q.Method == MethodSamplingCreateMessage && m.Capabilities.Sampling == nil:
			need.Sampling, names = &SamplingCapability{}, append(names, "sampling")
		case q.Method == MethodRootsList && m.Capabilities.Roots == nil:
			need.Roots, names = &RootsCapability{}, append(names, "roots")
		}
	}
	if len(names) > 0 {
		slices.Sort(names)
		names = slices.Compact(names)
		return nil, MissingRequiredCapability(need, fmt.Sprintf("this %s needs %s, which the request's _meta did not declare in %q", method, strings.Join(names, " and "), MetaClientCapabilities))
	}
	return &r, nil
}

// parseInput reads a retry's inputResponses and requestState; nil when
// the request is not a retry. Each response must be an object (every
// result a client can send back is one).
func parseInput(params json.RawMessage) (*InputParams, error) {
	rawResp, rawState := Member(params, "inputResponses"), Member(params, "requestState")
	if rawResp == nil && rawState == nil {
		return nil, nil
	}
	in := &InputParams{}
	if rawResp != nil {
		var resp map[string]json.RawMessage
		if err := json.Unmarshal(rawResp, &resp); err != nil || resp == nil {
			return nil, InvalidParams("inputResponses must be an object mapping the keys of inputRequests to the client's results")
		}
		for k, v := range resp {
			if v = bytes.TrimSpace(v); len(v) == 0 || v[0] != '{' {
				return nil, InvalidParams("inputResponses[%q] must be an object (the result of the input request it answers)", k)
			}
		}
		in.InputResponses = resp
	}
	if rawState != nil {
		if err := json.Unmarshal(rawState, &in.RequestState); err != nil {
			return nil, InvalidParams("requestState must be the string the server handed out, echoed unchanged")
		}
	}
	return in, nil
}

// directAsk refuses a request to the client (sampling, elicitation,
// roots) from a modern request's handler, or on a session that never
// initialized: nobody could answer it; MRTR replaces it.
func (ss *ServerSession) directAsk(ctx context.Context) error {
	ss.mu.Lock()
	legacy := ss.init != nil
	ss.mu.Unlock()
	if _, modern := RequestMetaOf(ctx); modern || !legacy {
		return &NotSupportedError{"a request to the client while serving a stateless (2026-07-28) request; return an *mcp.InputRequiredError instead"}
	}
	return nil
}

// resourceNotFound is -32602 with the uri for a modern request (SEP-2164),
// -32002 as before for a legacy one.
func resourceNotFound(ctx context.Context, uri string) *RPCError {
	if _, modern := RequestMetaOf(ctx); modern {
		data, _ := json.Marshal(map[string]string{"uri": uri})
		return &RPCError{Code: CodeInvalidParams, Message: "Resource not found: " + uri, Data: data}
	}
	return &RPCError{Code: -32002, Message: "resource not found: " + uri}
}

func (s *Server) cacheFields() []field {
	ttl := max(s.opts.CacheTTL, 0)
	return []field{{"ttlMs", strconv.FormatInt(ttl.Milliseconds(), 10)}, {"cacheScope", `"` + CacheScopePrivate + `"`}}
}

// versions is what the server speaks, modern first.
func (s *Server) versions() []string {
	if s.opts.ModernOnly {
		return ModernVersions
	}
	return AllVersions
}

func (ss *ServerSession) discover() *DiscoverResult {
	s := ss.srv
	info, _ := json.Marshal(s.info)
	ttl := max(s.opts.CacheTTL, 0)
	return &DiscoverResult{
		ResultType:        ResultComplete,
		SupportedVersions: s.versions(),
		Capabilities:      ss.modernCapabilities(),
		Instructions:      s.opts.Instructions,
		TTLMs:             ttl.Milliseconds(),
		CacheScope:        CacheScopePrivate,
		Meta:              Meta{MetaServerInfo: info},
	}
}

// modernCapabilities are the session's capabilities with the extensions a
// modern client may use: tasks (server_tasks.go).
func (ss *ServerSession) modernCapabilities() ServerCapabilities {
	caps := ss.capabilities()
	caps.Extensions = map[string]json.RawMessage{ExtensionTasks: json.RawMessage(`{}`)}
	return caps
}

// field is a top-level member withFields adds: its key and JSON value.
type field struct{ key, value string }

// withFields marshals res and adds the fields it does not already have.
func withFields(res any, fields []field) (json.RawMessage, error) {
	b, err := json.Marshal(res)
	if err != nil {
		return nil, err
	}
	b = bytes.TrimSpace(b)
	if len(b) < 2 || b[0] != '{' {
		return b, nil
	}
	out := make([]byte, 0, len(b)+64)
	out = append(out, '{')
	for _, f := range fields {
		if Member(b, f.key) != nil {
			continue
		}
		out = strconv.AppendQuote(out, f.key)
		out = append(out, ':')
		out = append(out, f.value...)
		out = append(out, ',')
	}
	if rest := bytes.TrimSpace(b[1:]); len(rest) > 0 && rest[0] == '}' {
		out = bytes.TrimSuffix(out, []byte(","))
	}
	return append(out, b[1:]...), nil
}

// listener is one open subscriptions/listen stream.
type listener struct {
	ss     *ServerSession
	ctx    context.Context // the listen request's: what is sent with it goes on its stream
	id     json.RawMessage // the request's id, which is the subscription's
	filter SubscriptionFilter
	done   chan struct{} // closed when the server ends the stream
	ended  chan struct{} // closed when the listen request has returned
}

func (l *listener) wants(method, uri string) bool {
	switch method {
	case NotificationToolsListChanged:
		return l.filter.ToolsListChanged
	case NotificationPromptsListChanged:
		return l.filter.PromptsListChanged
	case NotificationResourcesListChanged:
		return l.filter.ResourcesListChanged
	case NotificationResourceUpdated:
		return slices.Contains(l.filter.ResourceSubscriptions, uri)
	}
	return false
}

// listen serves subscriptions/listen: it acknowledges the filter, then
// holds the request open, sending what the client opted in to (each
// notification names the subscription in _meta), until the client cancels
// it (closes its stream, or notifications/cancelled on stdio), the session
// ends, or the server ends it (EndSubscriptions), when it answers with a
// complete result.
func (ss *ServerSession) listen(ctx context.Context, params json.RawMessage) (any, error) {
	var p SubscriptionsListenParams
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, InvalidParams("subscriptions/listen: %v", err)
	}
	id := RelatedRequest(ctx)
	if id == nil {
		return nil, &RPCError{Code: CodeInternalError, Message: "subscriptions/listen: the request has no id"}
	}
	l := &listener{ss: ss, ctx: ctx, id: slices.Clone(id), filter: p.Notifications, done: make(chan struct{}), ended: make(chan struct{})}
	defer close(l.ended)
	s := ss.srv
	s.mu.Lock()
	s.listens[l] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.listens, l)
		s.mu.Unlock()
	}()
	ack := struct {
		Meta          Meta               `json:"_meta"`
		Notifications SubscriptionFilter `json:"notifications"`
	}{Meta{MetaSubscriptionID: l.id}, p.Notifications}
	if err := ss.peer.Notify(ctx, NotificationSubscriptionsAcked, ack); err != nil {
		return nil, err
	}
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-l.done:
		// The server tears the stream down: notifications/cancelled
		// naming it (the only use a server has for that notification),
		// then the complete result of a graceful end.
		cancelled := map[string]any{"requestId": l.id, "reason": "the server ended the subscription"}
		if err := ss.peer.Notify(ctx, NotificationCancelled, cancelled); err != nil {
			return nil, err
		}
		return withFields(map[string]any{"_meta": Meta{MetaSubscriptionID: l.id}}, []field{{"resultType", `"` + ResultComplete + `"`}})
	}
}

// notifyListens sends method (for resources/updated, about uri) to every
// listen stream that opted in to it.
func (s *Server) notifyListens(method, uri string) {
	s.mu.RLock()
	var to []*listener
	for l := range s.listens {
		if l.wants(method, uri) {
			to = append(to, l)
		}
	}
	s.mu.RUnlock()
	for _, l := range to {
		params := map[string]any{"_meta": Meta{MetaSubscriptionID: l.id}}
		if uri != "" {
			params["uri"] = uri
		}
		ctx, cancel := context.WithTimeout(l.ctx, time.Second)
		_ = l.ss.peer.Notify(ctx, method, params)
		cancel()
	}
}

// EndSubscriptions ends every open subscriptions/listen stream, each with
// notifications/cancelled naming it and its complete result (graceful
// closure), as before a shutdown.
func (s *Server) EndSubscriptions() { s.endListens(nil, 0) }

// endListens ends the listen streams of ss (all, for nil) and waits up to
// wait for them to have said so.
func (s *Server) endListens(ss *ServerSession, wait time.Duration) {
	s.mu.Lock()
	var ended []chan struct{}
	for l := range s.listens {
		if ss == nil || l.ss == ss {
			close(l.done)
			delete(s.listens, l)
			ended = append(ended, l.ended)
		}
	}
	s.mu.Unlock()
	if wait <= 0 {
		return
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	for _, e := range ended {
		select {
		case <-e:
		case <-t.C:
			return
		}
	}
}

// toolSchema is the input schema of a registered tool, nil if none.
func (s *Server) toolSchema(name string) json.RawMessage {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if i := slices.IndexFunc(s.tools, func(x serverTool) bool { return x.tool.Name == name }); i >= 0 {
		return s.tools[i].tool.InputSchema
	}
	return nil
}

// checkParamHeaders compares a modern tools/call's Mcp-Param-* headers
// (when its conn has them) with the arguments the tool's schema mirrors
// into them (x-mcp-header): a value in the body needs its header, equal to
// it; a header needs its value.
func (ss *ServerSession) checkParamHeaders(ctx context.Context, schema, args json.RawMessage) error {
	return CheckParamHeaders(ctx, ss.peer.Conn(), schema, args)
}

// CheckParamHeaders is the server's check of a modern tools/call's
// Mcp-Param-* headers, which conn carries when it is streamable HTTP
// (ParamHeaderConn), against the tool's input schema and the call's
// arguments: -32020 (HeaderMismatch) for a missing, extra or different
// header. A legacy request, a conn without headers or a schema with no
// x-mcp-header passes. The gateway runs it against the tools it exposes.
func CheckParamHeaders(ctx context.Context, conn Conn, schema, args json.RawMessage) error {
	if _, modern := RequestMetaOf(ctx); !modern || schema == nil {
		return nil
	}
	pc, ok := conn.(ParamHeaderConn)
	if !ok {
		return nil
	}
	hdrs, ok := pc.ParamHeaders(RelatedRequest(ctx))
	if !ok {
		return nil
	}
	anns, lower, err := schemaAnnotations(schema)
	if err != nil {
		return nil // an invalid annotation: a client drops the tool; the server does not hold the call to it
	}
	for i, a := range anns {
		got, sent := hdrs[lower[i]]
		v := valueAt(args, a.Path)
		if v == nil || string(v) == "null" {
			if sent {
				return HeaderMismatch("Mcp-Param-%s is set but the arguments have no %s", a.Name, strings.Join(a.Path, "."))
			}
			continue
		}
		if !sent {
			return HeaderMismatch("Mcp-Param-%s is missing; the arguments set %s, which the tool mirrors into it", a.Name, strings.Join(a.Path, "."))
		}
		if !headerMatches(got, v) {
			return HeaderMismatch("Mcp-Param-%s is %q, which does not match the arguments' %s", a.Name, got, strings.Join(a.Path, "."))
		}
	}
	return nil
}

// annCache keeps the x-mcp-header annotations of the schemas
// CheckParamHeaders saw, by the schema's bytes: a server's tools change
// seldom, and decoding the schema was most of what the check cost (about
// 70% of it, BenchmarkHeaderCheck in internal/transport/httpserver). It
// holds at most maxAnnSchemas schemas of up to maxAnnSchema bytes, and
// starts again when full: a server whose tools keep changing costs a
// decode now and then, never memory.
var annCache struct {
	m sync.Map // string(schema) -> annEntry
	n atomic.Int64
}

type annEntry struct {
	anns  []HeaderAnnotation // shared: read only
	lower []string           // the names in lower case, as ParamHeaders has them
	err   error
}

const (
	maxAnnSchemas = 1024
	maxAnnSchema  = 16 << 10
)

// schemaAnnotations is HeaderAnnotations through annCache, with the
// names in lower case.
func schemaAnnotations(schema json.RawMessage) ([]HeaderAnnotation, []string, error) {
	if !bytes.Contains(schema, []byte("x-mcp-header")) {
		return nil, nil, nil // the common case: nothing to decode, nothing to keep
	}
	if e, ok := annCache.m.Load(string(schema)); ok {
		e := e.(annEntry)
		return e.anns, e.lower, e.err
	}
	e := annEntry{}
	e.anns, e.err = HeaderAnnotations(schema)
	for _, a := range e.anns {
		e.lower = append(e.lower, strings.ToLower(a.Name))
	}
	if len(schema) <= maxAnnSchema {
		if annCache.n.Add(1) > maxAnnSchemas {
			annCache.m.Clear()
			annCache.n.Store(1)
		}
		annCache.m.Store(string(schema), e)
	}
	return e.anns, e.lower, e.err
}

func valueAt(obj json.RawMessage, path []string) json.RawMessage {
	for _, k := range path {
		if obj = Member(obj, k); obj == nil {
			return nil
		}
	}
	return obj
}

// headerMatches compares a decoded header value with a JSON primitive:
// strings as they are, booleans as true/false, numbers numerically.
func headerMatches(h string, v json.RawMessage) bool {
	v = bytes.TrimSpace(v)
	switch {
	case len(v) > 1 && v[0] == '"' && v[len(v)-1] == '"' && bytes.IndexByte(v, '\\') < 0:
		return string(v[1:len(v)-1]) == h // no escapes: the bytes are the string
	case len(v) > 0 && v[0] == '"':
		var s string
		return json.Unmarshal(v, &s) == nil && s == h
	case string(v) == "true" || string(v) == "false":
		return string(v) == h
	}
	want, err1 := strconv.ParseFloat(string(v), 64)
	got, err2 := strconv.ParseFloat(h, 64)
	return err1 == nil && err2 == nil && !math.IsNaN(got) && want == got
}
