package httptransport

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nexus-mcp/nexus/host/mcp"
)

// Conn is an MCP session's transport over streamable HTTP (or legacy
// HTTP+SSE). It implements mcp.Conn.
//
// Writes of requests return as soon as the request is handed to a
// goroutine; the response (a JSON body or an SSE stream) is read there and
// its frames come out of ReadMessage, together with those of the standalone
// GET stream. Writes of notifications and responses wait for the server's
// 202. A request that fails on the HTTP level without ending the session
// (a 500, an HTML page, a dropped stream that cannot be resumed) is answered
// locally with a JSON-RPC error for its id, so that the caller gets the
// reason at once instead of a timeout; failures that end the session
// (a refused address, a redirect, an expired session, an oversized message,
// no connection at all) make ReadMessage return the typed error.
type Conn struct {
	cfg   Config
	url   *url.URL
	shown string // the URL for errors and logs
	log   hclog.Logger
	rt    http.RoundTripper // h1, perhaps wrapped; called without an http.Client
	tr    *http.Transport
	h1    *h1         // in front of tr
	hdr   http.Header // configured headers, canonical names

	ctx     context.Context // ends on Close or on a fatal error
	cancel  context.CancelFunc
	wg      sync.WaitGroup // jobs run by spawn
	workers sync.WaitGroup // the goroutines running them
	jobs    chan func()    // hands a job to an idle worker

	in   chan inFrame
	done chan struct{}
	rel  json.RawMessage // the related request of the frame last read (reader only)

	// Direct reads (mcp.DirectReader), used by one goroutine at a time.
	intr    chan struct{} // InterruptRead
	rtimer  *time.Timer
	rdl     time.Time // when rtimer fires; zero when it is not armed
	errOnce sync.Once
	err     error

	closed    atomic.Bool
	closeOnce sync.Once

	mu        sync.Mutex
	closing   bool   // no new goroutines
	session   string // Mcp-Session-Id, "" without sessions
	version   string // negotiated protocol version, sent after initialize
	gen       int    // bumped by each re-initialize
	initMsg   []byte // the initialize request, for Reinitialize
	initKey   string
	initedMsg []byte // notifications/initialized, ditto
	posted    bool   // the first POST was made: the fallback window is closed
	listening bool   // the standalone GET stream runs
	reinits   int
	legacyURL *url.URL // set once speaking legacy HTTP+SSE
	modern    bool     // a modern request was sent (see modern.go)
	inflight  map[string]context.CancelFunc

	reinitMu sync.Mutex
}

var (
	_ mcp.DirectReader  = (*Conn)(nil)
	_ mcp.RequestWriter = (*Conn)(nil)
)

var (
	_ mcp.Conn          = (*Conn)(nil)
	_ mcp.RelatedFramer = (*Conn)(nil)
)

// inFrame is a frame for ReadMessage and the id of the request whose
// response stream carried it (nil: a JSON answer, the standalone GET
// stream, a failure standing for an answer).
type inFrame struct {
	b   []byte
	rel json.RawMessage
}

// FrameRelated returns the id of the request whose SSE response stream
// carried the frame last read, or nil; see mcp.RelatedFramer.
func (c *Conn) FrameRelated() json.RawMessage { return c.rel }

// Dial prepares a transport for cfg. A streamable HTTP server is contacted
// with the first message (initialize); a legacy SSE server (cfg.LegacySSE)
// is connected now, and Dial returns once its endpoint event arrived.
func Dial(ctx context.Context, cfg Config) (*Conn, error) {
	u, err := cfg.normalize()
	if err != nil {
		return nil, err
	}
	tlsCfg, err := cfg.tlsConfig()
	if err != nil {
		return nil, err
	}
	g := &guard{allowPrivate: cfg.AllowPrivateNetworks, resolve: cfg.Resolver, dial: cfg.DialContext}
	tr := &http.Transport{
		// No proxy: a proxy would connect to the target for us, past the
		// guard's address check.
		Proxy:                 nil,
		DialContext:           g.DialContext,
		TLSClientConfig:       tlsCfg,
		TLSHandshakeTimeout:   cfg.Timeout,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          32,
		MaxIdleConnsPerHost:   16,
		IdleConnTimeout:       90 * time.Second,
		DisableCompression:    true, // SSE must not be buffered by a decompressor
		ExpectContinueTimeout: time.Second,
	}
	fast := &h1{next: tr, dial: g.DialContext}
	var rt http.RoundTripper = fast
	if cfg.WrapTransport != nil {
		rt = cfg.WrapTransport(rt)
	}
	hdr := make(http.Header, len(cfg.Headers))
	for k, v := range cfg.Headers {
		hdr[http.CanonicalHeaderKey(k)] = []string{v}
	}
	cctx, cancel := context.WithCancel(context.Background())
	c := &Conn{
		cfg:      cfg,
		url:      u,
		shown:    redactURL(u),
		log:      cfg.Logger.With("server", cfg.Server),
		rt:       rt,
		tr:       tr,
		h1:       fast,
		hdr:      hdr,
		ctx:      cctx,
		cancel:   cancel,
		in:       make(chan inFrame, 16),
		done:     make(chan struct{}),
		intr:     make(chan struct{}, 1),
		inflight: make(map[string]context.CancelFunc),
		jobs:     make(chan func()),
	}
	c.log.Debug("http transport ready", "url", c.shown, "headers", headerNames(cfg.Headers), "legacy_sse", cfg.LegacySSE)
	if u.Scheme == "http" && len(cfg.Headers) > 0 && !isLoopbackHost(u.Hostname()) {
		c.log.Warn("configured headers are sent over plain http to a remote host; use https", "url", c.shown, "headers", headerNames(cfg.Headers))
	}
	if cfg.LegacySSE {
		if err := c.openLegacy(ctx); err != nil {
			c.Close()
			return nil, err
		}
	}
	return c, nil
}

func isLoopbackHost(h string) bool {
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(h)
	return err == nil && ip.Unmap().IsLoopback()
}

// SessionID is the server's Mcp-Session-Id, "" before initialize or for a
// server without sessions.
func (c *Conn) SessionID() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.session
}

// ProtocolVersion is the version sent in MCP-Protocol-Version, taken from
// the initialize response that passed through.
func (c *Conn) ProtocolVersion() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.version
}

// Legacy reports whether the Conn speaks the 2024-11-05 HTTP+SSE
// transport (configured or fallen back to).
func (c *Conn) Legacy() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.legacyURL != nil
}

// ReadMessage returns the next message from any of the session's streams.
// The slice belongs to the caller.
func (c *Conn) ReadMessage() ([]byte, error) {
	select {
	case f := <-c.in:
		return c.take(f), nil
	case <-c.done:
		// Frames that arrived before the end still count.
		select {
		case f := <-c.in:
			return c.take(f), nil
		default:
		}
		return nil, c.err
	}
}

// take notes f's related request for FrameRelated and returns its bytes.
func (c *Conn) take(f inFrame) []byte {
	if c.rel != nil || f.rel != nil { // no write while there is none
		c.rel = f.rel
	}
	return f.b
}

// WriteRequest sends a request as WriteMessage does, but on the caller's
// goroutine (see mcp.RequestWriter): a JSON answer is read and delivered
// before it returns, which saves two goroutine hand-offs per call; an SSE
// answer is followed by another goroutine, as with WriteMessage. ctx and
// deadline (the call's; zero for none) end the exchange early.
func (c *Conn) WriteRequest(ctx context.Context, deadline time.Time, msg []byte) error {
	if err := c.stopped(); err != nil {
		return err
	}
	m, err := mcp.ParseMessage(msg)
	if err != nil {
		return fmt.Errorf("httptransport: WriteRequest needs one JSON-RPC message object: %w", err)
	}
	if c.Legacy() || !m.IsRequest() || m.Method == mcp.MethodInitialize {
		return c.WriteMessage(ctx, msg)
	}
	mr := modernOf(ctx, &m)
	if mr != nil {
		c.noteModern()
	}
	body := bytes.Clone(msg)
	id := bytes.Clone(m.ID)
	key := idKey(id)
	var rctx context.Context
	var rcancel context.CancelFunc
	if deadline.IsZero() {
		rctx, rcancel = context.WithCancel(c.ctx)
	} else {
		rctx, rcancel = context.WithDeadline(c.ctx, deadline)
	}
	if !c.enter() {
		rcancel()
		return mcp.ErrClosed
	}
	stop := func() bool { return false }
	if ctx.Done() != nil {
		stop = context.AfterFunc(ctx, rcancel)
	}
	c.register(key, rcancel)
	followed := false
	defer func() {
		if !followed {
			stop()
			c.unregister(key)
			rcancel()
		}
		c.wg.Done()
	}()
	resp, err := c.post(rctx, body, mr)
	if err != nil || !isStream(resp) {
		if err == nil {
			err = c.deliverReply(resp)
		}
		c.finishRequest(rctx, id, err)
		return nil
	}
	followed = c.spawn(func() {
		defer c.unregister(key)
		defer rcancel()
		defer stop()
		c.finishRequest(rctx, id, c.follow(rctx, resp, key, false, mr != nil))
	})
	if !followed {
		discard(resp.Body)
	}
	return nil
}

// enter counts a piece of work that Close must wait for (an exchange run
// by a caller, or a spawned job), unless the Conn is closing; whoever
// entered calls c.wg.Done when it ends.
func (c *Conn) enter() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closing {
		return false
	}
	c.wg.Add(1)
	return true
}

// DirectReads reports that callers may read their own replies; see
// mcp.DirectReader.
func (c *Conn) DirectReads() bool { return true }

// ReadMessageBefore returns the next message if one arrives before
// deadline; see mcp.DirectReader. Replies to POSTs arrive whole, so only
// the end of the session is left to ReadMessage.
func (c *Conn) ReadMessageBefore(deadline time.Time) ([]byte, error) {
	select {
	case f := <-c.in:
		return c.take(f), nil
	default:
	}
	now := time.Now()
	if !deadline.After(now) {
		return nil, mcp.ErrReadTimeout
	}
	// The timer is re-armed only when the deadline moves by more than a
	// second: resetting a runtime timer on every call costs more than the
	// occasional early wake-up, after which the caller simply reads again.
	if c.rdl.IsZero() || c.rdl.After(deadline) || deadline.Sub(c.rdl) > time.Second {
		if c.rtimer == nil {
			c.rtimer = time.NewTimer(deadline.Sub(now))
		} else {
			c.rtimer.Reset(deadline.Sub(now))
		}
		c.rdl = deadline
	}
	select {
	case f := <-c.in:
		return c.take(f), nil
	case <-c.rtimer.C:
		c.rdl = time.Time{}
		return nil, mcp.ErrReadTimeout
	case <-c.intr:
		return nil, mcp.ErrReadTimeout
	case <-c.done:
		return nil, mcp.ErrNotDirect
	}
}

// InterruptRead makes a ReadMessageBefore in progress (or the next one)
// return mcp.ErrReadTimeout.
func (c *Conn) InterruptRead() {
	select {
	case c.intr <- struct{}{}:
	default:
	}
}

// WriteMessage sends one JSON-RPC message as an HTTP POST.
func (c *Conn) WriteMessage(ctx context.Context, msg []byte) error {
	if err := c.stopped(); err != nil {
		return err
	}
	m, err := mcp.ParseMessage(msg)
	if err != nil {
		return fmt.Errorf("httptransport: WriteMessage needs one JSON-RPC message object: %w", err)
	}
	env := envelope{ID: m.ID, Method: m.Method}
	if c.Legacy() {
		return c.legacySend(ctx, msg)
	}
	switch {
	case env.isRequest() && env.Method == mcp.MethodInitialize:
		return c.sendInitialize(ctx, msg, &env)
	case env.isRequest():
		mr := modernOf(ctx, &m)
		if mr != nil {
			c.noteModern()
		}
		return c.startRequest(msg, &env, mr)
	default:
		return c.sendOneWay(ctx, msg, &env)
	}
}

// Close cancels every exchange and stream, ends the session on the server
// (HTTP DELETE, bounded by a short timeout; 405 is fine) and waits for the
// transport's goroutines. It is safe to call more than once.
func (c *Conn) Close() error {
	c.closeOnce.Do(func() {
		c.closed.Store(true)
		c.mu.Lock()
		c.closing = true
		sid, legacy := c.session, c.legacyURL != nil
		c.mu.Unlock()
		c.cancel()
		c.fail(mcp.ErrClosed)
		if sid != "" && !legacy {
			c.deleteSession()
		}
		c.wg.Wait()
		c.workers.Wait()
		c.tr.CloseIdleConnections()
		c.h1.shutdown()
	})
	return nil
}

func (c *Conn) deleteSession() {
	ctx, cancel := context.WithTimeout(context.Background(), min(c.cfg.Timeout, 5*time.Second))
	defer cancel()
	resp, err := c.do(ctx, &exchange{method: http.MethodDelete, noRetry: true})
	if err != nil {
		var se *HTTPStatusError
		if errors.As(err, &se) && se.Status == http.StatusMethodNotAllowed {
			return // the server does not let clients end sessions
		}
		c.log.Debug("ending the session failed", "error", err)
		return
	}
	discard(resp.Body)
}

func (c *Conn) stopped() error {
	if c.closed.Load() {
		return mcp.ErrClosed
	}
	select {
	case <-c.done:
		return c.err
	default:
		return nil
	}
}

// fail ends the Conn with err: ReadMessage returns it, everything stops.
func (c *Conn) fail(err error) {
	c.errOnce.Do(func() {
		c.err = err
		close(c.done)
		c.cancel()
		if err != mcp.ErrClosed {
			c.log.Debug("http transport ended", "error", err)
		}
	})
}

// spawn runs fn in a tracked goroutine unless the Conn is closing. Idle
// goroutines are reused: a fresh one would grow its stack again through
// net/http on every request, which costs more than the request's own work.
func (c *Conn) spawn(fn func()) bool {
	if !c.enter() {
		return false
	}
	select {
	case c.jobs <- fn:
	default:
		c.workers.Add(1)
		go c.worker(fn)
	}
	return true
}

// maxIdle is how long a spare goroutine waits for work before it exits.
const maxIdle = 30 * time.Second

func (c *Conn) worker(fn func()) {
	defer c.workers.Done()
	idle := time.NewTimer(maxIdle)
	defer idle.Stop()
	for {
		fn()
		c.wg.Done()
		idle.Reset(maxIdle)
		select {
		case fn = <-c.jobs:
		case <-idle.C:
			return
		case <-c.ctx.Done():
			return
		}
	}
}

// deliver hands a frame to ReadMessage.
func (c *Conn) deliver(frame []byte) error { return c.deliverOn(frame, nil) }

// deliverOn hands a frame that came on the response stream of request rel
// to ReadMessage.
func (c *Conn) deliverOn(frame []byte, rel json.RawMessage) error {
	select {
	case c.in <- inFrame{frame, rel}:
		return nil
	case <-c.ctx.Done():
		return mcp.ErrClosed
	}
}

// envelope is what the transport reads of a message.
type envelope struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
}

func (e *envelope) hasID() bool {
	return len(e.ID) > 0 && !bytes.Equal(e.ID, []byte("null"))
}

func (e *envelope) isRequest() bool { return e.Method != "" && e.hasID() }

// idKey normalizes a request id so that 1 and "1" stay apart and a
// re-encoded id still matches.
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

// idOfKey is the JSON id idKey made key of.
func idOfKey(key string) json.RawMessage {
	if key[0] == 's' {
		b, _ := json.Marshal(key[2:])
		return b
	}
	return json.RawMessage(key[2:])
}

// sendInitialize posts the initialize request and waits for the response
// headers, so that a server that cannot be reached, refuses or redirects
// fails mcp.Connect with the typed error. A 400, 404 or 405 to this first
// POST switches to the legacy HTTP+SSE transport if the server speaks it.
func (c *Conn) sendInitialize(ctx context.Context, msg []byte, env *envelope) error {
	key := idKey(env.ID)
	c.mu.Lock()
	c.initMsg = bytes.Clone(msg)
	c.initKey = key
	first := !c.posted
	c.posted = true
	c.mu.Unlock()

	// The reply may be a stream read after this returns: tie it to the
	// Conn, and to the caller's ctx only until the headers are in.
	rctx, rcancel := context.WithCancel(c.ctx)
	stop := context.AfterFunc(ctx, rcancel)
	resp, _, err := c.doTracked(rctx, &exchange{method: http.MethodPost, body: msg, timeout: c.cfg.Timeout, noSession: true})
	if err != nil || isStream(resp) {
		stop()
	} else {
		// A JSON reply is read while the caller waits: its ctx (Ctrl-C)
		// still ends the read, as the exchange's timeout does.
		defer stop()
	}
	if err != nil {
		rcancel()
		var se *HTTPStatusError
		if first && errors.As(err, &se) && (se.Status == 400 || se.Status == 404 || se.Status == 405) {
			c.log.Debug("initialize POST failed; trying the legacy HTTP+SSE transport", "status", se.Status)
			lerr := c.openLegacy(ctx)
			if lerr == nil {
				c.log.Info("server speaks the legacy HTTP+SSE transport (2024-11-05)", "url", c.shown)
				return c.legacySend(ctx, msg)
			}
			se.Fallback = lerr
		}
		if isFatal(err) {
			c.fail(err)
		}
		return err
	}
	if err := c.takeSession(resp); err != nil {
		rcancel()
		discard(resp.Body)
		c.fail(err)
		return err
	}
	if isStream(resp) {
		id := bytes.Clone(env.ID)
		c.register(key, rcancel)
		if !c.spawn(func() {
			defer c.unregister(key)
			defer rcancel()
			c.finishRequest(rctx, id, c.follow(rctx, resp, key, true, false))
		}) {
			rcancel()
			discard(resp.Body)
			return mcp.ErrClosed
		}
		return nil
	}
	defer rcancel()
	frame, err := c.readReply(resp, http.MethodPost)
	if err != nil || frame == nil {
		if err == nil {
			err = &UnexpectedResponseError{Server: c.cfg.Server, Method: http.MethodPost, URL: c.shown,
				ContentType: resp.Header.Get("Content-Type"), BodyExcerpt: "(empty: the server did not answer initialize)"}
		}
		c.fail(err)
		return err
	}
	c.noteVersion(frame)
	return c.deliver(frame)
}

// startRequest posts a request from a goroutine: its answer may take as long
// as the tool runs, and the peer must stay free to write meanwhile.
func (c *Conn) startRequest(msg []byte, env *envelope, mr *modernReq) error {
	body := bytes.Clone(msg)
	id := bytes.Clone(env.ID)
	key := idKey(id)
	rctx, rcancel := context.WithCancel(c.ctx)
	c.register(key, rcancel)
	if !c.spawn(func() {
		defer c.unregister(key)
		defer rcancel()
		c.finishRequest(rctx, id, c.request(rctx, body, key, mr))
	}) {
		c.unregister(key)
		rcancel()
		return mcp.ErrClosed
	}
	return nil
}

func (c *Conn) register(key string, cancel context.CancelFunc) {
	c.mu.Lock()
	c.inflight[key] = cancel
	c.mu.Unlock()
}

func (c *Conn) unregister(key string) {
	c.mu.Lock()
	delete(c.inflight, key)
	c.mu.Unlock()
}

// request posts one request and reads its reply.
func (c *Conn) request(ctx context.Context, body []byte, key string, mr *modernReq) error {
	resp, err := c.post(ctx, body, mr)
	if err != nil {
		return err
	}
	if isStream(resp) {
		return c.follow(ctx, resp, key, false, mr != nil)
	}
	return c.deliverReply(resp)
}

// post sends a request; after an expired session (and a successful
// re-initialize) it tries once more.
func (c *Conn) post(ctx context.Context, body []byte, mr *modernReq) (*http.Response, error) {
	for attempt := 0; ; attempt++ {
		x := &exchange{method: http.MethodPost, body: body, modern: mr}
		if mr != nil && mr.method == mcp.MethodServerDiscover {
			// The era probe, answered at once by any server: its headers
			// are awaited no longer than initialize's.
			x.timeout = c.cfg.Timeout
		}
		resp, gen, err := c.doTracked(ctx, x)
		if err == nil {
			return resp, nil
		}
		var exp *SessionExpiredError
		if attempt == 0 && errors.As(err, &exp) && c.recoverSession(gen) == nil {
			continue
		}
		return nil, err
	}
}

// deliverReply reads a JSON reply and hands it to ReadMessage.
func (c *Conn) deliverReply(resp *http.Response) error {
	frame, err := c.readReply(resp, http.MethodPost)
	if err != nil || frame == nil {
		// nil: 202 to a request; the answer may come on the GET stream.
		return err
	}
	return c.deliver(frame)
}

// finishRequest turns the failure of one request into the session's end or
// into a JSON-RPC error answer for that request alone.
func (c *Conn) finishRequest(ctx context.Context, id json.RawMessage, err error) {
	if err == nil || ctx.Err() != nil {
		// Done, or cancelled (by the caller, who no longer waits for an
		// answer, or by Close or a fatal error, which the peer learns of
		// from ReadMessage).
		return
	}
	if isFatal(err) {
		c.fail(err)
		return
	}
	var rre *RPCReplyError
	if errors.As(err, &rre) {
		// The server's own answer, carried by an error status.
		b, _ := json.Marshal(struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Error   *mcp.RPCError   `json:"error"`
		}{"2.0", id, rre.Err})
		_ = c.deliver(b)
		return
	}
	c.log.Debug("request failed", "error", err)
	_ = c.deliver(errorFrame(id, err))
}

// errorFrame is a JSON-RPC error response carrying a transport failure.
func errorFrame(id json.RawMessage, err error) []byte {
	data := map[string]any{"transport": "http"}
	var se *HTTPStatusError
	if errors.As(err, &se) {
		data["status"] = se.Status
	}
	var ended *streamEndedError
	if errors.As(err, &ended) && ended.modern {
		data["reissue"] = true // the request is lost, not resumable
	}
	d, _ := json.Marshal(data)
	b, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   *mcp.RPCError   `json:"error"`
	}{"2.0", id, &mcp.RPCError{Code: mcp.CodeInternalError, Message: err.Error(), Data: d}})
	return b
}

// sendOneWay posts a notification or response and waits for the 202.
func (c *Conn) sendOneWay(ctx context.Context, msg []byte, env *envelope) error {
	c.mu.Lock()
	modern := c.modern && c.session == "" && c.initMsg == nil
	c.mu.Unlock()
	if modern && env.Method == mcp.NotificationCancelled {
		// A modern server learns of a cancellation from its request's
		// stream closing; nothing is posted.
		c.cancelInflight(msg)
		return nil
	}
	switch env.Method {
	case mcp.NotificationInitialized:
		c.mu.Lock()
		c.initedMsg = bytes.Clone(msg)
		c.mu.Unlock()
	}
	// Close must not wait for a server that is slow to say 202.
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(c.ctx, cancel)
	defer stop()
	for attempt := 0; ; attempt++ {
		resp, gen, err := c.doTracked(pctx, &exchange{method: http.MethodPost, body: msg, timeout: c.cfg.Timeout})
		if err != nil {
			var exp *SessionExpiredError
			if attempt == 0 && errors.As(err, &exp) && c.recoverSession(gen) == nil {
				continue
			}
			if c.ctx.Err() != nil {
				return c.stopped()
			}
			if isFatal(err) {
				c.fail(err)
			}
			return err
		}
		if isStream(resp) || (resp.StatusCode == http.StatusOK && resp.ContentLength != 0) {
			// Not what the spec says (202), but a server that answers with
			// messages anyway should have them read.
			c.spawn(func() { c.drainReply(resp) })
		} else {
			discard(resp.Body)
		}
		break
	}
	switch env.Method {
	case mcp.NotificationInitialized:
		c.listen()
	case mcp.NotificationCancelled:
		// The server knows now; stop reading the cancelled request's stream.
		c.cancelInflight(msg)
	}
	return nil
}

// cancelInflight ends the exchange of the request a notifications/cancelled
// names.
func (c *Conn) cancelInflight(msg []byte) {
	var n struct {
		Params struct {
			RequestID json.RawMessage `json:"requestId"`
		} `json:"params"`
	}
	if json.Unmarshal(msg, &n) == nil && len(n.Params.RequestID) > 0 {
		c.mu.Lock()
		cancel := c.inflight[idKey(n.Params.RequestID)]
		c.mu.Unlock()
		if cancel != nil {
			cancel()
		}
	}
}

// drainReply reads messages from an unexpected reply to a notification.
func (c *Conn) drainReply(resp *http.Response) {
	if isStream(resp) {
		_ = c.follow(c.ctx, resp, "", false, false)
		return
	}
	if frame, err := c.readReply(resp, http.MethodPost); err == nil && frame != nil {
		_ = c.deliver(frame)
	}
}

// takeSession records the session id from the initialize response.
func (c *Conn) takeSession(resp *http.Response) error {
	vals := resp.Header.Values("Mcp-Session-Id")
	if len(vals) == 0 {
		return nil
	}
	sid := vals[0]
	if reason := checkSessionID(sid, len(vals)); reason != "" {
		return &InvalidSessionIDError{Server: c.cfg.Server, URL: c.shown, Reason: reason}
	}
	c.mu.Lock()
	if c.session == "" {
		c.session = sid
	}
	c.mu.Unlock()
	return nil
}

// MaxSessionID bounds the Mcp-Session-Id Nexus accepts.
const MaxSessionID = 256

func checkSessionID(sid string, n int) string {
	switch {
	case n > 1:
		return "the header appears more than once"
	case sid == "":
		return "it is empty"
	case len(sid) > MaxSessionID:
		return fmt.Sprintf("it is %d bytes long; at most %d are accepted", len(sid), MaxSessionID)
	}
	for i := 0; i < len(sid); i++ {
		if sid[i] < 0x21 || sid[i] > 0x7e {
			return fmt.Sprintf("byte %d is 0x%02x; only visible ASCII (0x21-0x7E) is allowed", i, sid[i])
		}
	}
	return ""
}

// noteVersion reads the negotiated version from the initialize response,
// to send it as MCP-Protocol-Version from now on.
func (c *Conn) noteVersion(frame []byte) {
	var r struct {
		Result struct {
			ProtocolVersion string `json:"protocolVersion"`
		} `json:"result"`
	}
	if json.Unmarshal(frame, &r) != nil || r.Result.ProtocolVersion == "" {
		return
	}
	v := r.Result.ProtocolVersion
	if len(v) > 64 || strings.IndexFunc(v, func(r rune) bool {
		return !(r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '-' || r == '.' || r == '_')
	}) >= 0 {
		c.log.Warn("the server's protocolVersion is not a plain token; not sending MCP-Protocol-Version")
		return
	}
	c.mu.Lock()
	c.version = v
	c.mu.Unlock()
}

// recoverSession handles an expired session seen by an exchange made with
// session generation gen: nil when the session was re-initialized (by this
// call or a concurrent one), else the *SessionExpiredError the Conn now
// fails with.
func (c *Conn) recoverSession(gen int) error {
	c.reinitMu.Lock()
	defer c.reinitMu.Unlock()
	c.mu.Lock()
	current, init := c.gen, c.initMsg
	c.mu.Unlock()
	if current != gen {
		return nil
	}
	exp := &SessionExpiredError{Server: c.cfg.Server, URL: c.shown}
	if !c.cfg.Reinitialize || c.reinits > 0 || init == nil {
		c.fail(exp)
		return exp
	}
	c.reinits++
	c.log.Info("session expired; re-initializing")
	if err := c.reinitialize(); err != nil {
		exp.Reinit = err
		c.fail(exp)
		return exp
	}
	return nil
}

// reinitialize replays initialize and notifications/initialized and keeps
// the second initialize response from the peer, which is not waiting for it.
func (c *Conn) reinitialize() error {
	c.mu.Lock()
	c.session, c.version = "", ""
	init, key, inited := c.initMsg, c.initKey, c.initedMsg
	c.mu.Unlock()
	ctx, cancel := context.WithTimeout(c.ctx, c.cfg.Timeout)
	defer cancel()
	resp, _, err := c.doTracked(ctx, &exchange{method: http.MethodPost, body: init, timeout: c.cfg.Timeout, noSession: true})
	if err != nil {
		return err
	}
	if err := c.takeSession(resp); err != nil {
		discard(resp.Body)
		return err
	}
	if isStream(resp) {
		defer resp.Body.Close()
		var cur cursor
		r := NewSSEReader(resp.Body, c.cfg.MaxMessageSize)
		defer r.Release()
		_, got, err := c.consume(ctx, r, key, &cur, isInit|swallowResponse)
		if err != nil {
			return err
		}
		if !got {
			return errors.New("the initialize stream ended without a response")
		}
	} else {
		frame, err := c.readReply(resp, http.MethodPost)
		if err != nil {
			return err
		}
		c.noteVersion(frame)
	}
	if inited != nil {
		resp, _, err := c.doTracked(ctx, &exchange{method: http.MethodPost, body: inited, timeout: c.cfg.Timeout})
		if err != nil {
			return err
		}
		discard(resp.Body)
	}
	c.mu.Lock()
	c.gen++
	c.mu.Unlock()
	return nil
}

// isFatal says whether err ends the session rather than one request.
func isFatal(err error) bool {
	var (
		blocked  *BlockedAddressError
		redirect *RedirectError
		authErr  *AuthError
		expired  *SessionExpiredError
		badID    *InvalidSessionIDError
		large    *BodyTooLargeError
		status   *HTTPStatusError
		proto    *ProtocolError
		unknown  x509.UnknownAuthorityError
		hostname x509.HostnameError
		invalid  x509.CertificateInvalidError
		verify   *tls.CertificateVerificationError
		record   tls.RecordHeaderError
	)
	switch {
	case errors.As(err, &blocked), errors.As(err, &redirect), errors.As(err, &expired), errors.As(err, &authErr),
		errors.As(err, &badID), errors.As(err, &large), errors.As(err, &proto):
		return true
	case errors.As(err, &status):
		return status.Status == http.StatusUnauthorized
	case errors.As(err, &unknown), errors.As(err, &hostname), errors.As(err, &invalid),
		errors.As(err, &verify), errors.As(err, &record):
		return true
	}
	return isDialError(err)
}
