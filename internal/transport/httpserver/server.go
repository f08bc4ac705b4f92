package httpserver

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/wire"
)

// ServeFunc serves one MCP session over conn until ctx ends (the session
// was deleted, expired, or the handler closed) or the conn fails. It is
// the server side of the session: mcp.Server.Serve, or the gateway's.
type ServeFunc func(ctx context.Context, conn mcp.Conn, s *Session) error

// Session is what a ServeFunc learns of its HTTP session.
type Session struct {
	ID string
	// Principal is what Options.Authenticate returned for the request
	// that created the session; every later request must authenticate as
	// the same principal.
	Principal string
	// Legacy is set for sessions of the 2024-11-05 HTTP+SSE transport.
	Legacy bool
	// Restored is set for the local instance of a session another replica
	// opened (Options.Shared): its state is in the shared store.
	Restored bool
	// Modern is set for a principal's internal session of stateless
	// (2026-07-28) requests: every message on it is a modern request with
	// its own _meta, each answered on its own POST. Its ID is never sent
	// to the client, and the serve function must send no request to the
	// client on it (MRTR replaces them).
	Modern bool
}

// Options bound and tune a Handler. Zero values take the defaults.
type Options struct {
	Logger hclog.Logger
	// MaxBodyBytes bounds one POST body (default mcp.MaxFrameSize, 10 MiB).
	MaxBodyBytes int
	// MaxSessions bounds concurrent sessions (default 1000), and
	// MaxSessionsPerPrincipal those of one principal (default 100, at
	// most MaxSessions); initialize beyond them gets 503, or 429 for the
	// principal's own cap. Without Authenticate everyone is one
	// principal, whose caps are the global ones.
	MaxSessions             int
	MaxSessionsPerPrincipal int
	// MaxRequests bounds requests in progress across all sessions
	// (default 4096), MaxRequestsPerPrincipal those of one principal
	// (default 1024, at most MaxRequests), MaxRequestsPerSession those of
	// one session (default 64); beyond them a request gets 503 (the
	// global cap) or 429 with Retry-After. A principal's requests count
	// against its own cap first, so one that floods the server is refused
	// before it can fill the global cap on its own.
	MaxRequests             int
	MaxRequestsPerPrincipal int
	MaxRequestsPerSession   int
	// MaxInflightBytes bounds the bytes of request bodies and of the
	// answers they get (responses and the messages on their streams)
	// held for requests in progress (default 512 MiB; a request reserves
	// its body's size twice, once for its answer);
	// MaxInflightBytesPerPrincipal those of one principal (default 128
	// MiB, at most MaxInflightBytes). A request whose body does not fit
	// waits up to InflightWait (default 2 s) for others to finish, then
	// gets 503 (or 429 for the principal's own share) with Retry-After.
	MaxInflightBytes             int64
	MaxInflightBytesPerPrincipal int64
	InflightWait                 time.Duration
	// ReplayEvents and ReplayBytes bound what each stream keeps for
	// delivery and Last-Event-ID replay (defaults 256 events, 16 MiB). A
	// request's stream whose client has not read that many events ends the
	// session; the standalone stream drops its oldest events instead.
	ReplayEvents int
	ReplayBytes  int
	// IdleTimeout ends sessions with no request and no open stream for
	// that long (default 30 minutes).
	IdleTimeout time.Duration
	// PollAfter makes every SSE connection close after that many events,
	// announcing PollRetry first, as SEP-1699 lets servers do; the client
	// resumes with Last-Event-ID. For resumption tests.
	PollAfter int
	PollRetry time.Duration
	// AllowOrigin decides which browser origins may use the endpoint (DNS
	// rebinding); nil allows requests without Origin and from loopback
	// origins only (LoopbackOrigin).
	AllowOrigin func(origin string) bool
	// CheckHost, if set, vets the Host header of a request without Origin
	// (DNS rebinding: a page on a name the attacker controls, resolving to
	// this server, sends no cross-origin Origin for some requests); its
	// error is the refusal's text (403). nil admits every Host.
	CheckHost func(host string) error
	// Authenticate names the caller of a request, or refuses it (an
	// *AuthError says how). nil lets everyone in as principal "".
	// It sees the headers only: it runs before the body is read, and a
	// refused request's body is never read (the connection closes).
	Authenticate func(r *http.Request) (string, error)
	// BodyTimeout bounds how long a POST body may take to arrive (default
	// 20 s), extended by each byte's share at MinBodyRate (bytes a second,
	// default 32 KiB): a large body on a slow link gets its time, a body
	// that trickles in (slowloris) gets 408 and the connection closes.
	BodyTimeout time.Duration
	MinBodyRate int
	// ResumeGrace is how long a request's SSE stream whose client went
	// away waits to be resumed (Last-Event-ID) before the request is
	// cancelled (default 10 s, at least three PollRetry); see the package
	// doc.
	ResumeGrace time.Duration
	// Raise says how to raise a limit, by its name ("max_sessions",
	// "max_sessions_per_agent", "max_requests", "max_requests_per_agent",
	// "max_requests_per_session", "max_inflight_bytes",
	// "max_inflight_bytes_per_agent", "max_body_bytes",
	// "max_sse_events"; a principal is an agent to the gateway);
	// refusals quote it. nil names the limit only.
	Raise func(limit string) string
	// LegacyEndpoint is the path legacy HTTP+SSE clients POST to, given
	// to them in the endpoint event (default "/messages").
	LegacyEndpoint string
	// Shared, if set, lets replicas serve each other's sessions (see
	// Shared). SharedPoll is how often a stream read from it checks for
	// what no wake announced, and whether a request's replica is alive
	// (default 1 s).
	Shared     Shared
	SharedPoll time.Duration
	// SignalWindow is how long the same signal (list_changed, a
	// resource's update) to one session from several replicas counts as
	// one (default 1 s).
	SignalWindow time.Duration
	// Changed runs when another replica announced (Handler.Announce) that
	// it changed the state of a session this replica has an instance of.
	Changed func(id string)
	// KeepAlive is how often a quiet SSE stream of a modern request (a
	// subscriptions/listen stream, a long call) gets a comment line, so
	// that proxies and clients do not time it out (default 15 s).
	KeepAlive time.Duration
}

func (o *Options) defaults() {
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = mcp.MaxFrameSize
	}
	if o.MaxSessions <= 0 {
		o.MaxSessions = 1000
	}
	if o.Authenticate == nil {
		// Everyone is principal "": its share is the whole.
		o.MaxSessionsPerPrincipal, o.MaxRequestsPerPrincipal, o.MaxInflightBytesPerPrincipal = math.MaxInt32, math.MaxInt32, math.MaxInt64
	}
	if o.MaxSessionsPerPrincipal <= 0 {
		o.MaxSessionsPerPrincipal = 100
	}
	o.MaxSessionsPerPrincipal = min(o.MaxSessionsPerPrincipal, o.MaxSessions)
	if o.MaxRequests <= 0 {
		o.MaxRequests = 4096
	}
	if o.MaxRequestsPerPrincipal <= 0 {
		o.MaxRequestsPerPrincipal = 1024
	}
	o.MaxRequestsPerPrincipal = min(o.MaxRequestsPerPrincipal, o.MaxRequests)
	if o.MaxInflightBytes <= 0 {
		o.MaxInflightBytes = 512 << 20
	}
	if o.MaxInflightBytesPerPrincipal <= 0 {
		o.MaxInflightBytesPerPrincipal = 128 << 20
	}
	o.MaxInflightBytesPerPrincipal = min(o.MaxInflightBytesPerPrincipal, o.MaxInflightBytes)
	if o.InflightWait <= 0 {
		o.InflightWait = 2 * time.Second
	}
	if o.MaxRequestsPerSession <= 0 {
		o.MaxRequestsPerSession = 64
	}
	if o.ReplayEvents <= 0 {
		o.ReplayEvents = 256
	}
	if o.ReplayBytes <= 0 {
		o.ReplayBytes = 16 << 20
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = 30 * time.Minute
	}
	if o.AllowOrigin == nil {
		o.AllowOrigin = LoopbackOrigin
	}
	if o.LegacyEndpoint == "" {
		o.LegacyEndpoint = "/messages"
	}
	if o.SharedPoll <= 0 {
		o.SharedPoll = time.Second
	}
	if o.SignalWindow <= 0 {
		o.SignalWindow = time.Second
	}
	if o.BodyTimeout <= 0 {
		o.BodyTimeout = 20 * time.Second
	}
	if o.MinBodyRate <= 0 {
		o.MinBodyRate = 32 << 10
	}
	if o.KeepAlive <= 0 {
		o.KeepAlive = 15 * time.Second
	}
	if o.ResumeGrace <= 0 {
		o.ResumeGrace = max(10*time.Second, 3*o.PollRetry)
	}
}

// limitText names a limit for a refusal, with how to raise it.
func (o *Options) limitText(limit string, n int) string {
	s := fmt.Sprintf("the %s limit (%d)", limit, n)
	if o.Raise != nil {
		if how := o.Raise(limit); how != "" {
			s += "; " + how
		}
	}
	return s
}

// AuthError refuses a request: Status (401 or 403), extra headers such as
// WWW-Authenticate, and a message for the JSON-RPC error body.
type AuthError struct {
	Status  int
	Header  http.Header
	Message string
}

func (e *AuthError) Error() string { return e.Message }

// Handler serves MCP sessions over HTTP. Mount it at the MCP endpoint;
// LegacySSE and LegacyMessage serve the old transport's two endpoints.
// It is safe for concurrent use.
type Handler struct {
	serve ServeFunc
	log   hclog.Logger
	opts  Options

	ctx      context.Context
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	inflight atomic.Int64 // requests in progress, all sessions
	perReq   sync.Map     // principal -> *atomic.Int64, its requests in progress
	bytes    *budget

	mu       sync.Mutex
	sessions map[string]*session
	modern   map[string][]*session // internal sessions of modern requests, by principal
	closed   bool
	janitor  bool

	shared *sharedState // nil unless Options.Shared
}

// New returns a handler that serves each session with serve. Close it to
// end every session.
func New(serve ServeFunc, o Options) *Handler {
	o.defaults()
	ctx, cancel := context.WithCancel(context.Background())
	h := &Handler{serve: serve, log: o.Logger, opts: o, ctx: ctx, cancel: cancel, sessions: map[string]*session{},
		bytes: newBudget(o.MaxInflightBytes, o.MaxInflightBytesPerPrincipal, o.InflightWait)}
	if o.Shared != nil {
		h.shared = &sharedState{Shared: o.Shared}
		h.startShared()
	}
	return h
}

// Close ends every session and stream and waits for their ServeFuncs.
func (h *Handler) Close() error {
	h.mu.Lock()
	closed := h.closed
	h.closed = true
	h.mu.Unlock()
	h.cancel()
	h.wg.Wait()
	if h.shared != nil && !closed {
		// Gone at once (the heartbeat has stopped): streams of this
		// replica resumed elsewhere learn their requests will not be
		// answered, without waiting for the heartbeat to expire.
		ctx, cancel := context.WithTimeout(context.Background(), sharedTimeout)
		h.shared.Beat(ctx, 0)
		cancel()
	}
	return nil
}

// spawn runs fn on a goroutine Close waits for, unless the handler is
// closing (then fn does not run).
func (h *Handler) spawn(fn func()) {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return
	}
	h.wg.Add(1)
	h.mu.Unlock()
	go func() {
		defer h.wg.Done()
		fn()
	}()
}

// InFlight is the number of requests in progress, all sessions.
func (h *Handler) InFlight() int { return int(h.inflight.Load()) }

// Sessions is the number of live sessions.
func (h *Handler) Sessions() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.sessions)
}

// ServeHTTP implements http.Handler for the MCP endpoint.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !h.originOK(w, r) {
		return
	}
	if r.Method == http.MethodOptions {
		h.preflight(w, r)
		return
	}
	modern := isModernPost(r)
	if v := r.Header.Get("Mcp-Protocol-Version"); v != "" && !modern && mcp.IsModern(v) {
		unread(w, r)
		w.Header().Set("Allow", "POST")
		rpcError(w, http.StatusMethodNotAllowed, mcp.CodeInvalidRequest, r.Method+" is not part of "+v+": every message is a POST, and subscriptions/listen replaces the GET stream")
		return
	}
	if v := r.Header.Get("Mcp-Protocol-Version"); v != "" && !modern && !slices.Contains(mcp.SupportedVersions, v) {
		unread(w, r)
		rpcError(w, http.StatusBadRequest, mcp.CodeInvalidRequest, "unsupported MCP-Protocol-Version "+strconv.Quote(v)+"; this server speaks "+strings.Join(mcp.SupportedVersions, ", "))
		return
	}
	principal, ok := h.authenticate(w, r)
	if !ok {
		return
	}
	switch {
	case modern:
		h.postModern(w, r, principal)
		return
	}
	switch r.Method {
	case http.MethodPost:
		h.post(w, r, principal)
	case http.MethodGet:
		h.get(w, r, principal)
	case http.MethodDelete:
		h.delete(w, r, principal)
	default:
		w.Header().Set("Allow", "GET, POST, DELETE, OPTIONS")
		unread(w, r)
		rpcError(w, http.StatusMethodNotAllowed, mcp.CodeInvalidRequest, "method not allowed: use POST, GET or DELETE")
	}
}

// originOK refuses foreign browser origins (DNS rebinding: a web page must
// not drive a local server) and lets the browser show an allowed origin's
// page the answer (CORS).
func (h *Handler) originOK(w http.ResponseWriter, r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" {
		if h.opts.CheckHost != nil {
			if err := h.opts.CheckHost(r.Host); err != nil {
				unread(w, r)
				rpcError(w, http.StatusForbidden, mcp.CodeInvalidRequest, err.Error())
				return false
			}
		}
		return true
	}
	if !h.opts.AllowOrigin(o) {
		unread(w, r)
		rpcError(w, http.StatusForbidden, mcp.CodeInvalidRequest, "Origin "+strconv.Quote(o)+" is not allowed; only requests without an Origin, from loopback pages and from configured origins may use this endpoint")
		return false
	}
	hd := w.Header()
	hd.Set("Access-Control-Allow-Origin", o)
	hd.Add("Vary", "Origin")
	hd.Set("Access-Control-Expose-Headers", "Mcp-Session-Id, WWW-Authenticate")
	return true
}

// preflight answers a browser's CORS preflight for an allowed origin.
func (h *Handler) preflight(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("Access-Control-Allow-Methods", "GET, POST, DELETE")
	allow := "Authorization, Content-Type, Accept, Mcp-Session-Id, Mcp-Protocol-Version, Last-Event-ID, Mcp-Method, Mcp-Name"
	// A tool's Mcp-Param-* headers cannot be listed ahead: the ones asked
	// for are allowed.
	for _, v := range r.Header.Values("Access-Control-Request-Headers") {
		for _, name := range strings.Split(v, ",") {
			if name = strings.TrimSpace(name); len(name) > len("mcp-param-") && strings.EqualFold(name[:len("mcp-param-")], "mcp-param-") {
				allow += ", " + name
			}
		}
	}
	hd.Set("Access-Control-Allow-Headers", allow)
	hd.Set("Access-Control-Max-Age", "600")
	w.WriteHeader(http.StatusNoContent)
}

// authenticate runs on the headers alone: a refusal is sent without
// reading the body (see unread).
func (h *Handler) authenticate(w http.ResponseWriter, r *http.Request) (string, bool) {
	if n := len(r.Header["Authorization"]); n > 1 {
		// Which one would count differs between proxies and servers: refuse
		// the ambiguity rather than pick one.
		unread(w, r)
		rpcError(w, http.StatusBadRequest, mcp.CodeInvalidRequest, fmt.Sprintf("the request has %d Authorization headers; send exactly one", n))
		return "", false
	}
	if h.opts.Authenticate == nil {
		return "", true
	}
	p, err := h.opts.Authenticate(r)
	if err == nil {
		return p, true
	}
	var ae *AuthError
	if !errors.As(err, &ae) {
		ae = &AuthError{Status: http.StatusUnauthorized, Message: err.Error()}
	}
	for k, v := range ae.Header {
		w.Header()[k] = v
	}
	unread(w, r)
	rpcError(w, ae.Status, mcp.CodeInvalidRequest, ae.Message)
	return "", false
}

// sessionFor finds the session a request names and checks it belongs to
// the request's principal.
// With Options.Shared, a session another replica opened gets a local
// instance here.
func (h *Handler) sessionFor(w http.ResponseWriter, r *http.Request, sid, principal string) *session {
	s := h.session(sid)
	if s == nil && h.shared != nil {
		if s = h.restore(w, r, sid, principal); s == nil {
			return nil
		}
	}
	if s == nil {
		rpcError(w, http.StatusNotFound, mcp.CodeInvalidRequest, "unknown or ended session; initialize a new one")
		return nil
	}
	if s.info.Principal != principal {
		rpcError(w, http.StatusForbidden, mcp.CodeInvalidRequest, "this session was opened with other credentials; initialize a session of your own")
		return nil
	}
	if h.shared != nil {
		h.keepAlive(s)
	}
	return s
}

// incoming is what the handler reads of a client message.
type incoming struct {
	ID            json.RawMessage
	Method        string
	Params        json.RawMessage
	Meta          json.RawMessage // params._meta
	ProgressToken json.RawMessage
	RequestID     json.RawMessage // notifications/cancelled
}

func (m *incoming) hasID() bool { return len(m.ID) > 0 && !bytes.Equal(m.ID, []byte("null")) }

// parseIncoming reads what routing needs of a client message, without
// encoding/json (mcp.ParseMessage validates it in one pass).
func parseIncoming(body []byte) (incoming, error) {
	pm, err := mcp.ParseMessage(body)
	if err != nil {
		return incoming{}, err
	}
	m := incoming{ID: pm.ID, Method: pm.Method, Params: pm.Params}
	// One pass over params for both members (each mcp.Member is a pass,
	// over the arguments too); ParseMessage validated them, so the
	// values are skipped, not checked again. The first of a repeated
	// member counts, as with mcp.Member.
	wire.ValidMembers(pm.Params, func(k, v []byte) error {
		switch {
		case m.Meta == nil && wire.KeyIs(k, "_meta"):
			m.Meta = v
		case m.RequestID == nil && wire.KeyIs(k, "requestId"):
			m.RequestID = v
		}
		return nil
	})
	m.ProgressToken = mcp.Member(m.Meta, "progressToken")
	return m, nil
}

// readBody reads a POST body within the size limit and parses it; on a
// problem it answers and returns false.
func (h *Handler) readBody(w http.ResponseWriter, r *http.Request) ([]byte, incoming, bool) {
	if !isMedia(r.Header.Get("Content-Type"), "application/json") {
		unread(w, r)
		rpcError(w, http.StatusUnsupportedMediaType, mcp.CodeInvalidRequest, "Content-Type must be application/json")
		return nil, incoming{}, false
	}
	if r.ContentLength > int64(h.opts.MaxBodyBytes) {
		unread(w, r)
		rpcError(w, http.StatusRequestEntityTooLarge, mcp.CodeInvalidRequest, fmt.Sprintf("the message has %d bytes, over %s", r.ContentLength, h.opts.limitText("max_body_bytes", h.opts.MaxBodyBytes)))
		return nil, incoming{}, false
	}
	var body []byte
	var err error
	start := time.Now()
	src := io.Reader(r.Body)
	rc := http.NewResponseController(w)
	if rc.SetReadDeadline(start.Add(h.opts.BodyTimeout)) == nil {
		src = &rateReader{r: r.Body, rc: rc, deadline: start.Add(h.opts.BodyTimeout), rate: h.opts.MinBodyRate}
	}
	if n := r.ContentLength; n > 0 {
		// A stated length (checked above) is read into a buffer of its
		// size; net/http's body ends there.
		body = make([]byte, n)
		_, err = io.ReadFull(src, body)
	} else {
		body, err = io.ReadAll(http.MaxBytesReader(w, io.NopCloser(src), int64(h.opts.MaxBodyBytes)))
	}
	if err != nil {
		var mb *http.MaxBytesError
		switch {
		case errors.As(err, &mb):
			rpcError(w, http.StatusRequestEntityTooLarge, mcp.CodeInvalidRequest, "the message is over "+h.opts.limitText("max_body_bytes", h.opts.MaxBodyBytes))
		case errors.Is(err, os.ErrDeadlineExceeded):
			unread(w, r)
			msg := fmt.Sprintf("the request body did not arrive in time: %d of %s bytes in %s, where a body gets %s plus a second for every %d bytes (body_timeout, min_body_rate); "+
				"send the body as soon as the headers, or on a link that slow raise the limits",
				bodyRead(src), bodySize(r.ContentLength), time.Since(start).Round(time.Millisecond), h.opts.BodyTimeout, h.opts.MinBodyRate)
			if h.opts.Raise != nil {
				if how := h.opts.Raise("body_timeout"); how != "" {
					msg += "; " + how
				}
			}
			rpcError(w, http.StatusRequestTimeout, mcp.CodeInvalidRequest, msg)
		}
		return nil, incoming{}, false
	}
	// Cleared once read: net/http's check for a client that went away
	// (the request's context) reads the connection afterwards.
	rc.SetReadDeadline(time.Time{})
	m, err := parseIncoming(body)
	if err != nil {
		if t := bytes.TrimLeft(body, " \t\r\n"); len(t) > 0 && t[0] == '[' {
			rpcError(w, http.StatusBadRequest, mcp.CodeInvalidRequest, "JSON-RPC batches are not supported (MCP 2025-06-18 and later); send one message per POST")
			return nil, incoming{}, false
		}
		rpcError(w, http.StatusBadRequest, mcp.CodeParseError, "the body is not a JSON-RPC message: "+err.Error())
		return nil, incoming{}, false
	}
	if m.Method != "" {
		if err := mcp.CheckRequestID(m.ID); err != nil {
			rpcError(w, http.StatusBadRequest, mcp.CodeInvalidRequest, "invalid request: "+err.Error())
			return nil, incoming{}, false
		}
	}
	return body, m, true
}

func (h *Handler) post(w http.ResponseWriter, r *http.Request, principal string) {
	if !accepts(r, "application/json") || !accepts(r, "text/event-stream") {
		unread(w, r)
		rpcError(w, http.StatusNotAcceptable, mcp.CodeInvalidRequest, "Accept must list application/json and text/event-stream")
		return
	}
	body, m, ok := h.readBody(w, r)
	if !ok {
		return
	}
	isRequest := m.Method != "" && m.hasID()
	var s *session
	sid := r.Header.Get("Mcp-Session-Id")
	switch {
	case sid != "":
		if s = h.sessionFor(w, r, sid, principal); s == nil {
			return
		}
		if s.info.Legacy {
			rpcError(w, http.StatusBadRequest, mcp.CodeInvalidRequest, "this session uses the HTTP+SSE transport; POST to its endpoint")
			return
		}
	case isRequest && m.Method == mcp.MethodInitialize:
		var err error
		if s, err = h.newSession("", principal, false, false); err != nil {
			refuseSession(w, err)
			return
		}
		if h.shared != nil && !h.record(w, r, s) {
			return
		}
	default:
		if v := mcp.Member(mcp.Member(m.Params, "_meta"), mcp.MetaProtocolVersion); v != nil {
			// A stateless request whose version header is missing or
			// names the handshake era.
			writeStatus(w, http.StatusBadRequest, errorMessage(m.ID, mcp.HeaderMismatch("params._meta[%q] is %s but the MCP-Protocol-Version header is %q; send the same version in both",
				mcp.MetaProtocolVersion, v, r.Header.Get("Mcp-Protocol-Version"))))
			return
		}
		rpcError(w, http.StatusBadRequest, mcp.CodeInvalidRequest, "missing Mcp-Session-Id header: send initialize first")
		return
	}
	s.enter()
	defer s.leave()
	if !isRequest {
		if h.shared != nil && h.routeShared(w, s, m, body) {
			return
		}
		if m.Method == mcp.NotificationCancelled {
			s.conn.cancelled(m.RequestID)
		}
		if !s.conn.deliverMessage(r.Context(), body, true) {
			rpcError(w, http.StatusNotFound, mcp.CodeInvalidRequest, "the session ended")
			return
		}
		w.WriteHeader(http.StatusAccepted)
		return
	}
	if !h.admit(w, s) {
		return
	}
	defer h.release(s)
	// The body, and as much again for its answer (an echo, a file
	// written and read back): eight large calls at once must not all be
	// admitted on their bodies alone. An answer beyond that is charged as
	// it comes.
	held := 2 * int64(len(body))
	if !h.hold(w, r, s, held) {
		return
	}
	st := s.conn.open(m.ID, m.ProgressToken)
	defer h.charge(s, st, held, len(body))()
	if m.Method == mcp.MethodInitialize {
		if sid == "" {
			// A new session: its id goes out with a successful answer
			// only (see opened); one whose initialize failed (the
			// store did not take its record) ends unseen.
			st.init = true
		} else {
			w.Header().Set("Mcp-Session-Id", s.info.ID)
		}
	}
	h.deliver(w, r, s, st, body, http.StatusNotFound, mcp.CodeInvalidRequest, "the session ended")
}

// charge makes st's answer count against the bytes budget of s's
// principal, beside the held bytes the request reserved for its body;
// the func it returns gives back both.
func (h *Handler) charge(s *session, st *stream, held int64, body int) func() {
	st.mu.Lock()
	st.budget, st.principal, st.credit = h.bytes, s.info.Principal, int64(body)
	st.mu.Unlock()
	return func() {
		st.mu.Lock()
		n := st.charged
		st.budget, st.charged = nil, 0
		st.mu.Unlock()
		h.bytes.release(s.info.Principal, held+n)
	}
}

// deliver hands body to s's serve function (on this goroutine when its
// conn serves inline) and writes the answer; when the session's side is
// gone the request is refused with status, code and msg.
func (h *Handler) deliver(w http.ResponseWriter, r *http.Request, s *session, st *stream, body []byte, status, code int, msg string) {
	if deliver := s.conn.deliverFunc(true); deliver != nil {
		h.serveInline(w, r, s, st, deliver, body)
		return
	}
	if !s.conn.push(r.Context(), body) {
		s.conn.abandon(st)
		rpcError(w, status, code, msg)
		return
	}
	h.reply(w, r, s, st)
}

// admit counts a request against the limits, or refuses it.
func (h *Handler) admit(w http.ResponseWriter, s *session) bool {
	status, msg := h.count(s)
	if status != 0 {
		w.Header().Set("Retry-After", "1")
		rpcError(w, status, mcp.CodeBusy, msg)
		return false
	}
	return true
}

// count counts a request against the limits; over one, it says which
// (an HTTP status and a message) and counts nothing. The principal's cap
// comes before the global one: a principal over its own share is told
// so (429) and never takes a place another principal could use.
func (h *Handler) count(s *session) (int, string) {
	// A principal's internal modern session carries all its stateless
	// requests: only the principal's cap and the global one apply.
	if n := s.requests.Add(1); n > int64(h.opts.MaxRequestsPerSession) && !s.info.Modern {
		s.requests.Add(-1)
		return http.StatusTooManyRequests, "too many requests in progress in this session: " + h.opts.limitText("max_requests_per_session", h.opts.MaxRequestsPerSession)
	}
	pr := h.principalRequests(s)
	if n := pr.Add(1); n > int64(h.opts.MaxRequestsPerPrincipal) && h.opts.MaxRequestsPerPrincipal < h.opts.MaxRequests {
		pr.Add(-1)
		s.requests.Add(-1)
		return http.StatusTooManyRequests, fmt.Sprintf("too many requests in progress for %q across its sessions: %s", s.info.Principal, h.opts.limitText("max_requests_per_agent", h.opts.MaxRequestsPerPrincipal))
	}
	if n := h.inflight.Add(1); n > int64(h.opts.MaxRequests) {
		h.inflight.Add(-1)
		pr.Add(-1)
		s.requests.Add(-1)
		return http.StatusServiceUnavailable, "too many requests in progress: " + h.opts.limitText("max_requests", h.opts.MaxRequests)
	}
	return 0, ""
}

func (h *Handler) release(s *session) {
	s.requests.Add(-1)
	h.principalRequests(s).Add(-1)
	h.inflight.Add(-1)
}

// principalRequests is the count of requests in progress of s's
// principal (principals are the configured agents: a bounded set).
func (h *Handler) principalRequests(s *session) *atomic.Int64 {
	if c := s.principalReqs; c != nil {
		return c
	}
	c, _ := h.perReq.LoadOrStore(s.info.Principal, new(atomic.Int64))
	return c.(*atomic.Int64)
}

// hold takes n bytes, what a request needs, from the in-flight budget,
// waiting briefly for room; over it, it answers 503 (or 429 when the
// principal's own share is full) with Retry-After and returns false.
func (h *Handler) hold(w http.ResponseWriter, r *http.Request, s *session, n int64) bool {
	ok, full := h.bytes.acquire(r.Context(), s.info.Principal, n)
	if ok {
		return true
	}
	mine, all := h.bytes.held(s.info.Principal)
	w.Header().Set("Retry-After", "2")
	if full == "agent" {
		rpcError(w, http.StatusTooManyRequests, mcp.CodeBusy, fmt.Sprintf("too many bytes in flight for %q (%d held, this request needs %d: its body, and as much for its answer): %s; retry once its calls in progress finish",
			s.info.Principal, mine, n, h.opts.limitText("max_inflight_bytes_per_agent", int(h.opts.MaxInflightBytesPerPrincipal))))
		return false
	}
	rpcError(w, http.StatusServiceUnavailable, mcp.CodeBusy, fmt.Sprintf("too many bytes in flight (%d held, this request needs %d: its body, and as much for its answer): %s",
		all, n, h.opts.limitText("max_inflight_bytes", int(h.opts.MaxInflightBytes))))
	return false
}

// serveInline serves a request on its POST's own goroutine (the server's
// Deliver), then answers with JSON as reply does. A message other than the
// answer arriving meanwhile (progress, a log line, a request to the
// client) starts the SSE reply on another goroutine at once, so nothing
// waits for the request to finish; this goroutine then waits for that reply.
func (h *Handler) serveInline(w http.ResponseWriter, r *http.Request, s *session, st *stream, deliver func([]byte) error, body []byte) {
	st.mu.Lock()
	st.inline = true
	st.startReply = func() {
		defer close(st.replying)
		h.reply(w, r, s, st)
	}
	st.mu.Unlock()
	stop := context.AfterFunc(r.Context(), func() {
		st.mu.Lock()
		sse := st.sse
		st.mu.Unlock()
		if !sse || st.modern { // else its client has an event id, and pump waits for a resume
			h.gone(s, st)
		}
	})
	err := deliver(body)
	stop()
	st.mu.Lock()
	st.inline = false
	replying := st.replying
	st.mu.Unlock()
	if replying != nil {
		<-replying
		return
	}
	if err != nil {
		s.conn.abandon(st)
		rpcError(w, http.StatusNotFound, mcp.CodeInvalidRequest, "the session ended")
		return
	}
	h.reply(w, r, s, st)
}

// reply waits for the first message of a request's stream and answers with
// JSON if that is the response, else with an SSE stream. A small response
// that comes first is written by the goroutine that produced it (see
// stream.add), which saves a goroutine switch on the common path.
func (h *Handler) reply(w http.ResponseWriter, r *http.Request, s *session, st *stream) {
	st.mu.Lock()
	st.direct = w
	st.mu.Unlock()
	for {
		st.mu.Lock()
		n, done, ch := len(st.events), st.done, st.waitCh()
		if st.replied {
			st.mu.Unlock()
			return
		}
		if n == 1 && done {
			data := st.events[0].data
			st.events, st.direct = nil, nil
			st.mu.Unlock()
			s.conn.finished(st, false)
			if st.init && !h.opened(w, s, data) {
				return
			}
			if st.modern {
				writeStatus(w, answerStatus(data), data)
				return
			}
			writeJSON(w, data)
			return
		}
		if n > 0 {
			st.sse, st.direct = true, nil
			st.mu.Unlock()
			if st.init {
				w.Header().Set("Mcp-Session-Id", s.info.ID)
			}
			if h.shared != nil {
				// Recorded before the client sees an id of it, so another
				// replica can resume it; copied as it grows.
				if err := h.storeHead(r.Context(), s, st); err != nil {
					h.log.Warn("cannot record a response stream in the session store; if this replica dies its client cannot resume it elsewhere", "session", s.info.ID, "error", err)
				} else {
					h.spawn(func() { h.mirror(s, st) })
				}
			}
			break
		}
		st.mu.Unlock()
		select {
		case <-ch:
		case <-r.Context().Done():
			h.gone(s, st) // the client never learned an event id: nothing to resume
			return
		case <-s.conn.done:
			st.mu.Lock()
			replied := st.replied
			st.direct = nil
			st.mu.Unlock()
			if !replied {
				rpcError(w, http.StatusNotFound, mcp.CodeInvalidRequest, "the session ended")
			}
			return
		case <-h.ctx.Done():
			s.conn.abandon(st)
			return
		}
	}
	if !st.modern { // modern streams are not resumable
		s.conn.resumable(st)
	}
	h.pump(w, r, s, st, 0, false)
}

// opened finishes a new session's initialize: a successful answer carries
// the session id; a failed one ends the session, and its id is never sent.
func (h *Handler) opened(w http.ResponseWriter, s *session, answer []byte) bool {
	if pm, err := mcp.ParseMessage(answer); err == nil && pm.Error == nil {
		w.Header().Set("Mcp-Session-Id", s.info.ID)
		return true
	}
	h.endLocal(s)
	if h.shared != nil {
		h.forget(s.info.ID)
	}
	writeJSON(w, answer)
	return false
}

// gone cancels a request whose client went away before its answer, as if
// the client had sent notifications/cancelled: the server side stops, and
// a gateway cancels the call upstream. A request whose answer is out, or
// on its way to a stream someone still reads, is left alone.
func (h *Handler) gone(s *session, st *stream) {
	if s.conn.take(st) {
		msg := []byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":` + string(st.rid) + `,"reason":"the client disconnected"}}`)
		ctx, cancel := context.WithTimeout(h.ctx, 5*time.Second)
		if !s.conn.deliverMessage(ctx, msg, false) {
			h.log.Debug("a disconnected client's request could not be cancelled: the session ended", "session", s.info.ID)
		}
		cancel()
	}
	s.conn.abandon(st)
}

// awaitResume gives the client of a request's SSE stream that went away
// (or was closed for polling) ResumeGrace to resume it; a stream nobody
// resumed by then cancels its request (gone). With Options.Shared the
// stream may be resumed on another replica, which this one cannot see,
// so its request runs on.
func (h *Handler) awaitResume(s *session, st *stream, me int, legacy bool) {
	if legacy || st.key == "" || h.shared != nil {
		return
	}
	h.spawn(func() {
		t := time.NewTimer(h.opts.ResumeGrace)
		defer t.Stop()
		select {
		case <-t.C:
		case <-s.conn.done:
			return
		case <-h.ctx.Done():
			return
		}
		st.mu.Lock()
		resumed := st.owner != me
		st.mu.Unlock()
		if !resumed {
			h.gone(s, st)
		}
	})
}

// unread readies the refusal of a request whose body is still unread:
// the connection closes after the answer, so net/http does not read the
// body first to reuse it (a client trickling a body would hold the
// refusal, and the connection, for as long as it liked).
// HTTP/2 needs none of this: a stream's unread body costs nothing but its
// flow-control window, and Connection: close there would end every stream.
func unread(w http.ResponseWriter, r *http.Request) {
	if r.ProtoMajor == 1 && r.ContentLength != 0 {
		w.Header().Set("Connection", "close")
		// net/http still reads a little of an unread body when the
		// handler is done (to close it cleanly): a read deadline already
		// passed makes that end at once.
		http.NewResponseController(w).SetReadDeadline(time.Now())
	}
}

// rateReader reads a body under a read deadline that each byte read
// pushes back by its share at the minimum rate.
type rateReader struct {
	r        io.Reader
	rc       *http.ResponseController
	deadline time.Time
	rate     int
	n        int64
}

func (rr *rateReader) Read(p []byte) (int, error) {
	n, err := rr.r.Read(p)
	if n > 0 {
		rr.n += int64(n)
		rr.deadline = rr.deadline.Add(time.Duration(int64(n) * int64(time.Second) / int64(rr.rate)))
		rr.rc.SetReadDeadline(rr.deadline)
	}
	return n, err
}

// bodyRead is how much of a body src read; bodySize a stated length.
func bodyRead(src io.Reader) int64 {
	if rr, ok := src.(*rateReader); ok {
		return rr.n
	}
	return 0
}

func bodySize(n int64) string {
	if n < 0 {
		return "an unstated number of"
	}
	return strconv.FormatInt(n, 10)
}

func writeJSON(w http.ResponseWriter, data []byte) {
	hd := w.Header()
	hd["Content-Type"] = jsonType
	hd["Content-Length"] = []string{strconv.Itoa(len(data))}
	w.Write(data)
}

var jsonType = []string{"application/json"}

func (h *Handler) get(w http.ResponseWriter, r *http.Request, principal string) {
	if !accepts(r, "text/event-stream") {
		rpcError(w, http.StatusNotAcceptable, mcp.CodeInvalidRequest, "Accept must list text/event-stream")
		return
	}
	sid := r.Header.Get("Mcp-Session-Id")
	if sid == "" {
		rpcError(w, http.StatusBadRequest, mcp.CodeInvalidRequest, "missing Mcp-Session-Id header: send initialize first")
		return
	}
	s := h.sessionFor(w, r, sid, principal)
	if s == nil {
		return
	}
	s.enter()
	defer s.leave()
	if h.shared != nil && h.getShared(w, r, s) {
		return
	}
	st, after := s.conn.standalone, -1
	if last := r.Header.Get("Last-Event-Id"); last != "" {
		var ok bool
		if st, after, ok = s.conn.lookup(last); !ok {
			rpcError(w, http.StatusBadRequest, mcp.CodeInvalidRequest, "unknown Last-Event-ID: the stream is gone or the id was never issued")
			return
		}
	}
	h.pump(w, r, s, st, after, false)
}

func (h *Handler) delete(w http.ResponseWriter, r *http.Request, principal string) {
	sid := r.Header.Get("Mcp-Session-Id")
	if sid == "" {
		rpcError(w, http.StatusBadRequest, mcp.CodeInvalidRequest, "missing Mcp-Session-Id header")
		return
	}
	found := h.sessionFor(w, r, sid, principal)
	if found == nil {
		return
	}
	if h.shared != nil {
		// The record first: a session deleted here but not there would
		// come back on the next request.
		ctx, cancel := context.WithTimeout(r.Context(), sharedTimeout)
		err := h.shared.Delete(ctx, sid)
		cancel()
		if err != nil {
			w.Header().Set("Retry-After", "2")
			rpcError(w, http.StatusServiceUnavailable, mcp.CodeInternalError, "cannot end the session: the session store does not answer: "+err.Error()+"; retry the DELETE")
			return
		}
		h.shared.tombstone(sid)
		h.endLocal(found)
		h.send("", busMessage(msgEnd, sid, nil))
		w.WriteHeader(http.StatusNoContent)
		return
	}
	h.mu.Lock()
	s := h.sessions[sid]
	delete(h.sessions, sid)
	h.mu.Unlock()
	if s == nil {
		rpcError(w, http.StatusNotFound, mcp.CodeInvalidRequest, "unknown or ended session")
		return
	}
	s.end()
	w.WriteHeader(http.StatusNoContent)
}

// pump writes a stream to one connection: the events after `after` (for
// the standalone stream, -1 means those no connection got yet), then new
// ones as they come, until the stream is complete, the connection goes, a
// newer connection takes the stream over, or the polling limit is reached.
// legacy writes the 2024-11-05 transport's "event: message" events.
func (h *Handler) pump(w http.ResponseWriter, r *http.Request, s *session, st *stream, after int, legacy bool) {
	rc := http.NewResponseController(w)
	st.mu.Lock()
	if after < 0 {
		after = st.sent
	}
	st.owner++
	me := st.owner
	st.wake()
	st.mu.Unlock()

	startSSE(w)
	var buf []byte
	if legacy {
		buf = append(buf, "event: endpoint\ndata: "...)
		buf = append(buf, h.opts.LegacyEndpoint...)
		buf = append(buf, "?sessionId="...)
		buf = append(buf, s.info.ID...)
		buf = append(buf, "\n\n"...)
	} else if !st.modern {
		// The priming event: an id to resume from before any message (SEP-1699).
		buf = appendEvent(nil, st.id, after, nil)
	}
	tick, stopTick := h.keepAliveTimer(st.modern)
	defer stopTick()
	written := 0
	for {
		st.mu.Lock()
		if st.owner != me {
			st.mu.Unlock()
			return // a newer connection resumed this stream
		}
		if len(st.events) > 0 && st.events[0].seq > after+1 {
			h.log.Warn("SSE buffer overflowed; events were lost", "session", s.info.ID, "stream", st.id, "lost", st.events[0].seq-after-1)
		}
		for _, ev := range st.events {
			if ev.seq <= after {
				continue
			}
			if h.opts.PollAfter > 0 && written >= h.opts.PollAfter {
				break
			}
			if legacy {
				buf = appendLegacyEvent(buf, ev.data)
			} else if st.modern {
				buf = appendData(buf, ev.data)
			} else {
				buf = appendEvent(buf, st.id, ev.seq, ev.data)
			}
			after = ev.seq
			written++
		}
		st.sent = max(st.sent, after)
		complete := st.done && after == st.next-1
		poll := !legacy && h.opts.PollAfter > 0 && written >= h.opts.PollAfter && !complete
		ch := st.waitCh()
		st.mu.Unlock()
		if poll {
			buf = append(buf, "retry: "...)
			buf = strconv.AppendInt(buf, h.opts.PollRetry.Milliseconds(), 10)
			buf = append(buf, "\n\n"...)
		}
		if len(buf) > 0 {
			if !flushEvents(w, rc, buf) {
				return
			}
			buf = buf[:0]
		}
		if complete {
			s.conn.finished(st, true)
			return
		}
		if poll {
			h.awaitResume(s, st, me, legacy) // the client comes back with Last-Event-ID
			return
		}
		select {
		case <-ch:
		case <-tick:
			buf = append(buf, keepAliveComment...)
		case <-r.Context().Done():
			if st.modern {
				h.gone(s, st) // closing the stream cancels the request
				return
			}
			h.awaitResume(s, st, me, legacy)
			return
		case <-s.conn.done:
			return
		case <-h.ctx.Done():
			return
		}
	}
}

// startSSE answers with an SSE stream (X-Accel-Buffering: a proxy such
// as nginx must pass each event on as it comes).
func startSSE(w http.ResponseWriter) {
	hd := w.Header()
	hd.Set("Content-Type", "text/event-stream")
	hd.Set("Cache-Control", "no-cache")
	hd.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
}

// flushEvents writes events to the client within a bounded time; false
// when the connection is gone or stuck.
func flushEvents(w http.ResponseWriter, rc *http.ResponseController, buf []byte) bool {
	rc.SetWriteDeadline(time.Now().Add(30 * time.Second))
	if _, err := w.Write(buf); err != nil {
		return false
	}
	return rc.Flush() == nil
}

// appendEvent writes one SSE event; data nil makes a priming event.
func appendEvent(b []byte, stream string, seq int, data []byte) []byte {
	b = append(b, "id: "...)
	b = append(b, stream...)
	b = append(b, '-')
	b = strconv.AppendInt(b, int64(seq), 10)
	b = append(b, '\n')
	if data == nil {
		return append(b, "data:\n\n"...)
	}
	return appendData(b, data)
}

func appendLegacyEvent(b []byte, data []byte) []byte {
	b = append(b, "event: message\n"...)
	return appendData(b, data)
}

// appendData writes a JSON-RPC message as the event's data lines. A CR
// ends an SSE line as LF does, and a server's result passed on as it came
// (pretty-printed by an HTTP upstream) may hold one as JSON white space:
// written as is, a client would read the rest of that line as a field of
// its own and lose it. Outside strings, where JSON allows no raw CR, it
// is white space either way, so it becomes a line break.
func appendData(b, data []byte) []byte {
	if bytes.IndexByte(data, '\r') >= 0 {
		data = bytes.ReplaceAll(data, []byte{'\r'}, []byte{'\n'})
	}
	for {
		line := data
		i := bytes.IndexByte(data, '\n')
		if i >= 0 {
			line = data[:i]
		}
		b = append(b, "data: "...)
		b = append(b, line...)
		b = append(b, '\n')
		if i < 0 {
			break
		}
		data = data[i+1:]
	}
	return append(b, '\n')
}

// LegacySSE serves the 2024-11-05 transport's SSE endpoint: a GET opens a
// session, whose first event names the endpoint to POST messages to, and
// every server message follows on this one stream. The session ends with
// the connection.
func (h *Handler) LegacySSE(w http.ResponseWriter, r *http.Request) {
	principal, ok := h.legacyEntry(w, r, http.MethodGet, "the SSE endpoint takes GET; POST messages to the endpoint its first event names")
	if !ok {
		return
	}
	s, err := h.newSession("", principal, true, false)
	if err != nil {
		refuseSession(w, err)
		return
	}
	if h.shared != nil && !h.record(w, r, s) {
		return
	}
	s.enter()
	defer func() {
		s.leave()
		h.mu.Lock()
		if h.sessions[s.info.ID] == s {
			delete(h.sessions, s.info.ID)
		}
		h.mu.Unlock()
		s.end()
		if h.shared != nil {
			h.forget(s.info.ID) // the stream was the session
		}
	}()
	if h.shared != nil {
		// The record lives as long as the stream: messages for the
		// session may reach any replica.
		h.spawn(func() {
			t := time.NewTicker(max(h.opts.IdleTimeout/4, 10*time.Millisecond))
			defer t.Stop()
			for {
				select {
				case <-t.C:
					h.keepAlive(s)
				case <-s.conn.done:
					return
				case <-h.ctx.Done():
					return
				}
			}
		})
	}
	h.pump(w, r, s, s.conn.standalone, -1, true)
}

// LegacyMessage serves the 2024-11-05 transport's message endpoint: a POST
// with ?sessionId= delivers one message; whatever answers it travels on
// the session's SSE stream, so the POST gets 202.
func (h *Handler) LegacyMessage(w http.ResponseWriter, r *http.Request) {
	principal, ok := h.legacyEntry(w, r, http.MethodPost, "the message endpoint takes POST")
	if !ok {
		return
	}
	sid := r.URL.Query().Get("sessionId")
	if sid == "" {
		rpcError(w, http.StatusBadRequest, mcp.CodeInvalidRequest, "missing sessionId: open the SSE endpoint first and POST to the URL its endpoint event gives")
		return
	}
	if h.shared != nil && h.session(sid) == nil {
		h.forwardLegacy(w, r, sid, principal)
		return
	}
	s := h.sessionFor(w, r, sid, principal)
	if s == nil {
		return
	}
	if !s.info.Legacy {
		rpcError(w, http.StatusBadRequest, mcp.CodeInvalidRequest, "this session uses streamable HTTP; POST to the MCP endpoint with Mcp-Session-Id")
		return
	}
	body, m, ok := h.readBody(w, r)
	if !ok {
		return
	}
	s.enter()
	defer s.leave()
	if m.Method != "" && m.hasID() {
		if !h.admit(w, s) {
			return
		}
		n := int64(len(body))
		if !h.hold(w, r, s, n) {
			h.release(s)
			return
		}
		// The request is counted until its answer is produced, on whatever
		// goroutine serves it.
		s.conn.countLegacy(m.ID, func() { h.release(s); h.bytes.release(s.info.Principal, n) })
	}
	if !h.legacyPush(r.Context(), s, m, body) {
		rpcError(w, http.StatusNotFound, mcp.CodeInvalidRequest, "the session ended")
		return
	}
	w.WriteHeader(http.StatusAccepted)
}

// legacyPush hands a legacy session's message to its server side, on a
// goroutine of its own: the answer goes to the stream, and the POST must
// not wait for a long tool call.
func (h *Handler) legacyPush(ctx context.Context, s *session, m incoming, body []byte) bool {
	if m.Method == mcp.NotificationCancelled {
		s.conn.cancelled(m.RequestID)
	}
	return s.conn.push(ctx, body)
}

// legacyEntry admits a request to a legacy endpoint: an allowed origin,
// credentials, the endpoint's one method (else wrong says which).
func (h *Handler) legacyEntry(w http.ResponseWriter, r *http.Request, method, wrong string) (string, bool) {
	if !h.originOK(w, r) {
		return "", false
	}
	principal, ok := h.authenticate(w, r)
	if !ok {
		return "", false
	}
	if r.Method != method {
		w.Header().Set("Allow", method)
		unread(w, r)
		rpcError(w, http.StatusMethodNotAllowed, mcp.CodeInvalidRequest, wrong)
		return "", false
	}
	return principal, true
}

func (h *Handler) session(id string) *session {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.sessions[id]
}

// newSession makes a session: a new one (id ""), or the local instance of
// one another replica opened (restored).
func (h *Handler) newSession(id, principal string, legacy, restored bool) (*session, error) {
	if id == "" {
		var raw [16]byte
		rand.Read(raw[:])
		id = hex.EncodeToString(raw[:])
	}
	s := &session{info: Session{ID: id, Principal: principal, Legacy: legacy, Restored: restored}, conn: newSessionConn(&h.opts, legacy)}
	c, _ := h.perReq.LoadOrStore(principal, new(atomic.Int64))
	s.principalReqs = c.(*atomic.Int64)
	s.conn.log = h.log.With("session", s.info.ID)
	s.touch()
	s.stored.Store(time.Now().UnixNano())
	ctx, cancel := context.WithCancel(h.ctx)
	s.cancel = cancel
	if h.shared != nil && !legacy {
		// Stream names carry the replica and this instance, so a later
		// instance of the session here does not reuse names in the store.
		var inst [3]byte
		rand.Read(inst[:])
		s.conn.replica = h.shared.replica
		s.conn.streamPrefix = h.shared.replica + "." + hex.EncodeToString(inst[:])
		s.conn.out = make(chan []byte, h.opts.ReplayEvents)
		s.conn.overflowed = func() { h.forget(s.info.ID) }
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		cancel()
		return nil, errors.New("the server is shutting down")
	}
	if old := h.sessions[id]; old != nil && restored {
		cancel()
		return old, nil // a concurrent request restored it first
	}
	if restored && h.shared.ended(id) {
		cancel()
		return nil, errEnded // deleted while this replica looked it up
	}
	if err := h.room(principal, restored); err != nil {
		cancel()
		return nil, err
	}
	h.sessions[s.info.ID] = s
	if !h.janitor {
		h.janitor = true
		h.wg.Add(1)
		go h.sweep()
	}
	if s.conn.out != nil {
		h.wg.Add(1)
		go h.outbox(s)
	}
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		err := h.serve(ctx, s.conn, &s.info)
		s.conn.Close()
		h.mu.Lock()
		if h.sessions[s.info.ID] == s {
			delete(h.sessions, s.info.ID)
		}
		h.mu.Unlock()
		if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, context.Canceled) && !errors.Is(err, mcp.ErrClosed) {
			h.log.Debug("session ended", "session", s.info.ID, "error", err)
		}
	}()
	return s, nil
}

// room says whether another session may have an instance here. Sessions
// this replica opened count against MaxSessions. Instances of sessions
// other replicas opened (with no sticky routing every replica ends up
// with one of most sessions) are a cache of up to as many again: the
// least recently used idle one makes room, since its session lives in the
// store and comes back on its next request. So the cluster holds
// MaxSessions per replica. A principal's sessions opened here count
// against MaxSessionsPerPrincipal too, before the global cap. Called with
// h.mu held; the error is a *LimitError.
func (h *Handler) room(principal string, restored bool) error {
	n, mine := 0, 0
	var lru *session
	for _, s := range h.sessions {
		if s.info.Restored != restored {
			continue
		}
		n++
		if s.info.Principal == principal {
			mine++
		}
		if restored && s.active.Load() == 0 && s.requests.Load() == 0 && (lru == nil || s.used.Load() < lru.used.Load()) {
			lru = s
		}
	}
	// A principal's cap as large as the global one says nothing more.
	if !restored && h.opts.MaxSessionsPerPrincipal < h.opts.MaxSessions && mine >= h.opts.MaxSessionsPerPrincipal {
		return &LimitError{Status: http.StatusTooManyRequests, Message: fmt.Sprintf("too many sessions for %q: %s; or end its idle sessions with DELETE", principal, h.opts.limitText("max_sessions_per_agent", h.opts.MaxSessionsPerPrincipal))}
	}
	if n < h.opts.MaxSessions {
		return nil
	}
	if lru == nil {
		return &LimitError{Status: http.StatusServiceUnavailable, Message: fmt.Sprintf("too many sessions: %s; or end idle sessions with DELETE", h.opts.limitText("max_sessions", h.opts.MaxSessions))}
	}
	delete(h.sessions, lru.info.ID)
	lru.end()
	return nil
}

// LimitError is a request refused by a limit: Status is 503 for a
// global cap, 429 for one of the caller's own.
type LimitError struct {
	Status  int
	Message string
}

func (e *LimitError) Error() string { return e.Message }

// refuseSession answers an initialize newSession refused.
func refuseSession(w http.ResponseWriter, err error) {
	status := http.StatusServiceUnavailable
	var le *LimitError
	if errors.As(err, &le) {
		status = le.Status
	}
	w.Header().Set("Retry-After", "5")
	rpcError(w, status, mcp.CodeInternalError, err.Error())
}

// sweep ends sessions idle for longer than the idle timeout.
func (h *Handler) sweep() {
	defer h.wg.Done()
	t := time.NewTicker(max(h.opts.IdleTimeout/4, 10*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-h.ctx.Done():
			return
		case <-t.C:
		}
		cutoff := time.Now().Add(-h.opts.IdleTimeout).UnixNano()
		h.mu.Lock()
		for id, s := range h.sessions {
			if s.active.Load() == 0 && s.used.Load() < cutoff {
				delete(h.sessions, id)
				s.end()
			}
		}
		h.sweepModern(cutoff)
		h.mu.Unlock()
	}
}

// errEnded refuses to restore a session deleted meanwhile.
var errEnded = errors.New("the session ended")

// session is one MCP session served over HTTP.
type session struct {
	info      Session
	conn      *sessionConn
	cancel    context.CancelFunc
	active    atomic.Int32 // exchanges in progress, open streams included
	requests  atomic.Int64 // requests in progress (admit)
	used      atomic.Int64 // unix nanos of the last exchange
	stored    atomic.Int64 // unix nanos of the last Shared.Touch (keepAlive)
	storeDown atomic.Int64 // unix nanos of the first failed Touch in a row; 0: none

	// principalReqs is Handler.perReq's count for the session's principal.
	principalReqs *atomic.Int64
}

func (s *session) touch() { s.used.Store(time.Now().UnixNano()) }
func (s *session) enter() { s.active.Add(1); s.touch() }
func (s *session) leave() { s.active.Add(-1); s.touch() }
func (s *session) end()   { s.cancel(); s.conn.Close() }

// stream is one SSE stream of a session: a request's reply or the
// standalone stream. Events are numbered from 1; the id of event n is
// "<stream id>-<n>", and "<stream id>-0" is the start.
type stream struct {
	id  string
	key string          // the request id's key; "" for the standalone stream
	rid json.RawMessage // the request's id, to cancel it (gone)
	// init: the initialize of a new session, whose id goes out with a
	// successful answer only (Handler.opened).
	init bool
	// modern: a stateless request's stream: not resumable, no event ids,
	// its JSON answer's status from its error (answerStatus), and its
	// client going away cancels it at once.
	modern bool

	mu     sync.Mutex
	events []streamEvent // kept for writing and replay, oldest first
	bytes  int
	next   int // sequence number of the next event
	sent   int // highest sequence number written to a connection
	done   bool
	sse    bool // the reply became an SSE stream (and can be resumed)
	orphan bool // nobody can receive it: drop what comes
	// budget, while set, is charged for what the request's answer holds
	// beyond credit, the part reserved with the request (charged bytes so
	// far), for principal: see Handler.hold.
	budget    *budget
	principal string
	credit    int64
	charged   int64
	// direct is the waiting POST's writer while no message has arrived;
	// replied says the response went out through it.
	direct  http.ResponseWriter
	replied bool
	// inline: the request is being served on its POST's goroutine (see
	// serveInline); startReply starts its SSE reply, replying is closed
	// when that ends (nil until started).
	inline     bool
	startReply func()
	replying   chan struct{}
	owner      int           // the connection writing the stream; a resume takes over
	mirrored   int           // highest seq copied to the shared store (Handler.mirror)
	changed    chan struct{} // closed by wake; made when someone waits
}

// waitCh returns the channel the next wake closes. Called with mu held.
func (st *stream) waitCh() <-chan struct{} {
	if st.changed == nil {
		st.changed = make(chan struct{})
	}
	return st.changed
}

type streamEvent struct {
	seq  int
	data []byte
}

func newStream(id, key string) *stream {
	return &stream{id: id, key: key, next: 1}
}

// wake tells the stream's writers that something changed. Called with mu held.
func (st *stream) wake() {
	if st.changed != nil {
		close(st.changed)
		st.changed = nil
	}
}

// maxDirect bounds a response written by the goroutine that produced it;
// larger ones go through the request's own goroutine, so that a slow
// client cannot stall the session's writer.
const maxDirect = 64 << 10

// errOverflow ends a session whose client stopped reading a request's stream.
var errOverflow = errors.New("the client did not read its stream")

// add appends a message to the stream. It fails with errOverflow when a
// request's stream holds more unread events than the limits allow.
func (st *stream) add(data []byte, final bool, o *Options) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.orphan || st.done {
		return nil
	}
	if st.budget != nil {
		n := int64(len(data))
		paid := min(n, st.credit)
		st.credit -= paid
		if n -= paid; n > 0 {
			st.budget.charge(st.principal, n)
			st.charged += n
		}
	}
	if st.inline && !final && st.replying == nil {
		st.replying = make(chan struct{})
		go st.startReply()
	}
	if final && st.direct != nil && !st.init && len(st.events) == 0 && len(data) <= maxDirect {
		// The handler is parked in reply and does not touch w until woken.
		if st.modern {
			writeStatus(st.direct, answerStatus(data), data)
		} else {
			writeJSON(st.direct, data)
		}
		http.NewResponseController(st.direct).Flush()
		st.direct, st.replied, st.done = nil, true, true
		st.wake()
		return nil
	}
	st.events = append(st.events, streamEvent{seq: st.next, data: data})
	st.next++
	st.bytes += len(data)
	st.done = final
	for len(st.events) > 1 && (len(st.events) > o.ReplayEvents || st.bytes > o.ReplayBytes) {
		if st.key != "" && st.events[0].seq > st.sent && st.events[0].seq > st.mirrored {
			// Unread, and not in the shared store: dropping it would lose
			// part of a request's answer.
			st.wake()
			return errOverflow
		}
		st.bytes -= len(st.events[0].data)
		st.events[0] = streamEvent{}
		st.events = st.events[1:]
	}
	st.wake()
	return nil
}

// sessionConn is the mcp.Conn a session is served on: POST bodies go in,
// and what the server side writes is routed to streams.
type sessionConn struct {
	opts    *Options
	log     hclog.Logger
	legacy  bool // everything goes to the standalone stream
	modern  bool // an internal session of modern requests (Session.Modern)
	in      chan []byte
	done    chan struct{}
	once    sync.Once
	deliver atomic.Pointer[func([]byte) error] // the server's Peer.Deliver (mcp.PushConn)
	checked atomic.Pointer[func([]byte) error] // for a POST's body (mcp.CheckedPushConn)

	mu         sync.Mutex
	standalone *stream
	streams    map[string]*stream // resumable streams by id
	byReq      map[string]*stream // open requests by id key
	byToken    map[string]*stream // open requests by progress token key
	pending    []*stream          // open requests, oldest first
	finishedQ  []*stream          // completed resumable streams, kept for late resumes
	nextID     int
	legacyReqs map[string]func()            // legacy requests in progress: release on answer
	params     map[string]map[string]string // modern requests' Mcp-Param-* headers, by id key

	// With Options.Shared: stream ids and the ids of requests to the
	// client name the replica, and the standalone stream's messages go
	// to the store through out (see Handler.outbox).
	replica      string
	streamPrefix string
	out          chan []byte
	overflowed   func() // the session ended for a client that stopped reading
}

// maxFinished bounds the completed streams a session keeps for resumption.
const maxFinished = 16

func newSessionConn(o *Options, legacy bool) *sessionConn {
	sc := &sessionConn{
		opts:    o,
		log:     o.Logger,
		legacy:  legacy,
		in:      make(chan []byte, 16),
		done:    make(chan struct{}),
		streams: map[string]*stream{},
		byReq:   map[string]*stream{},
		byToken: map[string]*stream{},
	}
	sc.standalone = newStream("g", "")
	if legacy {
		// The one stream carries answers too: a client that stops reading
		// it loses its session rather than its answers (see add).
		sc.standalone.key = "legacy"
	}
	sc.standalone.sse = true
	sc.streams["g"] = sc.standalone
	return sc
}

var (
	_ mcp.Conn         = (*sessionConn)(nil)
	_ mcp.WriteBounder = (*sessionConn)(nil)
	_ mcp.PushConn     = (*sessionConn)(nil)

	_ mcp.CheckedPushConn = (*sessionConn)(nil)
)

func (sc *sessionConn) ReadMessage() ([]byte, error) {
	select {
	case m := <-sc.in:
		return m, nil
	case <-sc.done:
		return nil, io.EOF
	}
}

func (sc *sessionConn) Close() error {
	sc.once.Do(func() {
		close(sc.done)
		sc.mu.Lock()
		rel := sc.legacyReqs
		sc.legacyReqs = nil
		sc.mu.Unlock()
		for _, f := range rel {
			f()
		}
	})
	return nil
}

// SetDeliver takes the server's Peer.Deliver; see mcp.PushConn.
func (sc *sessionConn) SetDeliver(deliver func([]byte) error) { sc.deliver.Store(&deliver) }

// SetDeliverChecked takes the deliver for a POST's body, which readBody
// checked whole (parseIncoming) and which nothing reads after it is
// delivered; see mcp.CheckedPushConn. The Peer sets it before SetDeliver,
// so a handler that sees the one sees the other.
func (sc *sessionConn) SetDeliverChecked(deliver func([]byte) error) { sc.checked.Store(&deliver) }

// deliverFunc is the server's Deliver, or nil before the server started;
// with body, the one for a POST's body where the server has it.
func (sc *sessionConn) deliverFunc(body bool) func([]byte) error {
	if d := sc.deliver.Load(); d != nil {
		if c := sc.checked.Load(); body && c != nil {
			return *c
		}
		return *d
	}
	return nil
}

// deliverMessage hands a notification or response to the server side,
// inline where it can; body: msg is a POST's body (see deliverFunc).
func (sc *sessionConn) deliverMessage(ctx context.Context, msg []byte, body bool) bool {
	if deliver := sc.deliverFunc(body); deliver != nil {
		return deliver(msg) == nil
	}
	return sc.push(ctx, msg)
}

// push hands a client message to the server's reader.
func (sc *sessionConn) push(ctx context.Context, msg []byte) bool {
	select {
	case sc.in <- msg:
		return true
	case <-sc.done:
		return false
	case <-ctx.Done():
		return false
	}
}

// countLegacy keeps a legacy request's release until its answer is written.
func (sc *sessionConn) countLegacy(id json.RawMessage, release func()) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	select {
	case <-sc.done:
		release()
		return
	default:
	}
	if sc.legacyReqs == nil {
		sc.legacyReqs = map[string]func(){}
	}
	if old := sc.legacyReqs[idKey(id)]; old != nil {
		old() // a client reusing an id: count the new one only
	}
	sc.legacyReqs[idKey(id)] = release
}

// open registers the stream for a request about to be delivered.
func (sc *sessionConn) open(id, token json.RawMessage) *stream {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	sc.nextID++
	name := "p" + strconv.Itoa(sc.nextID)
	if sc.streamPrefix != "" {
		name = sc.streamPrefix + name
	}
	st := newStream(name, idKey(id))
	st.rid = id
	sc.byReq[st.key] = st
	if len(token) > 0 {
		sc.byToken[idKey(token)] = st
	}
	sc.pending = append(sc.pending, st)
	return st
}

// forget drops a request's routing. Called with mu held.
func (sc *sessionConn) forget(st *stream) {
	if sc.byReq[st.key] == st {
		delete(sc.byReq, st.key)
		delete(sc.params, st.key)
	}
	for k, v := range sc.byToken {
		if v == st {
			delete(sc.byToken, k)
		}
	}
	if i := slices.Index(sc.pending, st); i >= 0 {
		sc.pending = slices.Delete(sc.pending, i, i+1)
	}
}

// take drops the routing of a request still waiting for its answer and
// reports whether it was (and whether this caller took it).
func (sc *sessionConn) take(st *stream) bool {
	st.mu.Lock()
	over := st.done || st.replied || st.orphan
	st.mu.Unlock()
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if over || sc.byReq[st.key] != st {
		return false
	}
	sc.forget(st)
	return true
}

// abandon drops a stream nobody can receive.
func (sc *sessionConn) abandon(st *stream) {
	st.mu.Lock()
	st.orphan = true
	st.events, st.direct = nil, nil
	st.wake() // a mirror waiting for events stops
	st.mu.Unlock()
	sc.mu.Lock()
	sc.forget(st)
	sc.mu.Unlock()
}

// cancelled drops the stream of a request the client cancelled: the server
// will not answer it.
func (sc *sessionConn) cancelled(id json.RawMessage) {
	if len(id) == 0 {
		return
	}
	sc.mu.Lock()
	st := sc.byReq[idKey(id)]
	rel := sc.legacyReqs[idKey(id)]
	delete(sc.legacyReqs, idKey(id))
	sc.mu.Unlock()
	if st != nil {
		sc.abandon(st)
	}
	if rel != nil {
		rel()
	}
}

// has reports whether a request of the client is open here.
func (sc *sessionConn) has(id json.RawMessage) bool {
	if len(id) == 0 {
		return false
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	return sc.byReq[idKey(id)] != nil
}

// resumable makes a request's SSE stream reachable by Last-Event-ID.
func (sc *sessionConn) resumable(st *stream) {
	sc.mu.Lock()
	sc.streams[st.id] = st
	sc.mu.Unlock()
}

// finished retires a completed stream; a resumable one stays findable for
// a while, in case the client missed its end.
func (sc *sessionConn) finished(st *stream, keep bool) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if !keep || slices.Contains(sc.finishedQ, st) {
		return
	}
	sc.finishedQ = append(sc.finishedQ, st)
	if len(sc.finishedQ) > maxFinished {
		old := sc.finishedQ[0]
		sc.finishedQ = sc.finishedQ[1:]
		delete(sc.streams, old.id)
	}
}

// lookup finds the stream and position of a Last-Event-ID.
func (sc *sessionConn) lookup(eventID string) (*stream, int, bool) {
	i := strings.LastIndexByte(eventID, '-')
	if i < 0 {
		return nil, 0, false
	}
	seq, err := strconv.Atoi(eventID[i+1:])
	if err != nil || seq < 0 {
		return nil, 0, false
	}
	sc.mu.Lock()
	st := sc.streams[eventID[:i]]
	sc.mu.Unlock()
	if st == nil {
		return nil, 0, false
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if seq >= st.next {
		return nil, 0, false
	}
	return st, seq, true
}

// WritesHonourDeadline reports that WriteMessage takes no deadline from
// its context, having none to honour: it puts the message on its stream
// (a final answer up to maxDirect is written at once, which a socket's
// buffer takes without waiting) under the stream's own limits
// (max_sse_events); see mcp.WriteBounder.
func (sc *sessionConn) WritesHonourDeadline() bool { return false }

// WriteMessage routes a server message to a stream (see the package doc).
func (sc *sessionConn) WriteMessage(ctx context.Context, msg []byte) error {
	select {
	case <-sc.done:
		return mcp.ErrClosed
	default:
	}
	pm, err := mcp.ParseMessage(msg)
	if err != nil {
		return err
	}
	data := bytes.Clone(msg)
	isResponse := pm.Method == "" && len(pm.ID) > 0
	sc.mu.Lock()
	var st *stream
	switch {
	case sc.legacy:
		st = sc.standalone
		if isResponse {
			if rel := sc.legacyReqs[idKey(pm.ID)]; rel != nil {
				delete(sc.legacyReqs, idKey(pm.ID))
				defer rel()
			}
		}
		isResponse = false // one stream carries everything; it never completes
	case isResponse:
		st = sc.byReq[idKey(pm.ID)]
		if st == nil {
			sc.mu.Unlock()
			return nil // cancelled or abandoned: nobody waits
		}
		sc.forget(st)
	case sc.modern:
		// Only what relates to a request in flight has somewhere to go:
		// its progress, or what was sent with its context (its logs, a
		// subscriptions/listen stream's notifications).
		if len(pm.ID) > 0 {
			sc.mu.Unlock()
			return errModernRequest
		}
		if pm.Method == mcp.NotificationProgress {
			st = sc.byToken[idKey(mcp.Member(pm.Params, "progressToken"))]
		}
		if rid := mcp.RelatedRequest(ctx); st == nil && rid != nil {
			st = sc.byReq[idKey(rid)]
		}
		if st == nil {
			sc.mu.Unlock()
			return nil // related to no request: dropped
		}
	case pm.Method == mcp.NotificationProgress:
		st = sc.byToken[idKey(mcp.Member(pm.Params, "progressToken"))]
	case pm.Method == mcp.NotificationResourceUpdated, strings.HasSuffix(pm.Method, "/list_changed"):
		st = sc.standalone
	default:
		if rid := mcp.RelatedRequest(ctx); rid != nil {
			st = sc.byReq[idKey(rid)]
		}
		if st == nil && len(sc.pending) > 0 {
			st = sc.pending[len(sc.pending)-1]
		}
	}
	if st == nil {
		st = sc.standalone
	}
	sc.mu.Unlock()
	if sc.replica != "" && pm.Method != "" {
		switch {
		case len(pm.ID) > 0:
			// A request to the client: its answer may reach another replica.
			nid, _ := json.Marshal(sc.replica + ":" + string(pm.ID))
			if data, err = withID(data, nid); err != nil {
				return err
			}
		case pm.Method == mcp.NotificationCancelled:
			// Withdrawing such a request: the client knows it by that id.
			if rid := mcp.Member(pm.Params, "requestId"); len(rid) > 0 {
				nid, _ := json.Marshal(sc.replica + ":" + string(rid))
				if data, err = withParam(data, "requestId", nid); err != nil {
					return err
				}
			}
		}
	}
	if st == sc.standalone && sc.out != nil {
		// Never waits for the store: when it lags that far, the oldest
		// message goes, as on the standalone stream of one process.
		for {
			select {
			case sc.out <- data:
				return nil
			case <-sc.done:
				return mcp.ErrClosed
			default:
			}
			select {
			case <-sc.out:
				sc.log.Warn("a message for the GET stream was dropped: the session store lags behind")
			default:
			}
		}
	}
	if err := st.add(data, isResponse, sc.opts); err != nil {
		sc.log.Warn("ending the session: its client stopped reading a response stream",
			"stream", st.id, "limit", sc.opts.limitText("max_sse_events", sc.opts.ReplayEvents))
		sc.Close()
		if sc.overflowed != nil {
			sc.overflowed()
		}
		return err
	}
	return nil
}

// errModernRequest refuses a request to the client on a modern session.
var errModernRequest = errors.New("a server cannot send a request to a client of the stateless revision (2026-07-28): nobody can answer it; return an input_required result (MRTR) instead")

func idKey(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return "s:" + s
		}
	}
	return "n:" + string(raw)
}

// LoopbackOrigin admits requests without Origin (non-browser clients) and
// those from loopback pages only.
func LoopbackOrigin(origin string) bool {
	if origin == "" {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil {
		return false
	}
	host := u.Hostname()
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}

// accepts reports whether the Accept header admits the media type.
func accepts(r *http.Request, want string) bool {
	major, _, _ := strings.Cut(want, "/")
	for _, v := range r.Header.Values("Accept") {
		for v != "" {
			var part string
			part, v, _ = strings.Cut(v, ",")
			mt, _, _ := strings.Cut(part, ";")
			mt = strings.TrimSpace(mt)
			if strings.EqualFold(mt, want) || mt == "*/*" {
				return true
			}
			if m, sub, ok := strings.Cut(mt, "/"); ok && sub == "*" && strings.EqualFold(m, major) {
				return true
			}
		}
	}
	return false
}

func isMedia(ct, want string) bool {
	mt, _, _ := strings.Cut(ct, ";")
	return strings.EqualFold(strings.TrimSpace(mt), want)
}

// rpcError answers with an HTTP error whose body is a JSON-RPC error
// without an id, as the spec suggests.
func rpcError(w http.ResponseWriter, status, code int, msg string) {
	WriteError(w, status, code, msg)
}

// errorMessage is a JSON-RPC error response to the request with id (nil:
// none).
func errorMessage(id json.RawMessage, e *mcp.RPCError) []byte {
	b, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   *mcp.RPCError   `json:"error"`
	}{"2.0", id, e})
	return b
}

// WriteError answers with an HTTP status and a JSON-RPC error body without
// an id, as the spec suggests for refusals outside a session.
func WriteError(w http.ResponseWriter, status, code int, msg string) {
	b := errorMessage(nil, &mcp.RPCError{Code: code, Message: msg})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(b)
}
