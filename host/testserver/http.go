package testserver

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nexus-mcp/nexus/host/mcp"
)

// The test server over Streamable HTTP (MCP 2025-11-25, transports):
//
//   - POST carries one client message. initialize without a session creates
//     one and answers with Mcp-Session-Id; every other POST needs that id
//     (400 without, 404 for one that is unknown or ended). Notifications and
//     responses get 202. A request is answered as application/json when its
//     response is the first thing the session produces for it, and as an
//     SSE stream when notifications or server requests come first (echo's
//     log message, slow_operation's progress, sample/elicit/roots).
//   - GET opens the standalone SSE stream for what belongs to no request
//     (list_changed, resources/updated); messages produced while no GET is
//     connected wait in its buffer. GET with Last-Event-ID resumes any
//     stream, POST or standalone, from a bounded per-stream replay buffer.
//     Every SSE stream starts with an id-only priming event (SEP-1699).
//   - DELETE ends the session.
//
// The session runs on mcp.Server.Serve over an in-memory Conn. That Conn
// does not know which incoming request a server-initiated message belongs
// to, so it routes: a response by its id, progress by its token,
// list_changed and resources/updated to the standalone stream, and the
// rest (log messages, sampling, elicitation, roots) to the newest request
// still open, or the standalone stream when none is. With concurrent tool
// calls a log message may thus travel on a sibling's stream, which the spec
// allows (it says SHOULD, not MUST) and clients handle.

// HTTPOption tunes an HTTPHandler.
type HTTPOption func(*httpConfig)

type httpConfig struct {
	pollAfter   int           // close a stream's connection after this many events (0: never)
	pollRetry   time.Duration // the retry field sent before such a close
	replay      int           // events kept per stream for Last-Event-ID
	replayBytes int           // bytes kept per stream (the newest event is always kept)
	maxSessions int
	idle        time.Duration
}

// WithPolling makes the server close every SSE connection after it wrote
// events messages, announcing retry first, as SEP-1699 lets servers do; the
// client resumes with GET and Last-Event-ID. For resumption tests.
func WithPolling(events int, retry time.Duration) HTTPOption {
	return func(c *httpConfig) { c.pollAfter, c.pollRetry = events, retry }
}

// WithReplayBuffer sets how many events each stream keeps for replay
// (default 256).
func WithReplayBuffer(events int) HTTPOption {
	return func(c *httpConfig) { c.replay = events }
}

// WithMaxSessions bounds concurrent sessions (default 100); initialize
// beyond it gets 503.
func WithMaxSessions(n int) HTTPOption {
	return func(c *httpConfig) { c.maxSessions = n }
}

// WithSessionIdleTimeout ends sessions with no request and no open stream
// for d (default 30 minutes).
func WithSessionIdleTimeout(d time.Duration) HTTPOption {
	return func(c *httpConfig) { c.idle = d }
}

// HTTPHandler serves the test server at one MCP endpoint; mount it at the
// path of your choice. It is safe for concurrent use.
type HTTPHandler struct {
	srv *mcp.Server
	log hclog.Logger
	cfg httpConfig

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	sessions map[string]*httpSession
	closed   bool
	janitor  bool
}

// NewHTTPHandler returns the test server as an http.Handler serving
// Streamable HTTP with sessions. Close it to end every session.
func NewHTTPHandler(o Options, opts ...HTTPOption) *HTTPHandler {
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	cfg := httpConfig{replay: 256, replayBytes: 16 << 20, maxSessions: 100, idle: 30 * time.Minute}
	for _, opt := range opts {
		opt(&cfg)
	}
	cfg.replay = max(cfg.replay, 1)
	ctx, cancel := context.WithCancel(context.Background())
	return &HTTPHandler{srv: New(o), log: o.Logger, cfg: cfg, ctx: ctx, cancel: cancel, sessions: map[string]*httpSession{}}
}

// Server is the MCP server behind the handler, for tests that change what
// it serves (which notifies sessions) or call ResourceUpdated.
func (h *HTTPHandler) Server() *mcp.Server { return h.srv }

// Close ends every session and stream and waits for them.
func (h *HTTPHandler) Close() error {
	h.mu.Lock()
	h.closed = true
	h.mu.Unlock()
	h.cancel()
	h.wg.Wait()
	return nil
}

// ServeHTTP listens on addr exactly as given (bind to 127.0.0.1 unless
// you mean to expose the server: it has no authentication) and serves the
// MCP endpoint at /mcp until ctx ends, then shuts down and returns
// ctx.Err(), as ServeStdio does.
func ServeHTTP(ctx context.Context, o Options, addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("testserver: cannot listen on %s: %w", addr, err)
	}
	return ServeListener(ctx, o, ln)
}

// EndpointPath is where ServeHTTP and ServeListener serve MCP.
const EndpointPath = "/mcp"

// ServeListener is ServeHTTP on a listener the caller made (for port 0:
// the URL is "http://" + ln.Addr().String() + EndpointPath).
func ServeListener(ctx context.Context, o Options, ln net.Listener, opts ...HTTPOption) error {
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	if err := o.waitStart(ctx); err != nil {
		ln.Close()
		return err
	}
	h := NewHTTPHandler(o, opts...)
	mux := http.NewServeMux()
	mux.Handle(EndpointPath, h)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "not found: the MCP endpoint of the Nexus test server is "+EndpointPath, http.StatusNotFound)
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ErrorLog: o.Logger.StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true})}
	if ap, err := netip.ParseAddrPort(ln.Addr().String()); err == nil && !ap.Addr().Unmap().IsLoopback() {
		o.Logger.Warn("the test server listens beyond loopback and has no authentication", "addr", ln.Addr().String())
	}
	o.Logger.Info("serving MCP over streamable HTTP", "url", "http://"+ln.Addr().String()+EndpointPath)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case <-ctx.Done():
		h.Close()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
		<-errc
		return ctx.Err()
	case err := <-errc:
		h.Close()
		return err
	}
}

// ServeHTTP implements http.Handler.
func (h *HTTPHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !originAllowed(r.Header.Get("Origin")) {
		// DNS rebinding: a web page must not drive a local server.
		rpcError(w, http.StatusForbidden, mcp.CodeInvalidRequest, "Origin not allowed: only loopback origins may use the test server")
		return
	}
	if v := r.Header.Get("Mcp-Protocol-Version"); v != "" && !slices.Contains(mcp.SupportedVersions, v) {
		rpcError(w, http.StatusBadRequest, mcp.CodeInvalidRequest, "unsupported MCP-Protocol-Version "+strconv.Quote(v))
		return
	}
	switch r.Method {
	case http.MethodPost:
		h.post(w, r)
	case http.MethodGet:
		h.get(w, r)
	case http.MethodDelete:
		h.delete(w, r)
	default:
		w.Header().Set("Allow", "GET, POST, DELETE")
		rpcError(w, http.StatusMethodNotAllowed, mcp.CodeInvalidRequest, "method not allowed: use POST, GET or DELETE")
	}
}

// incoming is what the handler reads of a client message.
type incoming struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		Meta struct {
			ProgressToken json.RawMessage `json:"progressToken"`
		} `json:"_meta"`
		RequestID json.RawMessage `json:"requestId"` // notifications/cancelled
	} `json:"params"`
}

func (m *incoming) hasID() bool { return len(m.ID) > 0 && !bytes.Equal(m.ID, []byte("null")) }

// parseIncoming reads what routing needs of a client message, without
// encoding/json (mcp.ParseMessage validates it in one pass).
func parseIncoming(body []byte) (incoming, error) {
	pm, err := mcp.ParseMessage(body)
	if err != nil {
		return incoming{}, err
	}
	m := incoming{ID: pm.ID, Method: pm.Method}
	m.Params.Meta.ProgressToken = mcp.Member(mcp.Member(pm.Params, "_meta"), "progressToken")
	m.Params.RequestID = mcp.Member(pm.Params, "requestId")
	return m, nil
}

func (h *HTTPHandler) post(w http.ResponseWriter, r *http.Request) {
	if !isMedia(r.Header.Get("Content-Type"), "application/json") {
		rpcError(w, http.StatusUnsupportedMediaType, mcp.CodeInvalidRequest, "Content-Type must be application/json")
		return
	}
	if !accepts(r, "application/json") || !accepts(r, "text/event-stream") {
		rpcError(w, http.StatusNotAcceptable, mcp.CodeInvalidRequest, "Accept must list application/json and text/event-stream")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, mcp.MaxFrameSize))
	if err != nil {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			rpcError(w, http.StatusRequestEntityTooLarge, mcp.CodeInvalidRequest, fmt.Sprintf("message exceeds %d bytes", mcp.MaxFrameSize))
		}
		return
	}
	m, err := parseIncoming(body)
	if err != nil {
		if t := bytes.TrimLeft(body, " \t\r\n"); len(t) > 0 && t[0] == '[' {
			rpcError(w, http.StatusBadRequest, mcp.CodeInvalidRequest, "JSON-RPC batches are not supported (MCP 2025-06-18 and later)")
			return
		}
		rpcError(w, http.StatusBadRequest, mcp.CodeParseError, "the body is not a JSON-RPC message: "+err.Error())
		return
	}
	isRequest := m.Method != "" && m.hasID()
	var s *httpSession
	sid := r.Header.Get("Mcp-Session-Id")
	switch {
	case sid != "":
		if s = h.session(sid); s == nil {
			rpcError(w, http.StatusNotFound, mcp.CodeInvalidRequest, "unknown or ended session; initialize a new one")
			return
		}
	case isRequest && m.Method == mcp.MethodInitialize:
		if s, err = h.newSession(); err != nil {
			w.Header().Set("Retry-After", "5")
			rpcError(w, http.StatusServiceUnavailable, mcp.CodeInternalError, err.Error())
			return
		}
	default:
		rpcError(w, http.StatusBadRequest, mcp.CodeInvalidRequest, "missing Mcp-Session-Id header: send initialize first")
		return
	}
	s.enter()
	defer s.leave()
	deliver := s.conn.deliverFunc()
	if !isRequest {
		if m.Method == mcp.NotificationCancelled {
			s.conn.cancelled(m.Params.RequestID)
		}
		if deliver != nil {
			if err := deliver(body); err != nil {
				rpcError(w, http.StatusNotFound, mcp.CodeInvalidRequest, "the session ended")
				return
			}
			w.WriteHeader(http.StatusAccepted)
			return
		}
		if !s.conn.push(r.Context(), body) {
			rpcError(w, http.StatusNotFound, mcp.CodeInvalidRequest, "the session ended")
			return
		}
		w.WriteHeader(http.StatusAccepted)
		return
	}
	st := s.conn.open(m.ID, m.Params.Meta.ProgressToken)
	if m.Method == mcp.MethodInitialize {
		w.Header().Set("Mcp-Session-Id", s.id)
	}
	if deliver != nil {
		h.serveInline(w, r, s, st, deliver, body)
		return
	}
	if !s.conn.push(r.Context(), body) {
		s.conn.abandon(st)
		rpcError(w, http.StatusNotFound, mcp.CodeInvalidRequest, "the session ended")
		return
	}
	h.reply(w, r, s, st)
}

// serveInline serves a request on its POST's own goroutine (the server's
// Deliver), then answers with JSON as reply does. A message other than the
// answer arriving meanwhile (progress, a log line, a request to the
// client) starts the SSE reply on another goroutine at once, so nothing
// waits for the tool to finish; this goroutine then waits for that reply.
func (h *HTTPHandler) serveInline(w http.ResponseWriter, r *http.Request, s *httpSession, st *stream, deliver func([]byte) error, body []byte) {
	st.mu.Lock()
	st.inline = true
	st.startReply = func() {
		defer close(st.replying)
		h.reply(w, r, s, st)
	}
	st.mu.Unlock()
	err := deliver(body)
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
func (h *HTTPHandler) reply(w http.ResponseWriter, r *http.Request, s *httpSession, st *stream) {
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
			writeJSON(w, data)
			return
		}
		if n > 0 {
			st.sse, st.direct = true, nil
			st.mu.Unlock()
			break
		}
		st.mu.Unlock()
		select {
		case <-ch:
		case <-r.Context().Done():
			s.conn.abandon(st) // the client never learned an event id: nothing to resume
			return
		case <-s.conn.done:
			st.mu.Lock()
			replied := st.replied
			st.direct = nil
			st.mu.Unlock()
			if !replied {
				http.Error(w, "the session ended", http.StatusNotFound)
			}
			return
		case <-h.ctx.Done():
			s.conn.abandon(st)
			return
		}
	}
	s.conn.resumable(st)
	h.pump(w, r, s, st, 0)
}

func writeJSON(w http.ResponseWriter, data []byte) {
	hd := w.Header()
	hd["Content-Type"] = jsonType
	hd["Content-Length"] = []string{strconv.Itoa(len(data))}
	w.Write(data)
}

var jsonType = []string{"application/json"}

func (h *HTTPHandler) get(w http.ResponseWriter, r *http.Request) {
	if !accepts(r, "text/event-stream") {
		rpcError(w, http.StatusNotAcceptable, mcp.CodeInvalidRequest, "Accept must list text/event-stream")
		return
	}
	sid := r.Header.Get("Mcp-Session-Id")
	if sid == "" {
		rpcError(w, http.StatusBadRequest, mcp.CodeInvalidRequest, "missing Mcp-Session-Id header: send initialize first")
		return
	}
	s := h.session(sid)
	if s == nil {
		rpcError(w, http.StatusNotFound, mcp.CodeInvalidRequest, "unknown or ended session; initialize a new one")
		return
	}
	s.enter()
	defer s.leave()
	st, after := s.conn.standalone, -1
	if last := r.Header.Get("Last-Event-Id"); last != "" {
		var ok bool
		if st, after, ok = s.conn.lookup(last); !ok {
			rpcError(w, http.StatusBadRequest, mcp.CodeInvalidRequest, "unknown Last-Event-ID: the stream is gone or the id was never issued")
			return
		}
	}
	h.pump(w, r, s, st, after)
}

func (h *HTTPHandler) delete(w http.ResponseWriter, r *http.Request) {
	sid := r.Header.Get("Mcp-Session-Id")
	if sid == "" {
		rpcError(w, http.StatusBadRequest, mcp.CodeInvalidRequest, "missing Mcp-Session-Id header")
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
func (h *HTTPHandler) pump(w http.ResponseWriter, r *http.Request, s *httpSession, st *stream, after int) {
	rc := http.NewResponseController(w)
	st.mu.Lock()
	if after < 0 {
		after = st.sent
	}
	st.owner++
	me := st.owner
	st.wake()
	st.mu.Unlock()

	hd := w.Header()
	hd.Set("Content-Type", "text/event-stream")
	hd.Set("Cache-Control", "no-cache")
	hd.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	// The priming event: an id to resume from before any message (SEP-1699).
	buf := appendEvent(nil, st.id, after, nil)
	written := 0
	for {
		st.mu.Lock()
		if st.owner != me {
			st.mu.Unlock()
			return // a newer connection resumed this stream
		}
		if len(st.events) > 0 && st.events[0].seq > after+1 {
			h.log.Warn("SSE replay buffer overflowed; events were lost", "stream", st.id, "lost", st.events[0].seq-after-1)
		}
		for _, ev := range st.events {
			if ev.seq <= after {
				continue
			}
			if h.cfg.pollAfter > 0 && written >= h.cfg.pollAfter {
				break
			}
			buf = appendEvent(buf, st.id, ev.seq, ev.data)
			after = ev.seq
			written++
		}
		st.sent = max(st.sent, after)
		complete := st.done && after == st.next-1
		poll := h.cfg.pollAfter > 0 && written >= h.cfg.pollAfter && !complete
		ch := st.waitCh()
		st.mu.Unlock()
		if poll {
			buf = append(buf, "retry: "...)
			buf = strconv.AppendInt(buf, h.cfg.pollRetry.Milliseconds(), 10)
			buf = append(buf, "\n\n"...)
		}
		if len(buf) > 0 {
			rc.SetWriteDeadline(time.Now().Add(30 * time.Second))
			if _, err := w.Write(buf); err != nil {
				return
			}
			if rc.Flush() != nil {
				return
			}
			buf = buf[:0]
		}
		if complete {
			s.conn.finished(st, true)
			return
		}
		if poll {
			return // the client comes back with Last-Event-ID
		}
		select {
		case <-ch:
		case <-r.Context().Done():
			return
		case <-s.conn.done:
			return
		case <-h.ctx.Done():
			return
		}
	}
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

func (h *HTTPHandler) session(id string) *httpSession {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.sessions[id]
}

func (h *HTTPHandler) newSession() (*httpSession, error) {
	var raw [16]byte
	rand.Read(raw[:])
	s := &httpSession{id: hex.EncodeToString(raw[:]), conn: newSessionConn(h.cfg)}
	s.touch()
	ctx, cancel := context.WithCancel(h.ctx)
	s.cancel = cancel
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		cancel()
		return nil, errors.New("the server is shutting down")
	}
	if len(h.sessions) >= h.cfg.maxSessions {
		cancel()
		return nil, fmt.Errorf("too many sessions (%d); end one with DELETE or retry later", h.cfg.maxSessions)
	}
	h.sessions[s.id] = s
	if !h.janitor && h.cfg.idle > 0 {
		h.janitor = true
		h.wg.Add(1)
		go h.sweep()
	}
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		err := h.srv.Serve(ctx, s.conn)
		s.conn.Close()
		h.mu.Lock()
		if h.sessions[s.id] == s {
			delete(h.sessions, s.id)
		}
		h.mu.Unlock()
		if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, context.Canceled) {
			h.log.Debug("session ended", "error", err)
		}
	}()
	return s, nil
}

// sweep ends sessions idle for longer than the idle timeout.
func (h *HTTPHandler) sweep() {
	defer h.wg.Done()
	t := time.NewTicker(max(h.cfg.idle/4, 10*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-h.ctx.Done():
			return
		case <-t.C:
		}
		cutoff := time.Now().Add(-h.cfg.idle).UnixNano()
		h.mu.Lock()
		for id, s := range h.sessions {
			if s.active.Load() == 0 && s.used.Load() < cutoff {
				delete(h.sessions, id)
				s.end()
			}
		}
		h.mu.Unlock()
	}
}

// httpSession is one MCP session served over HTTP.
type httpSession struct {
	id     string
	conn   *sessionConn
	cancel context.CancelFunc
	active atomic.Int32 // requests being served, open streams included
	used   atomic.Int64 // unix nanos of the last request
}

func (s *httpSession) touch() { s.used.Store(time.Now().UnixNano()) }
func (s *httpSession) enter() { s.active.Add(1); s.touch() }
func (s *httpSession) leave() { s.active.Add(-1); s.touch() }
func (s *httpSession) end()   { s.cancel(); s.conn.Close() }

// stream is one SSE stream of a session: a request's reply or the
// standalone stream. Events are numbered from 1; the id of event n is
// "<stream id>-<n>", and "<stream id>-0" is the start.
type stream struct {
	id  string
	key string // the request id's key; "" for the standalone stream

	mu     sync.Mutex
	events []streamEvent // kept for writing and replay, oldest first
	bytes  int
	next   int // sequence number of the next event
	sent   int // highest sequence number written to a connection
	done   bool
	sse    bool // the reply became an SSE stream (and can be resumed)
	orphan bool // nobody can receive it: drop what comes
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

func (st *stream) add(data []byte, final bool, cfg *httpConfig) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.orphan || st.done {
		return
	}
	if st.inline && !final && st.replying == nil {
		st.replying = make(chan struct{})
		go st.startReply()
	}
	if final && st.direct != nil && len(st.events) == 0 && len(data) <= maxDirect {
		// The handler is parked in reply and does not touch w until woken.
		writeJSON(st.direct, data)
		http.NewResponseController(st.direct).Flush()
		st.direct, st.replied, st.done = nil, true, true
		st.wake()
		return
	}
	st.events = append(st.events, streamEvent{seq: st.next, data: data})
	st.next++
	st.bytes += len(data)
	st.done = final
	for len(st.events) > 1 && (len(st.events) > cfg.replay || st.bytes > cfg.replayBytes) {
		st.bytes -= len(st.events[0].data)
		st.events[0] = streamEvent{}
		st.events = st.events[1:]
	}
	st.wake()
}

// sessionConn is the mcp.Conn a session's mcp.Server runs on: POST bodies
// go in, and what the server writes is routed to streams.
type sessionConn struct {
	cfg     *httpConfig
	in      chan []byte
	done    chan struct{}
	once    sync.Once
	deliver atomic.Pointer[func([]byte) error] // the server's Peer.Deliver (mcp.PushConn)

	mu         sync.Mutex
	standalone *stream
	streams    map[string]*stream // resumable streams by id
	byReq      map[string]*stream // open requests by id key
	byToken    map[string]*stream // open requests by progress token key
	pending    []*stream          // open requests, oldest first
	finishedQ  []*stream          // completed resumable streams, kept for late resumes
	nextID     int
}

// maxFinished bounds the completed streams a session keeps for resumption.
const maxFinished = 16

func newSessionConn(cfg httpConfig) *sessionConn {
	sc := &sessionConn{
		cfg:     &cfg,
		in:      make(chan []byte, 16),
		done:    make(chan struct{}),
		streams: map[string]*stream{},
		byReq:   map[string]*stream{},
		byToken: map[string]*stream{},
	}
	sc.standalone = newStream("g", "")
	sc.standalone.sse = true
	sc.streams["g"] = sc.standalone
	return sc
}

var (
	_ mcp.Conn     = (*sessionConn)(nil)
	_ mcp.PushConn = (*sessionConn)(nil)
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
	sc.once.Do(func() { close(sc.done) })
	return nil
}

// SetDeliver takes the server's Peer.Deliver; see mcp.PushConn.
func (sc *sessionConn) SetDeliver(deliver func([]byte) error) { sc.deliver.Store(&deliver) }

// deliverFunc is the server's Deliver, or nil before the server started.
func (sc *sessionConn) deliverFunc() func([]byte) error {
	if d := sc.deliver.Load(); d != nil {
		return *d
	}
	return nil
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

// open registers the stream for a request about to be pushed.
func (sc *sessionConn) open(id, token json.RawMessage) *stream {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	sc.nextID++
	st := newStream("p"+strconv.Itoa(sc.nextID), idKey(id))
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

// abandon drops a stream nobody can receive.
func (sc *sessionConn) abandon(st *stream) {
	st.mu.Lock()
	st.orphan = true
	st.events, st.direct = nil, nil
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
	sc.mu.Unlock()
	if st != nil {
		sc.abandon(st)
	}
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

// outgoing is what the router reads of a server message.
type outgoing struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		ProgressToken json.RawMessage `json:"progressToken"`
	} `json:"params"`
}

// WriteMessage routes a server message to a stream (see the file comment).
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
	m := outgoing{ID: pm.ID, Method: pm.Method}
	m.Params.ProgressToken = mcp.Member(pm.Params, "progressToken")
	data := bytes.Clone(msg)
	isResponse := m.Method == "" && len(m.ID) > 0
	sc.mu.Lock()
	var st *stream
	switch {
	case isResponse:
		st = sc.byReq[idKey(m.ID)]
		if st == nil {
			sc.mu.Unlock()
			return nil // cancelled or abandoned: nobody waits
		}
		sc.forget(st)
	case m.Method == mcp.NotificationProgress:
		st = sc.byToken[idKey(m.Params.ProgressToken)]
	case m.Method == mcp.NotificationResourceUpdated, strings.HasSuffix(m.Method, "/list_changed"):
		st = sc.standalone
	case len(sc.pending) > 0:
		st = sc.pending[len(sc.pending)-1]
	}
	if st == nil {
		st = sc.standalone
	}
	sc.mu.Unlock()
	st.add(data, isResponse, sc.cfg)
	return nil
}

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

// originAllowed admits requests without Origin (non-browser clients) and
// those from loopback pages only.
func originAllowed(origin string) bool {
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
	b, _ := json.Marshal(struct {
		JSONRPC string        `json:"jsonrpc"`
		ID      *int          `json:"id"`
		Error   *mcp.RPCError `json:"error"`
	}{"2.0", nil, &mcp.RPCError{Code: code, Message: msg}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(b)
}
