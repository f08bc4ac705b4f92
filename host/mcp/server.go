package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

// The server role: enough MCP server for the built-in test server now and a
// gateway later. Register tools, resources, templates and prompts, then Serve
// one session per Conn. Changing what is registered while sessions run sends
// list_changed to each of them, and to the subscriptions/listen streams that
// asked for it.
//
// A session speaks both eras: requests after initialize (2025-11-25 and
// earlier), and stateless 2026-07-28 requests, each carrying its version
// and client capabilities in _meta, served without initialize
// (server_modern.go). Handlers find a modern request's metadata with
// RequestMetaOf and a retry's answers with InputOf (or
// CallToolRequest.Input), and ask the client for input by returning an
// *InputRequiredError.

// ToolHandler runs a tool call. Returning an error makes the call fail with
// a JSON-RPC error; a tool that ran and failed should return a result with
// IsError set instead.
type ToolHandler func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error)

// ResourceHandler reads a resource (for a template, uri is the expanded URI).
type ResourceHandler func(ctx context.Context, s *ServerSession, uri string) (*ReadResourceResult, error)

// PromptHandler renders a prompt with its arguments.
type PromptHandler func(ctx context.Context, s *ServerSession, args map[string]string) (*GetPromptResult, error)

// CompletionHandler answers completion/complete.
type CompletionHandler func(ctx context.Context, s *ServerSession, p *CompleteParams) (*CompleteResult, error)

// CallToolRequest is what a ToolHandler gets.
type CallToolRequest struct {
	Session   *ServerSession
	Name      string
	Arguments json.RawMessage
	// ProgressToken is the caller's token, nil if it asked for no progress.
	ProgressToken json.RawMessage
	// Meta is the request's _meta (a W3C traceparent, say).
	Meta Meta
	// Input is what the client sent back for an earlier
	// InputRequiredResult (a modern request's retry), or nil; the same as
	// InputOf(ctx).
	Input *InputParams
}

// Progress sends notifications/progress for this call when the caller asked for it.
func (r *CallToolRequest) Progress(ctx context.Context, progress, total float64, message string) error {
	if r.ProgressToken == nil {
		return nil
	}
	p := Progress{ProgressToken: r.ProgressToken, Progress: progress, Message: message}
	if total > 0 {
		p.Total = &total
	}
	return r.Session.peer.Notify(ctx, NotificationProgress, p)
}

// ServerOptions configure a Server.
type ServerOptions struct {
	Instructions string
	// PageSize for list methods; 0 means everything on one page.
	PageSize int
	Logger   hclog.Logger
	// Timeout for requests the server sends (sampling, elicitation, roots).
	Timeout     time.Duration
	MaxHandlers int
	// Completion serves completion/complete; nil leaves the capability out.
	Completion CompletionHandler
	// Logging declares the logging capability.
	Logging bool
	// CacheTTL is the ttlMs a modern client is told for lists,
	// resources/read and server/discover (default 10 s; negative: 0, do
	// not reuse). Their cacheScope is "private": what one client is
	// served need not be what another is.
	CacheTTL time.Duration
	// ModernOnly serves 2026-07-28 alone, as a server built only for the
	// stateless revision does: initialize and every other request without
	// a modern _meta get UnsupportedProtocolVersion naming the modern
	// versions, and server/discover lists only those.
	ModernOnly bool
	// TaskTTL is the ttlMs of the tasks the server runs (default 1 h):
	// a task is dropped, and its handler cancelled, once it has passed.
	TaskTTL time.Duration
	// LegacyOnly serves 2025-11-25 and earlier alone, as a server built
	// before the stateless revision does: server/discover and
	// subscriptions/listen are unknown methods, and a request's modern
	// _meta is not looked at (its handler asks the client directly).
	LegacyOnly bool
}

// Server holds what is served. It is safe for concurrent use.
type Server struct {
	info Implementation
	opts ServerOptions
	log  hclog.Logger

	mu        sync.RWMutex
	tools     []serverTool
	resources []serverResource
	templates []serverTemplate
	prompts   []serverPrompt
	sessions  map[*ServerSession]struct{}
	listens   map[*listener]struct{} // open subscriptions/listen streams

	askOnce sync.Once
	askKey  [32]byte // seals the answers a retried request carries (server_ask.go)

	tasks taskStore // the tasks extension's tasks (server_tasks.go)
}

type serverTool struct {
	tool   Tool
	h      ToolHandler
	manual bool // a task tool whose handler starts the task itself
}

type serverResource struct {
	res Resource
	h   ResourceHandler
}

type serverTemplate struct {
	tmpl ResourceTemplate
	h    ResourceHandler
}

type serverPrompt struct {
	prompt Prompt
	h      PromptHandler
}

// NewServer makes a server that introduces itself as info.
func NewServer(info Implementation, opts ServerOptions) *Server {
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	if opts.CacheTTL == 0 {
		opts.CacheTTL = 10 * time.Second
	}
	if opts.TaskTTL <= 0 {
		opts.TaskTTL = defaultTaskTTL
	}
	return &Server{info: info, opts: opts, log: opts.Logger, sessions: map[*ServerSession]struct{}{}, listens: map[*listener]struct{}{}}
}

// AddTool registers or replaces a tool. One whose Execution says
// taskSupport runs as a task for modern clients that declare the tasks
// extension (see AddTaskTool).
func (s *Server) AddTool(t Tool, h ToolHandler) { s.addTool(t, h, false) }

func (s *Server) addTool(t Tool, h ToolHandler, manual bool) {
	if t.InputSchema == nil {
		t.InputSchema = json.RawMessage(`{"type":"object"}`)
	}
	s.mu.Lock()
	i := slices.IndexFunc(s.tools, func(x serverTool) bool { return x.tool.Name == t.Name })
	if i >= 0 {
		s.tools[i] = serverTool{t, h, manual}
	} else {
		s.tools = append(s.tools, serverTool{t, h, manual})
	}
	s.mu.Unlock()
	s.broadcast(NotificationToolsListChanged)
}

// RemoveTools unregisters tools by name.
func (s *Server) RemoveTools(names ...string) {
	s.mu.Lock()
	s.tools = slices.DeleteFunc(s.tools, func(x serverTool) bool { return slices.Contains(names, x.tool.Name) })
	s.mu.Unlock()
	s.broadcast(NotificationToolsListChanged)
}

// AddResource registers or replaces a resource.
func (s *Server) AddResource(r Resource, h ResourceHandler) {
	s.mu.Lock()
	i := slices.IndexFunc(s.resources, func(x serverResource) bool { return x.res.URI == r.URI })
	if i >= 0 {
		s.resources[i] = serverResource{r, h}
	} else {
		s.resources = append(s.resources, serverResource{r, h})
	}
	s.mu.Unlock()
	s.broadcast(NotificationResourcesListChanged)
}

// AddResourceTemplate registers a URI template (RFC 6570 level 1 `{var}`).
func (s *Server) AddResourceTemplate(t ResourceTemplate, h ResourceHandler) {
	s.mu.Lock()
	s.templates = append(s.templates, serverTemplate{t, h})
	s.mu.Unlock()
	s.broadcast(NotificationResourcesListChanged)
}

// AddPrompt registers or replaces a prompt.
func (s *Server) AddPrompt(p Prompt, h PromptHandler) {
	s.mu.Lock()
	i := slices.IndexFunc(s.prompts, func(x serverPrompt) bool { return x.prompt.Name == p.Name })
	if i >= 0 {
		s.prompts[i] = serverPrompt{p, h}
	} else {
		s.prompts = append(s.prompts, serverPrompt{p, h})
	}
	s.mu.Unlock()
	s.broadcast(NotificationPromptsListChanged)
}

// ResourceUpdated sends notifications/resources/updated to every session
// subscribed to uri.
func (s *Server) ResourceUpdated(ctx context.Context, uri string) {
	for _, ss := range s.liveSessions() {
		ss.mu.Lock()
		sub := ss.subs[uri]
		ss.mu.Unlock()
		if sub {
			_ = ss.peer.Notify(ctx, NotificationResourceUpdated, map[string]string{"uri": uri})
		}
	}
	s.notifyListens(NotificationResourceUpdated, uri)
}

func (s *Server) liveSessions() []*ServerSession {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]*ServerSession, 0, len(s.sessions))
	for ss := range s.sessions {
		out = append(out, ss)
	}
	return out
}

func (s *Server) broadcast(method string) {
	s.notifyListens(method, "")
	for _, ss := range s.liveSessions() {
		if ss.initialized() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			_ = ss.peer.Notify(ctx, method, nil)
			cancel()
		}
	}
}

// Serve runs one session over conn until it ends or ctx is done.
func (s *Server) Serve(ctx context.Context, conn Conn) error {
	ss := &ServerSession{srv: s, subs: map[string]bool{}, level: -1}
	ss.peer = NewPeer(conn, PeerOptions{
		Logger:      s.log,
		Handler:     ss,
		Timeout:     s.opts.Timeout,
		MaxHandlers: s.opts.MaxHandlers,
	})
	s.mu.Lock()
	s.sessions[ss] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.sessions, ss)
		s.mu.Unlock()
	}()
	ss.peer.Start()
	select {
	case <-ss.peer.Done():
		err := ss.peer.Err()
		conn.Close()
		return err
	case <-ctx.Done():
		// The server ends the session: its listen streams are told first.
		s.endListens(ss, time.Second)
		ss.peer.Close()
		return ctx.Err()
	}
}

// ServerSession is one client connected to a Server.
type ServerSession struct {
	srv  *Server
	peer *Peer

	mu    sync.Mutex
	init  *InitializeParams
	ready bool
	subs  map[string]bool
	level int // minimum severity to send; -1: the client never set one
}

func (ss *ServerSession) initialized() bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.ready
}

// ClientInfo and ClientCapabilities are what the client sent at initialize.
func (ss *ServerSession) ClientInfo() Implementation {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.init == nil {
		return Implementation{}
	}
	return ss.init.ClientInfo
}

func (ss *ServerSession) ClientCapabilities() ClientCapabilities {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.init == nil {
		return ClientCapabilities{}
	}
	return ss.init.Capabilities
}

// Log sends notifications/message if the client's level lets it through.
//
// A modern request's logs go out only when its _meta asked for them
// (logLevel), at that level or above, on that request's own stream; a
// session that never initialized sends none outside a request.
func (ss *ServerSession) Log(ctx context.Context, level LoggingLevel, logger string, data any) error {
	ss.mu.Lock()
	min, legacy := ss.level, ss.init != nil
	ss.mu.Unlock()
	if m, ok := RequestMetaOf(ctx); ok {
		if m.LogLevel == "" {
			return nil
		}
		min = m.LogLevel.Severity()
	} else if !legacy {
		return nil
	}
	if level.Severity() < min {
		return nil
	}
	b, err := json.Marshal(data)
	if err != nil {
		return err
	}
	return ss.peer.Notify(ctx, NotificationMessage, LogMessage{Level: level, Logger: logger, Data: b})
}

// CreateMessage asks the client to sample from its model.
func (ss *ServerSession) CreateMessage(ctx context.Context, p *CreateMessageParams) (*CreateMessageResult, error) {
	var res CreateMessageResult
	if handled, err := ask(ctx, MethodSamplingCreateMessage, p, &res); handled {
		if err != nil {
			return nil, err
		}
		return &res, nil
	}
	if err := ss.directAsk(ctx); err != nil {
		return nil, err
	}
	if ss.ClientCapabilities().Sampling == nil {
		return nil, &NotSupportedError{"sampling (client side)"}
	}
	if err := ss.peer.Call(ctx, MethodSamplingCreateMessage, p, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// Elicit asks the client for input from its user.
func (ss *ServerSession) Elicit(ctx context.Context, p *ElicitParams) (*ElicitResult, error) {
	var res ElicitResult
	if handled, err := ask(ctx, MethodElicitationCreate, p, &res); handled {
		if err != nil {
			return nil, err
		}
		return &res, nil
	}
	if err := ss.directAsk(ctx); err != nil {
		return nil, err
	}
	if ss.ClientCapabilities().Elicitation == nil {
		return nil, &NotSupportedError{"elicitation (client side)"}
	}
	if err := ss.peer.Call(ctx, MethodElicitationCreate, p, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// ListRoots asks the client for its roots.
func (ss *ServerSession) ListRoots(ctx context.Context) ([]Root, error) {
	var res ListRootsResult
	if handled, err := ask(ctx, MethodRootsList, nil, &res); handled {
		if err != nil {
			return nil, err
		}
		return res.Roots, nil
	}
	if err := ss.directAsk(ctx); err != nil {
		return nil, err
	}
	if ss.ClientCapabilities().Roots == nil {
		return nil, &NotSupportedError{"roots (client side)"}
	}
	if err := ss.peer.Call(ctx, MethodRootsList, nil, &res); err != nil {
		return nil, err
	}
	return res.Roots, nil
}

// Notify sends any notification to this client.
func (ss *ServerSession) Notify(ctx context.Context, method string, params any) error {
	return ss.peer.Notify(ctx, method, params)
}

func (ss *ServerSession) capabilities() ServerCapabilities {
	s := ss.srv
	caps := ServerCapabilities{
		Tools:     &ListChangedCapability{ListChanged: true},
		Resources: &ResourcesCapability{Subscribe: true, ListChanged: true},
		Prompts:   &ListChangedCapability{ListChanged: true},
	}
	if s.opts.Logging {
		caps.Logging = &struct{}{}
	}
	if s.opts.Completion != nil {
		caps.Completions = &struct{}{}
	}
	return caps
}

// HandleRequest implements Handler. A request whose _meta names a
// protocol version is served statelessly (server_modern.go), whatever the
// session did before; any other is a legacy session's, served as ever.
func (ss *ServerSession) HandleRequest(ctx context.Context, method string, params json.RawMessage) (any, error) {
	if ss.srv.opts.LegacyOnly {
		if method == MethodServerDiscover || method == MethodSubscriptionsListen {
			return nil, MethodNotFound(method)
		}
		return ss.handle(ctx, method, params)
	}
	if m, modern, err := ParseRequestMeta(params); modern {
		return ss.serveModern(ctx, method, params, &m, err)
	}
	if ss.srv.opts.ModernOnly {
		requested := ""
		if method == MethodInitialize {
			var p InitializeParams
			_ = json.Unmarshal(params, &p)
			requested = p.ProtocolVersion
		}
		return nil, UnsupportedProtocolVersion(requested, ModernVersions)
	}
	return ss.handle(ctx, method, params)
}

// handle serves a request of either era; serveModern has checked and
// prepared a modern one (its ctx carries RequestMeta and InputParams).
func (ss *ServerSession) handle(ctx context.Context, method string, params json.RawMessage) (any, error) {
	s := ss.srv
	if method == MethodInitialize {
		var p InitializeParams
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, InvalidParams("initialize: %v", err)
		}
		version := p.ProtocolVersion
		if !slices.Contains(SupportedVersions, version) {
			version = LatestVersion
		}
		ss.mu.Lock()
		ss.init = &p
		ss.mu.Unlock()
		return InitializeResult{
			ProtocolVersion: version,
			Capabilities:    ss.capabilities(),
			ServerInfo:      s.info,
			Instructions:    s.opts.Instructions,
		}, nil
	}
	switch method {
	case MethodToolsList:
		_, modern := RequestMetaOf(ctx)
		s.mu.RLock()
		all := make([]Tool, len(s.tools))
		for i, t := range s.tools {
			all[i] = t.tool
			if !modern && t.tool.TaskSupport() != "" {
				// 2025-11-25 tasks are not served here: a legacy
				// client calls the tool plainly.
				all[i].Execution = nil
			}
		}
		s.mu.RUnlock()
		page, next, err := paginateSlice(all, params, s.opts.PageSize)
		if err != nil {
			return nil, err
		}
		return ListToolsResult{Tools: page, NextCursor: next}, nil
	case MethodToolsCall:
		var p CallToolParams
		if err := p.decode(params, true); err != nil { // the Peer validated the frame
			return nil, InvalidParams("tools/call: %v", err)
		}
		s.mu.RLock()
		i := slices.IndexFunc(s.tools, func(x serverTool) bool { return x.tool.Name == p.Name })
		var h ToolHandler
		if i >= 0 {
			h = s.tools[i].h
		}
		s.mu.RUnlock()
		if h == nil {
			return nil, InvalidParams("unknown tool %q", p.Name)
		}
		if err := ss.checkParamHeaders(ctx, s.toolSchema(p.Name), p.Arguments); err != nil {
			return nil, err
		}
		req := &CallToolRequest{Session: ss, Name: p.Name, Arguments: p.Arguments, Meta: p.Meta, Input: InputOf(ctx)}
		if tok, ok := p.Meta["progressToken"]; ok {
			req.ProgressToken = tok
		}
		if req.Arguments == nil {
			req.Arguments = json.RawMessage("{}")
		}
		if m, modern := RequestMetaOf(ctx); modern {
			switch support, manual := s.taskSupport(p.Name); {
			case support != "" && DeclaresTasks(m.Capabilities):
				return s.callTask(ctx, h, req, manual)
			case support == "required":
				return nil, TasksRequired(fmt.Sprintf("tool %q runs only as a task", p.Name))
			}
		}
		res, err := h(ctx, req)
		if err != nil {
			return nil, err
		}
		if res.Content == nil {
			res.Content = []Content{}
		}
		return res, nil
	case MethodResourcesList:
		s.mu.RLock()
		all := make([]Resource, len(s.resources))
		for i, r := range s.resources {
			all[i] = r.res
		}
		s.mu.RUnlock()
		page, next, err := paginateSlice(all, params, s.opts.PageSize)
		if err != nil {
			return nil, err
		}
		return ListResourcesResult{Resources: page, NextCursor: next}, nil
	case MethodResourcesTemplatesList:
		s.mu.RLock()
		all := make([]ResourceTemplate, len(s.templates))
		for i, t := range s.templates {
			all[i] = t.tmpl
		}
		s.mu.RUnlock()
		page, next, err := paginateSlice(all, params, s.opts.PageSize)
		if err != nil {
			return nil, err
		}
		return ListResourceTemplatesResult{ResourceTemplates: page, NextCursor: next}, nil
	case MethodResourcesRead:
		uri, err := uriParam(method, params)
		if err != nil {
			return nil, err
		}
		h := s.resourceHandler(uri)
		if h == nil {
			return nil, resourceNotFound(ctx, uri)
		}
		return h(ctx, ss, uri)
	case MethodResourcesSubscribe, MethodResourcesUnsubscribe:
		uri, err := uriParam(method, params)
		if err != nil {
			return nil, err
		}
		ss.mu.Lock()
		if method == MethodResourcesSubscribe {
			ss.subs[uri] = true
		} else {
			delete(ss.subs, uri)
		}
		ss.mu.Unlock()
		return struct{}{}, nil
	case MethodPromptsList:
		s.mu.RLock()
		all := make([]Prompt, len(s.prompts))
		for i, p := range s.prompts {
			all[i] = p.prompt
		}
		s.mu.RUnlock()
		page, next, err := paginateSlice(all, params, s.opts.PageSize)
		if err != nil {
			return nil, err
		}
		return ListPromptsResult{Prompts: page, NextCursor: next}, nil
	case MethodPromptsGet:
		var p struct {
			Name      string            `json:"name"`
			Arguments map[string]string `json:"arguments"`
		}
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, InvalidParams("prompts/get: %v", err)
		}
		s.mu.RLock()
		i := slices.IndexFunc(s.prompts, func(x serverPrompt) bool { return x.prompt.Name == p.Name })
		var sp serverPrompt
		if i >= 0 {
			sp = s.prompts[i]
		}
		s.mu.RUnlock()
		if i < 0 {
			return nil, InvalidParams("unknown prompt %q", p.Name)
		}
		for _, a := range sp.prompt.Arguments {
			if a.Required && p.Arguments[a.Name] == "" {
				return nil, InvalidParams("prompt %q: missing required argument %q", p.Name, a.Name)
			}
		}
		return sp.h(ctx, ss, p.Arguments)
	case MethodComplete:
		if s.opts.Completion == nil {
			break
		}
		var p CompleteParams
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, InvalidParams("completion/complete: %v", err)
		}
		return s.opts.Completion(ctx, ss, &p)
	case MethodLoggingSetLevel:
		if !s.opts.Logging {
			break
		}
		var p struct {
			Level LoggingLevel `json:"level"`
		}
		if err := json.Unmarshal(params, &p); err != nil || p.Level.Severity() < 0 {
			return nil, InvalidParams("logging/setLevel: unknown level")
		}
		ss.mu.Lock()
		ss.level = p.Level.Severity()
		ss.mu.Unlock()
		return struct{}{}, nil
	}
	return nil, MethodNotFound(method)
}

// HandleNotification implements Handler.
func (ss *ServerSession) HandleNotification(ctx context.Context, method string, params json.RawMessage) {
	switch method {
	case NotificationInitialized:
		ss.mu.Lock()
		ss.ready = true
		ss.mu.Unlock()
	}
}

func uriParam(method string, params json.RawMessage) (string, error) {
	var p struct {
		URI string `json:"uri"`
	}
	if err := json.Unmarshal(params, &p); err != nil || p.URI == "" {
		return "", InvalidParams("%s: params need a uri", method)
	}
	return p.URI, nil
}

func (s *Server) resourceHandler(uri string) ResourceHandler {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, r := range s.resources {
		if r.res.URI == uri {
			return r.h
		}
	}
	for _, t := range s.templates {
		if matchTemplate(t.tmpl.URITemplate, uri) {
			return t.h
		}
	}
	return nil
}

// MatchTemplate reports whether uri matches a level-1 URI template (each
// {var} stands for at least one character up to the next literal).
func MatchTemplate(tmpl, uri string) bool { return matchTemplate(tmpl, uri) }

// matchTemplate matches uri against a level-1 URI template: literal text
// must match and each {var} takes at least one character up to the next
// literal.
func matchTemplate(tmpl, uri string) bool {
	for tmpl != "" {
		open := strings.IndexByte(tmpl, '{')
		if open < 0 {
			return tmpl == uri
		}
		if !strings.HasPrefix(uri, tmpl[:open]) {
			return false
		}
		uri = uri[open:]
		close := strings.IndexByte(tmpl[open:], '}')
		if close < 0 {
			return false
		}
		tmpl = tmpl[open+close+1:]
		next := len(uri)
		if tmpl != "" {
			lit := tmpl
			if j := strings.IndexByte(lit, '{'); j >= 0 {
				lit = lit[:j]
			}
			if lit != "" {
				next = strings.Index(uri, lit)
			}
		}
		if next <= 0 {
			return false
		}
		uri = uri[next:]
	}
	return uri == ""
}

// TemplateVars extracts the {var} values of uri matched against tmpl.
func TemplateVars(tmpl, uri string) map[string]string {
	vars := map[string]string{}
	for tmpl != "" {
		open := strings.IndexByte(tmpl, '{')
		if open < 0 || !strings.HasPrefix(uri, tmpl[:open]) {
			return vars
		}
		uri = uri[open:]
		close := strings.IndexByte(tmpl[open:], '}')
		if close < 0 {
			return vars
		}
		name := tmpl[open+1 : open+close]
		tmpl = tmpl[open+close+1:]
		next := len(uri)
		if j := strings.IndexByte(tmpl, '{'); tmpl != "" {
			lit := tmpl
			if j >= 0 {
				lit = lit[:j]
			}
			if lit != "" {
				if k := strings.Index(uri, lit); k >= 0 {
					next = k
				}
			}
		}
		vars[name] = uri[:next]
		uri = uri[next:]
	}
	return vars
}

// paginateSlice cuts one page out of all. The cursor is the offset, opaque to
// clients.
func paginateSlice[T any](all []T, params json.RawMessage, size int) ([]T, string, error) {
	var p paginatedParams
	if len(params) > 0 {
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, "", InvalidParams("invalid params: %v", err)
		}
	}
	start := 0
	if p.Cursor != "" {
		n, err := strconv.Atoi(p.Cursor)
		if err != nil || n < 0 || n > len(all) {
			return nil, "", InvalidParams("invalid cursor %q", p.Cursor)
		}
		start = n
	}
	if size <= 0 || start+size >= len(all) {
		return all[start:], "", nil
	}
	return all[start : start+size], strconv.Itoa(start + size), nil
}
