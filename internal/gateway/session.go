package gateway

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/nexus-mcp/nexus/internal/registry"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/diag"
	"github.com/nexus-mcp/nexus/internal/engine"
	"github.com/nexus-mcp/nexus/internal/explain"
	"github.com/nexus-mcp/nexus/internal/gateway/store"
	"github.com/nexus-mcp/nexus/internal/policy"
	"github.com/nexus-mcp/nexus/internal/wire"
)

// session is one downstream client. It implements mcp.Handler.
type session struct {
	g      *Gateway
	agent  string
	id     string // names the session in the audit log (never the HTTP session id, which admits to it)
	peer   *mcp.Peer
	ctx    context.Context // ends with the session: tasks run under it
	cancel context.CancelFunc
	tasks  tasks
	stored *stored // the session's record, when replicas share a store

	mu         sync.Mutex
	init       *mcp.InitializeParams
	version    string // negotiated
	ready      bool
	unrestored bool              // restoring from the store failed: try again on the next request
	up         *engine.Host      // the agent's shared connections, or the session's own (see the package doc)
	own        bool              // up is the session's own
	level      int               // least severity of log messages sent; -1: the client set none
	subs       map[string]string // subscribed URIs, by the server that has them
	pending    map[string]int    // changes not yet announced (kind -> 1), see announce
	timer      *time.Timer
	calls      map[string][]json.RawMessage // ids of the client's requests in flight, by server
	listing    int                          // list requests in flight: a change they cause is not announced
	connected  map[string]bool              // what the session last knew of each server
	missing    map[string]bool              // servers a list left out while they started: list_changed when up
	promptRefs map[string]promptRef         // exposed prompt name -> server and name
	closed     bool

	// Modern requests (modern.go, listen.go).
	modernOnly bool                   // every request is modern (httpserver.Session.Modern); set before the peer starts
	levels     map[string]int         // log level severity of modern requests in flight, by id; -1: none asked
	listeners  map[*listener]struct{} // open subscriptions/listen streams
	lastMeta   *cachedMeta            // the _meta last decoded (requestMeta)

	served atomic.Pointer[engine.Served] // what spans say of the client's side (version, transport)
}

type promptRef struct{ server, name string }

func newSession(g *Gateway, agent string) *session {
	ctx, cancel := context.WithCancel(context.Background())
	id := make([]byte, 8)
	rand.Read(id)
	return &session{g: g, agent: agent, id: hex.EncodeToString(id), level: -1, subs: map[string]string{}, ctx: ctx, cancel: cancel,
		calls: map[string][]json.RawMessage{}, connected: map[string]bool{}}
}

func (s *session) isOwn() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.own
}

func (s *session) host() *engine.Host {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.up
}

// close ends the session's own upstream connections, if any.
func (s *session) close() {
	s.cancel()
	s.endTasks()
	s.mu.Lock()
	s.closed = true
	own, up := s.own, s.up
	if s.timer != nil {
		s.timer.Stop()
	}
	s.mu.Unlock()
	if own {
		up.Close()
		s.g.dropOwn(s.agent)
	}
}

// busyWith reports whether the session has requests in flight to server.
func (s *session) busyWith(server string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.calls[server]) > 0
}

// Versions the gateway speaks, newest first; a client asking for another
// gets the newest.
var versions = []string{mcp.Version20251125, mcp.Version20250618, mcp.Version20250326, mcp.Version20241105}

// HandleRequest implements mcp.Handler.
func (s *session) HandleRequest(ctx context.Context, method string, params json.RawMessage) (any, error) {
	ctx = engine.WithServed(engine.WithSession(ctx, s.id), s.served.Load())
	if s.modernOnly {
		return s.modernRequest(ctx, method, params)
	}
	if method == mcp.MethodInitialize {
		return s.initialize(params)
	}
	s.mu.Lock()
	unrestored := s.unrestored
	s.mu.Unlock()
	if unrestored {
		// The restore failed (a store blip): try again before giving up.
		if err := s.restore(); errors.Is(err, errDamaged) {
			return nil, &mcp.RPCError{Code: mcp.CodeInternalError, Message: "this replica cannot take up the session: " + oneLine(err) + "; initialize a new session"}
		} else if err != nil {
			return nil, &mcp.RPCError{Code: mcp.CodeInternalError, Message: "the session store does not answer, so this replica cannot take up the session (" + oneLine(err) + "); retry"}
		}
	}
	s.mu.Lock()
	inited := s.init != nil
	// A request after initialize means the client is initialized, even if
	// its notifications/initialized went to another replica.
	s.ready = s.ready || inited
	s.mu.Unlock()
	if !inited {
		// No initialize: a modern request (MCP 2026-07-28) carries what
		// one said in its _meta. After initialize the session is legacy
		// (versioning: initialize selects legacy semantics for the stdio
		// process or the HTTP session).
		return s.modernRequest(ctx, method, params)
	}
	switch method {
	case mcp.MethodToolsList:
		return legacy(s.tracedList(ctx, method, params, s.listTools))
	case mcp.MethodToolsCall:
		return s.callTool(ctx, params)
	case mcp.MethodResourcesList:
		return legacy(s.tracedList(ctx, method, params, s.listResources))
	case mcp.MethodResourcesTemplatesList:
		return legacy(s.tracedList(ctx, method, params, s.listTemplates))
	case mcp.MethodResourcesRead:
		return s.readResource(ctx, params)
	case mcp.MethodResourcesSubscribe, mcp.MethodResourcesUnsubscribe:
		return s.subscribe(ctx, method, params)
	case mcp.MethodPromptsList:
		return legacy(s.tracedList(ctx, method, params, s.listPrompts))
	case mcp.MethodPromptsGet:
		return s.getPrompt(ctx, params)
	case mcp.MethodComplete:
		return s.complete(ctx, params)
	case mcp.MethodLoggingSetLevel:
		return s.setLevel(ctx, params)
	case methodTasksGet, methodTasksResult, methodTasksList, methodTasksCancel:
		return s.handleTask(ctx, method, params)
	}
	return nil, mcp.MethodNotFound(method)
}

// tracedList serves a list request with list under the host's span for
// it, when the host has one.
func (s *session) tracedList(ctx context.Context, method string, params json.RawMessage,
	list func(context.Context, json.RawMessage) (any, *mcp.CacheHint, error)) (any, *mcp.CacheHint, error) {
	ctx, end := s.host().TraceList(traced(ctx, params), method)
	res, hint, err := list(ctx, params)
	end(err)
	return res, hint, err
}

// setServed records the version the session negotiated, for spans, with
// its transport: "tcp" for HTTP (a conn with request headers), "pipe"
// for stdio and in-process pipes.
func (s *session) setServed(version string) {
	t := "pipe"
	if _, ok := s.peer.Conn().(mcp.ParamHeaderConn); ok {
		t = "tcp"
	}
	s.served.Store(&engine.Served{Version: version, Transport: t})
}

// AskLogLevel implements mcp.LogAsker: a legacy client's requests ask a
// modern upstream for the logs a legacy server would have sent it
// unasked: at the level the client set (logging/setLevel), else all of
// them (forwardLog filters by the session's level). A modern request
// asks with its own _meta.
func (s *session) AskLogLevel() mcp.LoggingLevel {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.init == nil {
		return ""
	}
	return mcp.LoggingLevels[max(s.level, 0)]
}

// HandleNotification implements mcp.Handler.
func (s *session) HandleNotification(ctx context.Context, method string, params json.RawMessage) {
	switch method {
	case mcp.NotificationInitialized:
		s.mu.Lock()
		s.ready = true
		s.mu.Unlock()
	case mcp.NotificationRootsListChanged:
		if s.isOwn() {
			if err := s.host().RootsChanged(ctx); err != nil {
				s.g.log.Debug("passing roots list_changed upstream failed", "error", err)
			}
		}
	}
}

func (s *session) initialize(params json.RawMessage) (any, error) {
	var p mcp.InitializeParams
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, mcp.InvalidParams("initialize: %v", err)
	}
	version := p.ProtocolVersion
	if !slices.Contains(versions, version) {
		version = versions[0]
	}
	s.mu.Lock()
	if s.init != nil {
		s.mu.Unlock()
		return nil, &mcp.RPCError{Code: mcp.CodeInvalidRequest, Message: "the session is already initialized"}
	}
	c := p.Capabilities
	if c.Sampling != nil || c.Elicitation != nil || c.Roots != nil {
		if !s.g.takeOwn(s.agent) {
			s.mu.Unlock()
			return nil, &mcp.RPCError{Code: mcp.CodeInvalidRequest, Message: fmt.Sprintf(
				"agent %q already has %d sessions whose client declared sampling, elicitation or roots; each starts server processes of its own, and that is the max_upstream_sessions_per_agent limit. "+
					"End one of those sessions, initialize without those capabilities (such a session shares the agent's connections), or raise it in the config: gateway { limits { max_upstream_sessions_per_agent = ... } }",
				s.agent, s.g.ownLimit())}
		}
		s.up, s.own = s.g.h.NewSession(s.sessionOptions(c)), true
	}
	s.init, s.version = &p, version
	s.setServed(version)
	own, up := s.own, s.up
	s.mu.Unlock()
	if s.g.opts.Eager {
		if own {
			warm(up)
		} else {
			s.g.Warm(s.agent)
		}
	}
	if s.stored != nil {
		// Any replica may serve the next request: it learns the session there.
		err := s.stored.save(func(r *store.Session) {
			r.Init, r.Protocol, r.Agent = params, version, s.agent
		})
		if err != nil {
			return nil, &mcp.RPCError{Code: mcp.CodeInternalError, Message: "initialize: the session store did not record the session (" + oneLine(err) + "); retry once it answers"}
		}
	}
	caps := mcp.ServerCapabilities{
		Tools:       &mcp.ListChangedCapability{ListChanged: true},
		Resources:   &mcp.ResourcesCapability{Subscribe: true, ListChanged: true},
		Prompts:     &mcp.ListChangedCapability{ListChanged: true},
		Logging:     &struct{}{},
		Completions: &struct{}{},
	}
	if version == mcp.Version20251125 {
		caps.Tasks = taskCapability
	}
	return mcp.InitializeResult{
		ProtocolVersion: version,
		Capabilities:    caps,
		ServerInfo:      mcp.Implementation{Name: "nexus", Title: "Nexus MCP gateway", Version: s.g.opts.Version},
		Instructions:    s.g.opts.Instructions,
	}, nil
}

// sessionOptions are the handlers of the session's own upstream
// connections: what servers ask goes to this client, on the stream of
// the request it is asked for (related).
func (s *session) sessionOptions(c mcp.ClientCapabilities) engine.SessionOptions {
	o := engine.SessionOptions{
		Agent:             s.agent,
		Session:           s.id,
		OnLog:             s.forwardLog,
		OnListChanged:     s.listChanged,
		OnResourceUpdated: s.updated,
		OnChange:          s.serverChanged,
	}
	if c.Sampling != nil {
		o.Sampling = func(server string) mcp.SamplingHandler {
			return func(ctx context.Context, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
				ctx, err := s.related(ctx, server, mcp.MethodSamplingCreateMessage)
				if err != nil {
					return nil, err
				}
				var res mcp.CreateMessageResult
				if err := s.peer.Call(ctx, mcp.MethodSamplingCreateMessage, p, &res); err != nil {
					return nil, err
				}
				return &res, nil
			}
		}
	}
	if c.Elicitation != nil {
		o.Elicitation = func(server string) mcp.ElicitationHandler {
			return func(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
				if p.Mode == "url" && (c.Elicitation == nil || c.Elicitation.URL == nil) {
					return nil, mcp.InvalidParams("elicitation/create: the client did not declare URL mode")
				}
				ctx, err := s.related(ctx, server, mcp.MethodElicitationCreate)
				if err != nil {
					return nil, err
				}
				var res mcp.ElicitResult
				if err := s.peer.Call(ctx, mcp.MethodElicitationCreate, p, &res); err != nil {
					return nil, err
				}
				return &res, nil
			}
		}
	}
	if c.Roots != nil {
		roots := func(ctx context.Context) ([]mcp.Root, error) {
			var res mcp.ListRootsResult
			if err := s.peer.Call(ctx, mcp.MethodRootsList, nil, &res); err != nil {
				return nil, err
			}
			return res.Roots, nil
		}
		// Roots declares the capability and passes the client's
		// roots/list_changed on (engine.Host.RootsChanged); RootsFor,
		// which knows the server, serves the requests.
		o.Roots = roots
		o.RootsFor = func(server string) mcp.RootsHandler {
			return func(ctx context.Context) ([]mcp.Root, error) {
				ctx, err := s.related(ctx, server, mcp.MethodRootsList)
				if err != nil {
					return nil, err
				}
				return roots(ctx)
			}
		}
	}
	return o
}

// related is ctx, the handler context of a request server sent on the
// session's own connection (method, e.g. elicitation/create), marked as
// belonging to the client's request it is asked for, so that over HTTP
// it travels on that request's stream (the streamable HTTP transport: a
// server's request related to a client's request goes on that request's
// stream):
//   - when the upstream says which call it came with (mcp.CallOf: over
//     streamable HTTP, a request on a call's response stream, or an
//     input_required round of a modern server), the client's request
//     that made that call; none if the call has none of its own (a
//     task's runs past it), and an error if the call has ended: nobody
//     waits for the answer, and another call's stream is no place for it;
//   - otherwise (stdio never says), the client's newest request in flight
//     to server, which with two of them in flight may be the wrong one.
//
// It always sets the request: ctx's own is the server's request's id
// upstream, which names no request of this client's.
func (s *session) related(ctx context.Context, server, method string) (context.Context, error) {
	var id json.RawMessage
	if call, ok := mcp.CallOf(ctx); ok {
		if call == nil {
			return nil, &mcp.RPCError{Code: mcp.CodeInvalidRequest, Message: fmt.Sprintf(
				"%s refused: server %q asked it during a call that has ended (cancelled, or timed out), so no client request waits for it; the server asked too late, or the call's timeout is too short for it", method, server)}
		}
		id = mcp.RelatedRequest(call)
	} else {
		id, _, _ = s.newest(server)
	}
	return mcp.WithRelatedRequest(ctx, id), nil
}

// newest is the id of the client's newest request in flight to server,
// or nil; for a modern request, modern is set and level is the severity
// it asked logs at (-1: none).
func (s *session) newest(server string) (id json.RawMessage, level int, modern bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := s.calls[server]
	if len(ids) == 0 {
		return nil, 0, false
	}
	id = ids[len(ids)-1]
	level, modern = s.levels[string(id)]
	return id, level, modern
}

// track records a client request in flight to server; untrack, with
// what track returned, forgets it. On the agent's shared connection the
// bridge counts it too (bridge.legacyCall): over stdio a server's
// request during it cannot be told from a bridged call's.
//
// A bridged call (bridge.go) is not tracked: it outlives the request
// that started it, and what the server sends during it follows its
// current attempt (bcall.log, bcall.progress).
func (s *session) track(ctx context.Context, server string) tracked {
	if bcallOf(ctx) != nil {
		return tracked{}
	}
	id := mcp.RelatedRequest(ctx)
	var meta *mcp.RequestMeta
	modern := false
	if id != nil {
		meta, modern = mcp.RequestMetaOf(ctx)
	}
	s.mu.Lock()
	shared := !s.own
	if id != nil {
		s.calls[server] = append(s.calls[server], id)
	}
	if modern {
		if s.levels == nil {
			s.levels = map[string]int{}
		}
		s.levels[string(id)] = meta.LogLevel.Severity()
	}
	s.mu.Unlock()
	if shared {
		s.g.br.legacyCall(s.agent, server, 1)
	}
	return tracked{id: id, shared: shared}
}

// tracked is what track did, for untrack to undo.
type tracked struct {
	id     json.RawMessage // the client's request (nil: none, as for a task's call)
	shared bool            // counted on the agent's shared connection
}

func (s *session) untrack(server string, t tracked) {
	if t.shared {
		s.g.br.legacyCall(s.agent, server, -1)
	}
	id := t.id
	if id == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.levels, string(id))
	ids := s.calls[server]
	for i := len(ids) - 1; i >= 0; i-- {
		if string(ids[i]) == string(id) {
			// The emptied slice stays, for the server's next call.
			s.calls[server] = slices.Delete(ids, i, i+1)
			return
		}
	}
}

// ---- lists ----------------------------------------------------------------

// listing marks a list request in progress: the connections it opens
// announce nothing to this session (it is about to see their lists).
func (s *session) startListing() func() {
	s.mu.Lock()
	s.listing++
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		s.listing--
		s.mu.Unlock()
	}
}

// listed turns what the host listed into one page for the client: a
// refusal of the whole list is the answer, servers that failed are logged
// and left out, and each item is converted to its wire form.
func listed[T, U any](s *session, method string, list []T, err error, params json.RawMessage, conv func(T) U) ([]U, string, *mcp.CacheHint, error) {
	if err != nil && list == nil {
		if rerr := s.g.refusalOf(s.agent, err); rerr != nil {
			return nil, "", nil, rerr
		}
	}
	partial := s.partial(method, err)
	out := make([]U, len(list))
	for i, x := range list {
		out[i] = conv(x)
	}
	page, next, err := paginate(out, params, s.g.opts.PageSize)
	return page, next, s.listHint(partial), err
}

// legacy drops a list's cache hint: only modern clients get one.
func legacy(res any, _ *mcp.CacheHint, err error) (any, error) { return res, err }

func (s *session) listTools(ctx context.Context, params json.RawMessage) (any, *mcp.CacheHint, error) {
	defer s.startListing()()
	ctx = engine.WithListWait(ctx, s.g.opts.ListWait)
	list, err := s.host().Tools(ctx, s.agent)
	page, next, hint, err := listed(s, mcp.MethodToolsList, list, err, params, func(t engine.Tool) mcp.Tool {
		out := t.Tool
		out.Name = t.Name
		// The gateway runs any tool as a task (tasks.go), and one its
		// server requires a task for also when called plainly.
		out.Execution = optionalTask
		return out
	})
	if err != nil {
		return nil, nil, err
	}
	return mcp.ListToolsResult{Tools: page, NextCursor: next}, hint, nil
}

func (s *session) listResources(ctx context.Context, params json.RawMessage) (any, *mcp.CacheHint, error) {
	defer s.startListing()()
	ctx = engine.WithListWait(ctx, s.g.opts.ListWait)
	list, err := s.host().Resources(ctx, s.agent)
	page, next, hint, err := listed(s, mcp.MethodResourcesList, list, err, params, func(r engine.Resource) mcp.Resource { return r.Resource })
	if err != nil {
		return nil, nil, err
	}
	return mcp.ListResourcesResult{Resources: page, NextCursor: next}, hint, nil
}

func (s *session) listTemplates(ctx context.Context, params json.RawMessage) (any, *mcp.CacheHint, error) {
	defer s.startListing()()
	ctx = engine.WithListWait(ctx, s.g.opts.ListWait)
	list, err := s.host().Templates(ctx, s.agent)
	page, next, hint, err := listed(s, mcp.MethodResourcesTemplatesList, list, err, params, func(t engine.Template) mcp.ResourceTemplate { return t.ResourceTemplate })
	if err != nil {
		return nil, nil, err
	}
	return mcp.ListResourceTemplatesResult{ResourceTemplates: page, NextCursor: next}, hint, nil
}

func (s *session) listPrompts(ctx context.Context, params json.RawMessage) (any, *mcp.CacheHint, error) {
	defer s.startListing()()
	ctx = engine.WithListWait(ctx, s.g.opts.ListWait)
	out, partial, err := s.prompts(ctx)
	if err != nil {
		return nil, nil, err
	}
	page, next, perr := paginate(out, params, s.g.opts.PageSize)
	if perr != nil {
		return nil, nil, perr
	}
	return mcp.ListPromptsResult{Prompts: page, NextCursor: next}, s.listHint(partial), nil
}

// prompts lists the agent's prompts under their exposed names and keeps
// the names' mapping for prompts/get and completion; partial says
// servers were left out.
func (s *session) prompts(ctx context.Context) (_ []mcp.Prompt, partial bool, _ error) {
	h := s.host()
	list, err := h.Prompts(ctx, s.agent)
	if err != nil && list == nil {
		if rerr := s.g.refusalOf(s.agent, err); rerr != nil {
			return nil, false, rerr
		}
	}
	partial = s.partial("prompts/list", err)
	out := make([]mcp.Prompt, 0, len(list))
	refs := make(map[string]promptRef, len(list))
	for _, p := range list {
		name := h.ExposedName(p.Server, p.Name)
		if prev, dup := refs[name]; dup {
			s.g.log.Error("prompt name collision: left out", "name", name, "first", prev.server+"."+prev.name, "then", p.Server+"."+p.Name,
				"fix", "give one of the servers a different prefix")
			continue
		}
		refs[name] = promptRef{p.Server, p.Name}
		p.Prompt.Name = name
		out = append(out, p.Prompt)
	}
	s.mu.Lock()
	s.promptRefs = refs
	s.mu.Unlock()
	return out, partial, nil
}

// partial logs the servers a list left out, and remembers those still
// starting, so the session hears list_changed when they are up; it
// reports whether any were left out.
func (s *session) partial(what string, err error) bool {
	if err == nil {
		return false
	}
	late, failed := starting(err)
	if failed {
		s.g.log.Warn("a list is missing servers that failed", "list", what, "agent", s.agent, "error", oneLine(err))
	}
	if len(late) == 0 {
		return true
	}
	s.g.log.Debug("a list left out servers still starting; list_changed follows when they are up", "list", what, "agent", s.agent, "servers", late)
	s.mu.Lock()
	if s.missing == nil {
		s.missing = map[string]bool{}
	}
	for _, n := range late {
		s.missing[n] = true
	}
	s.mu.Unlock()
	// One may have come up since the list gave up on it, before it was
	// marked missing: serverChanged has been and gone for it.
	for _, st := range s.host().Servers() {
		if st.Connected && s.takeMissing(st.Config.Name) {
			s.announce("tools", "resources", "prompts")
		}
	}
	return true
}

// takeMissing reports whether a list left server out while it started,
// and forgets that it did.
func (s *session) takeMissing(server string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.missing[server] {
		return false
	}
	delete(s.missing, server)
	return true
}

// starting names the servers in err (a listing's joined error) that were
// still starting; failed says it holds anything else.
func starting(err error) (late []string, failed bool) {
	var walk func(error)
	walk = func(err error) {
		var se *engine.StartingError
		switch e := err.(type) {
		case interface{ Unwrap() []error }:
			for _, x := range e.Unwrap() {
				walk(x)
			}
		default:
			if errors.As(err, &se) {
				late = append(late, se.Server)
			} else {
				failed = true
			}
		}
	}
	walk(err)
	return late, failed
}

// paginate cuts one page of all; the cursor is the offset.
func paginate[T any](all []T, params json.RawMessage, size int) ([]T, string, error) {
	var p struct {
		Cursor string `json:"cursor"`
	}
	if len(params) > 0 && string(params) != "null" {
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, "", mcp.InvalidParams("invalid params: %v", err)
		}
	}
	start := 0
	if p.Cursor != "" {
		n, err := strconv.Atoi(p.Cursor)
		if err != nil || n < 0 || n > len(all) {
			return nil, "", mcp.InvalidParams("invalid cursor %q: use the nextCursor of the previous page", p.Cursor)
		}
		start = n
	}
	if start+size >= len(all) {
		return all[start:], "", nil
	}
	return all[start : start+size], strconv.Itoa(start + size), nil
}

// ---- calls ----------------------------------------------------------------

func (s *session) callTool(ctx context.Context, params json.RawMessage) (any, error) {
	p, err := mcp.DecodeValidCallToolParams(params) // the Peer validated the frame
	if err != nil {
		return nil, mcp.InvalidParams("tools/call: %v", err)
	}
	if p.Name == "" {
		return nil, mcp.InvalidParams("tools/call: params need the tool's name")
	}
	if raw := mcp.Member(params, "task"); len(raw) > 0 && string(raw) != "null" {
		tp, err := taskParams(params)
		if err != nil || tp == nil {
			return nil, mcp.InvalidParams("tools/call: task must be an object like {\"ttl\": 60000}")
		}
		// The progress token stays valid for the task's life; its
		// notifications go out on the session, not the request.
		// A task's result is kept as a result: tasks/result adds to it.
		return s.startTask(tp.TTL, func(tctx context.Context) (any, error) { return s.call(tctx, s.ctx, p, false) })
	}
	return s.call(ctx, ctx, p, true)
}

// call makes one tools/call through the host; progress goes out under
// nctx. With passOn, a result nothing changed on the way is answered
// with the bytes the server sent (engine.CallOptions.Wire), not
// encoded again.
func (s *session) call(ctx, nctx context.Context, p mcp.CallToolParams, passOn bool) (any, error) {
	h := s.host()
	x := &wired{}
	o := &x.o
	if a, ok := nctx.(attemptCtx); ok {
		// A bridged call's progress follows its attempts: the current
		// one's token, on its stream (bcall.progress).
		o.OnProgress = a.c.progress
	} else if tok := p.Meta["progressToken"]; len(tok) > 0 {
		o.OnProgress = func(pr mcp.Progress) {
			pr.ProgressToken = tok
			if err := s.peer.Notify(nctx, mcp.NotificationProgress, pr); err != nil {
				s.g.log.Debug("forwarding progress failed", "error", err)
			}
		}
	}
	if passOn {
		x.ask()
	}
	args := p.Arguments
	if args == nil {
		args = json.RawMessage("{}")
	}
	if bcallOf(ctx) == nil { // a bridged call is not tracked (track)
		// Bare names too (a server with prefix ""): the bridge must
		// know every legacy call in flight on the shared connection.
		if server := s.toolServer(ctx, p.Name); server != "" {
			defer s.untrack(server, s.track(ctx, server))
		}
	}
	if tc := traceContext(p.Meta); tc != nil {
		ctx = engine.WithTraceContext(ctx, tc)
	}
	// The request's frame was validated as it was read.
	res, err := h.CallTool(ctx, s.agent, p.Name, engine.CheckedArgs(args), o)
	if err != nil {
		var de *policy.DeniedError
		if errors.As(err, &de) && de.Link == "rules" && de.Tool != "" {
			// The agent's rules hide the tool from tools/list: to the
			// client it does not exist.
			return nil, mcp.InvalidParams("unknown tool %q: the agent %q may not use it (its allow and deny rules)", p.Name, s.agent)
		}
		if text, ok := s.g.refusal(s.agent, err); ok {
			// The model reads it and can change course: a tool result, not
			// a protocol error.
			return &mcp.CallToolResult{Content: []mcp.Content{{Type: mcp.ContentText, Text: "Nexus refused this call: " + text}}, IsError: true}, nil
		}
		if se := (*registry.SchemaError)(nil); errors.As(err, &se) && se.What == "arguments" {
			// An input validation error is a tool execution error, so
			// the model can correct its arguments (SEP-1303): the tool
			// did not run.
			return &mcp.CallToolResult{Content: []mcp.Content{{Type: mcp.ContentText, Text: s.exposed(h, err).Error()}}, IsError: true}, nil
		}
		return nil, s.g.rpcErrorOf(s.agent, s.exposed(h, err))
	}
	return x.answer(res), nil
}

// exposed says an unknown tool's suggestions by the names this client
// sees (mcp_testserver_echo), not the command line's (testserver.echo).
func (s *session) exposed(h *engine.Host, err error) error {
	var ut *registry.UnknownToolError
	if !errors.As(err, &ut) || len(ut.Suggestions) == 0 {
		return err
	}
	out := *ut
	out.Suggestions = make([]string, len(ut.Suggestions))
	for i, name := range ut.Suggestions {
		out.Suggestions[i] = name
		if server, tool, ok := strings.Cut(name, "."); ok {
			out.Suggestions[i] = h.ExposedName(server, tool)
		}
	}
	return &out
}

// wired is a call's options and the result's bytes they may ask for
// (engine.CallOptions.Wire), in one allocation.
type wired struct {
	o    engine.CallOptions
	wire json.RawMessage
}

// ask makes the options ask for the result's bytes, and returns them.
func (w *wired) ask() *engine.CallOptions {
	w.o.Wire = &w.wire
	return &w.o
}

// answer is what the client gets: the bytes the server sent when the host
// handed them back (a pointer: no second allocation to box it), else res
// encoded.
func (w *wired) answer(res any) any {
	if w.wire != nil {
		return &w.wire
	}
	return res
}

var optionalTask = json.RawMessage(`{"taskSupport":"optional"}`)

// serverOf guesses the server an exposed tool name belongs to, for
// routing what the server asks meanwhile; a wrong guess only costs the
// routing precision.
func (s *session) serverOf(name string) (string, bool) {
	if server, _, ok := strings.Cut(name, "."); ok {
		return server, true
	}
	for _, srv := range s.g.h.Config().Servers {
		if srv.Prefix == nil && strings.HasPrefix(name, "mcp_"+srv.Name+"_") {
			return srv.Name, true
		}
		if srv.Prefix != nil && *srv.Prefix != "" && strings.HasPrefix(name, *srv.Prefix) {
			return srv.Name, true
		}
	}
	return "", false
}

func (s *session) readResource(ctx context.Context, params json.RawMessage) (any, error) {
	uri, err := uriParam(mcp.MethodResourcesRead, params)
	if err != nil {
		return nil, err
	}
	server, err := s.route(ctx, uri)
	if err != nil {
		return nil, err
	}
	res, err := s.read(traced(ctx, params), server, uri)
	if err != nil {
		return nil, s.g.rpcErrorOf(s.agent, err)
	}
	return res, nil
}

// read reads uri from server. A resource nothing changed is answered
// with the bytes the server sent, as a tool's result is (see call).
func (s *session) read(ctx context.Context, server, uri string) (any, error) {
	defer s.untrack(server, s.track(ctx, server))
	x := &wired{}
	res, err := s.host().ReadResourceWith(ctx, s.agent, server, uri, x.ask())
	if err != nil {
		return nil, err
	}
	return x.answer(res), nil
}

func (s *session) subscribe(ctx context.Context, method string, params json.RawMessage) (any, error) {
	uri, err := uriParam(method, params)
	if err != nil {
		return nil, err
	}
	server, err := s.route(ctx, uri)
	if err != nil {
		return nil, err
	}
	h := s.host()
	if method == mcp.MethodResourcesSubscribe {
		err = h.Subscribe(ctx, s.agent, server, uri)
		if err == nil {
			s.mu.Lock()
			s.subs[uri] = server
			s.mu.Unlock()
			s.saveSub(subscription(server, uri), true)
		}
	} else {
		s.mu.Lock()
		delete(s.subs, uri)
		s.mu.Unlock()
		s.saveSub(subscription(server, uri), false)
		// A shared connection's subscription stays: another session may
		// hold it, and updates are filtered per session anyway.
		if s.isOwn() {
			err = h.Unsubscribe(ctx, s.agent, server, uri)
		}
	}
	if err != nil {
		return nil, s.g.rpcErrorOf(s.agent, err)
	}
	return struct{}{}, nil
}

// saveSub adds a subscription to the session's record, or removes it, in
// one atomic update: two replicas subscribing at once both keep theirs.
func (s *session) saveSub(entry string, add bool) {
	if s.stored == nil {
		return
	}
	err := s.stored.save(func(r *store.Session) {
		i := slices.Index(r.Subscriptions, entry)
		switch {
		case add && i < 0:
			r.Subscriptions = append(r.Subscriptions, entry)
			slices.Sort(r.Subscriptions)
		case !add && i >= 0:
			r.Subscriptions = slices.Delete(r.Subscriptions, i, i+1)
		}
	})
	if err != nil {
		s.g.log.Warn("the session store did not record a subscription; another replica serving the session will not know it", "error", oneLine(err))
	}
}

// route finds the server of a resource URI: the one that lists it, else
// the one with a matching template, else the only server with resources.
func (s *session) route(ctx context.Context, uri string) (string, error) {
	h := s.host()
	res, _ := h.Resources(ctx, s.agent)
	for _, r := range res {
		if r.URI == uri {
			return r.Server, nil
		}
	}
	tmpls, _ := h.Templates(ctx, s.agent)
	for _, t := range tmpls {
		if mcp.MatchTemplate(t.URITemplate, uri) {
			return t.Server, nil
		}
	}
	servers := map[string]bool{}
	for _, r := range res {
		servers[r.Server] = true
	}
	for _, t := range tmpls {
		servers[t.Server] = true
	}
	if len(servers) == 1 {
		for server := range servers {
			return server, nil
		}
	}
	return "", &mcp.RPCError{Code: -32002, Message: "resource not found: " + uri + " (no server this agent can see lists it or a template matching it)"}
}

func (s *session) getPrompt(ctx context.Context, params json.RawMessage) (any, error) {
	ref, args, err := s.promptParams(ctx, params)
	if err != nil {
		return nil, err
	}
	defer s.untrack(ref.server, s.track(ctx, ref.server))
	res, err := s.host().GetPrompt(traced(ctx, params), s.agent, ref.server, ref.name, args)
	if err != nil {
		return nil, s.g.rpcErrorOf(s.agent, err)
	}
	return res, nil
}

// promptParams are a prompts/get's prompt and arguments.
func (s *session) promptParams(ctx context.Context, params json.RawMessage) (promptRef, map[string]string, error) {
	var p struct {
		Name      string            `json:"name"`
		Arguments map[string]string `json:"arguments"`
	}
	if err := json.Unmarshal(params, &p); err != nil || p.Name == "" {
		return promptRef{}, nil, mcp.InvalidParams("prompts/get: params need the prompt's name")
	}
	ref, err := s.prompt(ctx, p.Name)
	return ref, p.Arguments, err
}

// prompt resolves an exposed prompt name, listing again if it is new.
func (s *session) prompt(ctx context.Context, name string) (promptRef, error) {
	s.mu.Lock()
	ref, ok := s.promptRefs[name]
	s.mu.Unlock()
	if ok {
		return ref, nil
	}
	if _, _, err := s.prompts(ctx); err != nil {
		return promptRef{}, err
	}
	s.mu.Lock()
	ref, ok = s.promptRefs[name]
	s.mu.Unlock()
	if !ok {
		return promptRef{}, mcp.InvalidParams("unknown prompt %q: prompts/list has the names this agent can use", name)
	}
	return ref, nil
}

func (s *session) complete(ctx context.Context, params json.RawMessage) (any, error) {
	var p mcp.CompleteParams
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, mcp.InvalidParams("completion/complete: %v", err)
	}
	var server string
	switch p.Ref.Type {
	case "ref/prompt":
		ref, err := s.prompt(ctx, p.Ref.Name)
		if err != nil {
			return nil, err
		}
		server, p.Ref.Name = ref.server, ref.name
	case "ref/resource":
		tmpls, _ := s.host().Templates(ctx, s.agent)
		for _, t := range tmpls {
			if t.URITemplate == p.Ref.URI {
				server = t.Server
				break
			}
		}
		if server == "" {
			var err error
			if server, err = s.route(ctx, p.Ref.URI); err != nil {
				return nil, err
			}
		}
	default:
		return nil, mcp.InvalidParams("completion/complete: ref.type must be ref/prompt or ref/resource, not %q", p.Ref.Type)
	}
	res, err := s.host().Complete(ctx, s.agent, server, &p)
	if err != nil {
		return nil, s.g.rpcErrorOf(s.agent, err)
	}
	return res, nil
}

func (s *session) setLevel(ctx context.Context, params json.RawMessage) (any, error) {
	var p struct {
		Level mcp.LoggingLevel `json:"level"`
	}
	if err := json.Unmarshal(params, &p); err != nil || p.Level.Severity() < 0 {
		return nil, mcp.InvalidParams("logging/setLevel: level must be one of %v", mcp.LoggingLevels)
	}
	s.mu.Lock()
	s.level = p.Level.Severity()
	own := s.own
	s.mu.Unlock()
	if s.stored != nil {
		if err := s.stored.save(func(r *store.Session) { r.LogLevel = string(p.Level) }); err != nil {
			s.g.log.Warn("the session store did not record a log level; other replicas keep the old one", "error", oneLine(err))
		}
	}
	if own {
		// A shared connection keeps its level: other sessions share it;
		// this session's level filters what it is sent (forwardLog).
		if err := s.host().SetLogLevel(ctx, s.agent, p.Level); err != nil {
			s.g.log.Debug("setting upstream log levels failed", "error", oneLine(err))
		}
	}
	return struct{}{}, nil
}

// ---- notifications to the client ---------------------------------------

// forwardLog sends a server's log message on, tagged with the server:
// one the server sent on a request's stream (m.Related) only if that
// request is this session's, on the stream of the client's request it
// serves; another on the stream of a request in flight to the server.
func (s *session) forwardLog(server string, m mcp.LogMessage) {
	if !s.g.h.Visible(s.agent, server) {
		return
	}
	var (
		ctx    context.Context
		modern bool // the request is modern: its own _meta logLevel decides
		level  int
	)
	if m.Related {
		if callSession(m.Call) != s {
			return
		}
		ctx = s.ctx
		if id := mcp.RelatedRequest(m.Call); id != nil {
			ctx = mcp.WithRelatedRequest(ctx, id)
		}
		var meta *mcp.RequestMeta
		if meta, modern = mcp.RequestMetaOf(m.Call); modern {
			level = meta.LogLevel.Severity()
		}
		m.Call = nil
	} else if id, l, mod := s.newest(server); id != nil {
		ctx, level, modern = mcp.WithRelatedRequest(s.ctx, id), l, mod
	}
	s.mu.Lock()
	min, ready := s.level, s.ready
	s.mu.Unlock()
	if modern {
		// A modern client gets logs only for a request that asked for
		// them (logLevel in its _meta), at that level.
		ready, min = level >= 0, level
	}
	if !ready || m.Level.Severity() < min {
		return
	}
	if m.Logger == "" {
		m.Logger = server
	} else {
		m.Logger = server + "/" + m.Logger
	}
	if ctx == nil {
		ctx = s.ctx
	}
	_ = s.peer.Notify(ctx, mcp.NotificationMessage, m)
}

// callSession is the session whose request made the upstream call whose
// context call is, or nil.
func callSession(call context.Context) *session {
	if call == nil {
		return nil
	}
	s, _ := mcp.HandlerOf(call).(*session)
	return s
}

// updated passes resources/updated to a subscribed client.
func (s *session) updated(server, uri string) {
	s.mu.Lock()
	sub := s.subs[uri] == server
	ls := s.listening()
	s.mu.Unlock()
	for _, l := range ls {
		if l.resources[uri] == server {
			l.send(mcp.NotificationResourceUpdated, map[string]any{"uri": uri})
		}
	}
	if !sub {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = s.peer.Notify(ctx, mcp.NotificationResourceUpdated, map[string]string{"uri": uri})
}

// listChanged announces a server's changed list.
func (s *session) listChanged(server, kind string) {
	if s.g.h.Visible(s.agent, server) {
		s.announce(kind)
	}
}

// serverChanged announces every list when a server comes or goes.
func (s *session) serverChanged(server string) {
	if !s.g.h.Visible(s.agent, server) {
		return
	}
	up := false
	for _, st := range s.host().Servers() {
		if st.Config.Name == server {
			up = st.Connected
		}
	}
	s.mu.Lock()
	was, known := s.connected[server]
	s.connected[server] = up
	quiet := s.listing > 0 || (!known && up)
	late := up && s.missing[server]
	if late {
		delete(s.missing, server)
	}
	s.mu.Unlock()
	if late || (was != up && !quiet) {
		s.announce("tools", "resources", "prompts")
	}
}

// announce sends list_changed for kinds, coalescing what comes within
// a short time into one notification each.
func (s *session) announce(kinds ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if (!s.ready && len(s.listeners) == 0) || s.closed {
		return
	}
	if s.pending == nil {
		s.pending = map[string]int{}
	}
	for _, k := range kinds {
		s.pending[k] = 1
	}
	if s.timer == nil {
		s.timer = time.AfterFunc(50*time.Millisecond, s.flushChanges)
	} else {
		s.timer.Reset(50 * time.Millisecond)
	}
}

func (s *session) flushChanges() {
	s.mu.Lock()
	kinds := s.pending
	s.pending = nil
	ready := s.ready
	ls := s.listening()
	s.mu.Unlock()
	for _, k := range []string{"tools", "resources", "prompts"} {
		if kinds[k] == 0 {
			continue
		}
		method := "notifications/" + k + "/list_changed"
		// Modern clients hear of it on the subscriptions/listen streams
		// that opted in; an initialized (legacy) session unasked.
		for _, l := range ls {
			if l.lists[k] {
				l.send(method, map[string]any{})
			}
		}
		if !ready {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = s.peer.Notify(ctx, method, nil)
		cancel()
	}
}

// ---- errors -------------------------------------------------------------

func uriParam(method string, params json.RawMessage) (string, error) {
	var p struct {
		URI string `json:"uri"`
	}
	if err := json.Unmarshal(params, &p); err != nil || p.URI == "" {
		return "", mcp.InvalidParams("%s: params need a uri", method)
	}
	return p.URI, nil
}

// refusal is a refused request as agent's client reads it: the report
// the command line prints for the same error (explain.Refusal), in
// brief, after what the gateway was doing when the chain refused (a
// server's input request, say). ok is false for an error that is no
// refusal.
func (g *Gateway) refusal(agent string, err error) (_ string, ok bool) {
	var de *policy.DeniedError
	if !errors.As(err, &de) {
		return "", false
	}
	text := explain.Refusal(g.h.Config(), agent, "", de).Brief()
	if msg, own := err.Error(), de.Error(); msg != own && strings.HasSuffix(msg, own) {
		text = strings.TrimSuffix(msg, own) + text
	}
	return text, true
}

// refusalOf turns a refusal of the whole request (an agent without
// access) into its JSON-RPC error, or nil.
func (g *Gateway) refusalOf(agent string, err error) *mcp.RPCError {
	if text, ok := g.refusal(agent, err); ok {
		return &mcp.RPCError{Code: mcp.CodeInvalidRequest, Message: "Nexus refused the request: " + text}
	}
	return nil
}

// rpcErrorOf turns a host error into the JSON-RPC error agent's client
// gets: a server's own error passes through; unknown names and bad
// arguments are invalid params; a refusal and a report are told in brief
// (diag.Report's Brief: the server, what happened, the evidence, such as
// a crashed server's stderr tail, and the fix); anything else is an
// internal error in one line.
func (g *Gateway) rpcErrorOf(agent string, err error) error {
	var ie *mcp.InputRequiredError
	if errors.Is(err, context.Canceled) || errors.As(err, &ie) {
		// An interim answer is the modern request's to pass on (modern.go).
		return err
	}
	var (
		rerr   *mcp.RPCError
		ut     *registry.UnknownToolError
		us     *registry.UnknownServerError
		schema *registry.SchemaError
		rep    *diag.Report
	)
	switch {
	case errors.As(err, &ut), errors.As(err, &us):
		return mcp.InvalidParams("%s", err.Error())
	case errors.As(err, &schema) && schema.What == "arguments":
		return mcp.InvalidParams("%s", err.Error())
	case errors.As(explain.Error(err), &rep):
		return &mcp.RPCError{Code: mcp.CodeInternalError, Message: rep.Brief()}
	case errors.As(err, &rerr):
		return rerr
	}
	if r := g.refusalOf(agent, err); r != nil {
		return r
	}
	return &mcp.RPCError{Code: mcp.CodeInternalError, Message: oneLine(err)}
}

func oneLine(err error) string {
	s := err.Error()
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}

// traced is ctx continuing the trace a request's params._meta carries
// (ctx as it is when there is none).
func traced(ctx context.Context, params json.RawMessage) context.Context {
	raw := mcp.Member(params, "_meta")
	if raw == nil {
		return ctx
	}
	var meta mcp.Meta
	if json.Unmarshal(raw, &meta) != nil {
		return ctx
	}
	if tc := traceContext(meta); tc != nil {
		return engine.WithTraceContext(ctx, tc)
	}
	return ctx
}

// traceContext is the W3C trace context a request's _meta carries
// ("traceparent", "tracestate", "baggage"), or nil.
func traceContext(meta mcp.Meta) map[string]string {
	var out map[string]string
	for _, k := range []string{"traceparent", "tracestate", "baggage"} {
		raw, ok := meta[k]
		if !ok {
			continue
		}
		if v, err := wire.Unquote(raw); err == nil && v != "" && len(v) <= 8192 { // the largest W3C limit (baggage); telemetry bounds each key
			if out == nil {
				out = map[string]string{}
			}
			out[k] = v
		}
	}
	return out
}
