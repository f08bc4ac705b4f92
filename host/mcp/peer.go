package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
)

// JSON-RPC error codes used by MCP.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternalError  = -32603
	// CodeBusy is returned when the bounded queue of incoming requests is full.
	CodeBusy = -32000
	// CodeURLElicitationRequired is the 2025-11-25 error a server returns when a
	// request needs a URL-mode elicitation first.
	CodeURLElicitationRequired = -32042
)

// RPCError is a JSON-RPC error object, as received from or sent to the peer.
type RPCError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *RPCError) Error() string {
	if len(e.Data) > 0 && len(e.Data) < 512 {
		return fmt.Sprintf("%s (code %d, data %s)", e.Message, e.Code, e.Data)
	}
	return fmt.Sprintf("%s (code %d)", e.Message, e.Code)
}

// MethodNotFound builds the error for a method this side does not serve.
func MethodNotFound(method string) *RPCError {
	return &RPCError{Code: CodeMethodNotFound, Message: "method not found: " + method}
}

// InvalidParams builds an invalid-params error.
func InvalidParams(format string, args ...any) *RPCError {
	return &RPCError{Code: CodeInvalidParams, Message: fmt.Sprintf(format, args...)}
}

// TimeoutError is returned when a request got no answer in time. The peer
// has already sent notifications/cancelled for it.
type TimeoutError struct {
	Method string
	After  time.Duration
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("%s: no response within %s (request cancelled)", e.Method, e.After)
}

// Timeout lets callers treat it like net.Error timeouts.
func (e *TimeoutError) Timeout() bool { return true }

// InvalidMessageError reports a frame that is not valid JSON-RPC. The peer
// ends the session on it: the stream can no longer be trusted.
type InvalidMessageError struct {
	Frame  []byte // at most 4 KiB of the offending frame
	Offset int64  // byte offset of the syntax error in Frame, -1 if unknown
	Err    error
}

func (e *InvalidMessageError) Error() string {
	return fmt.Sprintf("invalid JSON-RPC message from the other side: %v", e.Err)
}

func (e *InvalidMessageError) Unwrap() error { return e.Err }

// Handler serves requests and notifications that the other side sends.
// HandleRequest returns the result (marshalled to JSON) or an error; an
// *RPCError is sent as it is, any other error as an internal error.
// ctx is cancelled when the other side cancels the request or the session ends.
type Handler interface {
	HandleRequest(ctx context.Context, method string, params json.RawMessage) (any, error)
	HandleNotification(ctx context.Context, method string, params json.RawMessage)
}

// PeerOptions tune a Peer. The zero value is usable.
type PeerOptions struct {
	Logger hclog.Logger
	// Handler serves incoming requests; nil answers every one with method not found.
	Handler Handler
	// Timeout applies to each outgoing request whose context has no deadline
	// (default 30 s). A progress notification for the request restarts it.
	Timeout time.Duration
	// MaxTimeout bounds a request whose timeout keeps being restarted by
	// progress (default 10 minutes).
	MaxTimeout time.Duration
	// MaxHandlers bounds the goroutines serving incoming requests (default 32);
	// up to MaxQueue more wait, beyond that the peer answers CodeBusy.
	MaxHandlers int
	MaxQueue    int
	// NoDrain makes the end of the input cancel the requests in flight
	// instead of waiting (up to Timeout) for their answers: for a gateway,
	// whose client closing its side means it is gone, so the work it asked
	// for upstream must stop.
	NoDrain bool
}

// Peer is one side of a JSON-RPC 2.0 connection: it sends requests and
// notifications, matches responses to requests, and serves what the other
// side sends. Many requests may be in flight at once; writes are serialized.
type Peer struct {
	conn    Conn
	log     hclog.Logger
	handler Handler
	opts    PeerOptions

	nextID    atomic.Int64
	nextToken atomic.Int64

	mu       sync.Mutex
	pending  map[int64]*call
	progress map[string]*call // by progress token, for requests that asked for progress
	incoming map[reqKey]*reqCtx
	// One goroutine at a time holds the reading role: a background reader
	// (readLoop) or, over a DirectReader, a caller reading its own reply.
	reading    bool
	directCall *call // the caller reading its own reply, if any

	direct DirectReader  // conn, when it can bound its reads in time
	owner  FrameOwner    // conn, when it can hand over frames
	rw     RequestWriter // conn, when it answers requests one by one
	idle   *time.Timer   // gives a free reading role to a background reader
	reaper *time.Timer   // times out calls at their deadline (see reap)
	reapAt time.Time     // when reaper fires; zero when it is not armed (under mu)
	idleAt time.Time     // when idle fires; zero once it has (under mu)
	// directFrames counts frames read by callers themselves; tests check
	// that the fast path is taken.
	directFrames atomic.Int64
	inflight     atomic.Int64 // calls registered and not yet forgotten
	// boundWrites: responses are written under a timeout, because the
	// conn's writes honour their context (see WriteBounder).
	boundWrites bool

	wmu  sync.Mutex
	wbuf []byte
	big  bool // the last frame outgrew keepMax: build the next in a pooled buffer

	// Batched writes (transports that implement FrameWriter); under wmu.
	fw       FrameWriter
	wcond    *sync.Cond
	pend     []byte // frames queued while a write is in progress
	pendBuf  []byte // the other buffer, swapped with pend on each write
	pendN    int    // frames in pend
	writing  bool   // a sender is writing; the others queue
	batch    uint64 // id of the batch pend belongs to
	flushed  uint64 // batches below this id are written
	werr     error  // the first write error
	failedAt uint64 // the batch it happened in
	corked   bool   // pend holds responses held back for one write (flushCorked)
	fb       FrameBufferer
	// Requests in pend whose senders did not wait for the write (see
	// flush): a failed write is reported to their calls instead.
	pendIDs, pendIDsBuf []int64

	hmu      sync.Mutex
	serving  sync.WaitGroup // incoming requests accepted and not yet answered
	draining bool           // the input ended: no more requests are accepted
	active   int
	queue    []*inbound
	baseCtx  context.Context
	// valueCtx is what a request's context (reqCtx) holds beneath its own
	// cancellation: the session's values, of which there are none.
	// Background, not context.WithoutCancel(baseCtx): that one allocates
	// on every Value lookup, and a call makes several.
	valueCtx context.Context
	stop     context.CancelFunc

	done    chan struct{}
	errOnce sync.Once
	err     error
}

type call struct {
	ch         chan reply
	onProgress func(Progress)
	reset      chan struct{}
	token      string
	deadline   time.Time // when the reaper times the call out; zero: never (under mu)
}

type reply struct {
	result   json.RawMessage
	err      *RPCError
	failed   error // the request could not be written (see failQueued)
	timedOut bool  // the call's deadline passed (see reap)
}

type inbound struct {
	id     json.RawMessage
	method string
	params json.RawMessage
	cork   bool // more requests are buffered: hold the response back (see readLoop)
	ctx    reqCtx
}

var callPool = sync.Pool{New: func() any { return &call{ch: make(chan reply, 1)} }}

// NewPeer wraps conn. Call Start to begin reading.
func NewPeer(conn Conn, opts PeerOptions) *Peer {
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 30 * time.Second
	}
	if opts.MaxTimeout <= 0 {
		opts.MaxTimeout = 10 * time.Minute
	}
	if opts.MaxHandlers <= 0 {
		opts.MaxHandlers = 32
	}
	if opts.MaxQueue <= 0 {
		opts.MaxQueue = 1024
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &Peer{
		conn:     conn,
		log:      opts.Logger,
		handler:  opts.Handler,
		opts:     opts,
		pending:  make(map[int64]*call),
		progress: make(map[string]*call),
		incoming: make(map[reqKey]*reqCtx),
		baseCtx:  ctx,
		valueCtx: context.Background(),
		stop:     cancel,
		done:     make(chan struct{}),
	}
	p.fw, _ = conn.(FrameWriter)
	p.rw, _ = conn.(RequestWriter)
	if p.fw != nil {
		p.fb, _ = conn.(FrameBufferer)
	}
	p.boundWrites = true
	if wb, ok := conn.(WriteBounder); ok {
		p.boundWrites = wb.WritesHonourDeadline()
	}
	if d, ok := conn.(DirectReader); ok && d.DirectReads() {
		p.direct = d
	}
	p.owner, _ = conn.(FrameOwner)
	p.wcond = sync.NewCond(&p.wmu)
	p.idle = time.AfterFunc(time.Hour, p.takeIdle)
	p.reaper = time.AfterFunc(time.Hour, p.reap)
	p.reaper.Stop()
	p.idle.Stop()
	return p
}

// Start begins reading. It returns at once.
func (p *Peer) Start() {
	p.mu.Lock()
	p.reading = true
	p.mu.Unlock()
	// Deliver only from now on: whoever made the Peer (a ServerSession
	// keeping it) is done setting up before a handler can run.
	if pc, ok := p.conn.(PushConn); ok {
		pc.SetDeliver(p.Deliver)
	}
	go p.readLoop()
}

// Done is closed when the connection has ended; Err then says why.
func (p *Peer) Done() <-chan struct{} { return p.done }

// Err is the reason the connection ended, or nil while it is alive.
func (p *Peer) Err() error {
	select {
	case <-p.done:
		return p.err
	default:
		return nil
	}
}

// Close ends the connection; in-flight calls fail with ErrClosed.
func (p *Peer) Close() error {
	p.fail(ErrClosed)
	return p.conn.Close()
}

// fail records the first terminal error and wakes every waiter.
func (p *Peer) fail(err error) {
	p.errOnce.Do(func() {
		// done closes before waiters wake so that they read the error.
		p.err = err
		close(p.done)
		p.stop()
		p.idle.Stop()
		p.reaper.Stop()
		p.mu.Lock()
		for _, rc := range p.incoming {
			rc.cancel()
		}
		for id, c := range p.pending {
			delete(p.pending, id)
			c.ch <- reply{}
		}
		p.mu.Unlock()
	})
}

// CallOption changes one outgoing request.
type CallOption func(*callConfig)

type callConfig struct {
	timeout    time.Duration
	onProgress func(Progress)
	token      string
}

// applyOptions builds a call's configuration. It is a function of its own
// so that the configuration escapes to the heap only when there are
// options (they take its address).
func applyOptions(opts []CallOption) callConfig {
	var cfg callConfig
	for _, o := range opts {
		o(&cfg)
	}
	return cfg
}

// WithTimeout overrides the peer's request timeout for this call.
func WithTimeout(d time.Duration) CallOption { return func(c *callConfig) { c.timeout = d } }

// WithProgress routes notifications/progress carrying token to fn, and
// restarts the request timeout on each (bounded by MaxTimeout). The caller
// puts the same token into the request's `_meta.progressToken`; NewProgressToken
// makes one.
func WithProgress(token json.RawMessage, fn func(Progress)) CallOption {
	return func(c *callConfig) { c.onProgress = fn; c.token = string(token) }
}

// NewProgressToken returns a token unique among this peer's requests.
func (p *Peer) NewProgressToken() json.RawMessage {
	return strconv.AppendInt(nil, p.nextToken.Add(1), 10)
}

// Call sends a request and decodes the result into result (if non-nil).
func (p *Peer) Call(ctx context.Context, method string, params, result any, opts ...CallOption) error {
	raw, err := p.CallRaw(ctx, method, params, opts...)
	if err != nil {
		return err
	}
	if result == nil {
		return nil
	}
	// raw is this call's own copy of the response (onResponse).
	if d, ok := result.(ownedDecoder); ok {
		if err := d.decodeOwned(raw); err != nil {
			return fmt.Errorf("%s: malformed result: %w", method, err)
		}
		return nil
	}
	if d, ok := result.(decoder); ok {
		if err := d.decodeJSON(raw); err != nil {
			return fmt.Errorf("%s: malformed result: %w", method, err)
		}
		return nil
	}
	if err := json.Unmarshal(raw, result); err != nil {
		return fmt.Errorf("%s: malformed result: %w", method, err)
	}
	return nil
}

// CallRaw sends a request and returns the raw result.
func (p *Peer) CallRaw(ctx context.Context, method string, params any, opts ...CallOption) (json.RawMessage, error) {
	var cfg callConfig
	if len(opts) > 0 {
		cfg = applyOptions(opts)
	}
	if err := p.Err(); err != nil {
		return nil, err
	}
	id := p.nextID.Add(1)
	c := callPool.Get().(*call)
	c.deadline = time.Time{}
	c.onProgress = cfg.onProgress
	c.token = cfg.token
	if c.onProgress != nil && c.reset == nil {
		c.reset = make(chan struct{}, 1)
	}
	timeout := cfg.timeout
	if timeout <= 0 {
		timeout = p.opts.Timeout
	}
	// deadline is when the call times out unless ctx ends it first (zero:
	// ctx's deadline rules); hard bounds a call that progress keeps alive.
	var deadline, hard time.Time
	_, hasDeadline := ctx.Deadline()
	if !hasDeadline || cfg.timeout > 0 || c.onProgress != nil {
		now := time.Now()
		if !hasDeadline || cfg.timeout > 0 {
			deadline = now.Add(timeout)
		}
		if c.onProgress != nil {
			hard = now.Add(p.opts.MaxTimeout)
		}
	}

	p.inflight.Add(1)
	p.mu.Lock()
	p.pending[id] = c
	if c.onProgress != nil {
		p.progress[c.token] = c
	} else if !deadline.IsZero() {
		// The reaper times it out: one timer for the session instead
		// of one per call. (Progress moves a deadline; those calls keep
		// timers of their own.)
		c.deadline = deadline
		p.armReaper(deadline)
	}
	p.mu.Unlock()

	var err error
	if p.rw != nil {
		// The exchange may run on this goroutine: bound it like the call
		// (progress can extend a call, so such calls get the hard limit;
		// the timeout then ends them through the cancellation).
		dl := deadline
		if c.onProgress != nil {
			dl = hard
		}
		err = p.sendRequest(ctx, dl, id, method, params)
	} else {
		err = p.send(ctx, id, method, params)
	}
	if err != nil {
		p.forget(id, c)
		return nil, err
	}
	if p.direct != nil && p.acquire(c) {
		p.readOwn(ctx, c, &deadline, hard, timeout)
		select {
		case r := <-c.ch:
			return p.settle(id, c, r, method, timeout)
		default:
		}
	}

	var timerC <-chan time.Time
	var timer *time.Timer
	if !deadline.IsZero() && c.onProgress != nil {
		timer = time.NewTimer(time.Until(deadline))
		defer timer.Stop()
		timerC = timer.C
	}
	var hardC <-chan time.Time
	if !hard.IsZero() {
		hardT := time.NewTimer(time.Until(hard))
		defer hardT.Stop()
		hardC = hardT.C
	}
	for {
		select {
		case r := <-c.ch:
			return p.settle(id, c, r, method, timeout)
		case <-c.reset:
			if timer != nil {
				timer.Reset(timeout)
			}
		case <-timerC:
			p.abandon(id, c, "timeout")
			return nil, &TimeoutError{Method: method, After: timeout}
		case <-hardC:
			p.abandon(id, c, "timeout")
			return nil, &TimeoutError{Method: method, After: p.opts.MaxTimeout}
		case <-ctx.Done():
			p.abandon(id, c, ctx.Err().Error())
			return nil, ctx.Err()
		}
	}
}

// settle ends a call with what came through its channel: a reply, or the
// reaper's word that its deadline passed.
func (p *Peer) settle(id int64, c *call, r reply, method string, timeout time.Duration) (json.RawMessage, error) {
	if r.timedOut {
		p.abandon(id, c, "timeout")
		return nil, &TimeoutError{Method: method, After: timeout}
	}
	return p.finish(id, c, r)
}

// armReaper makes sure the reaper fires by deadline; mu is held.
func (p *Peer) armReaper(deadline time.Time) {
	if !p.reapAt.IsZero() && !deadline.Before(p.reapAt) {
		return // calls mostly share one timeout: nearly always taken
	}
	p.reapAt = deadline
	p.reaper.Reset(time.Until(deadline))
}

// reap times out the calls whose deadline has passed: each leaves the
// table with a timedOut reply (so that no late answer can land too), and
// a caller reading its own reply is interrupted. Then it arms itself for
// the next deadline.
func (p *Peer) reap() {
	now := time.Now()
	var due []*call
	p.mu.Lock()
	p.reapAt = time.Time{}
	var next time.Time
	for id, c := range p.pending {
		switch {
		case c.deadline.IsZero():
		case !now.Before(c.deadline):
			delete(p.pending, id)
			c.deadline = time.Time{}
			c.ch <- reply{timedOut: true}
			due = append(due, c)
		case next.IsZero() || c.deadline.Before(next):
			next = c.deadline
		}
	}
	if !next.IsZero() {
		p.armReaper(next)
	}
	p.mu.Unlock()
	for _, c := range due {
		p.interrupt(c)
	}
}

// finish ends a call that got its reply (an empty one: the session ended).
func (p *Peer) finish(id int64, c *call, r reply) (json.RawMessage, error) {
	p.forget(id, c)
	callPool.Put(c)
	if r.err != nil {
		return nil, r.err
	}
	if r.failed != nil {
		return nil, r.failed
	}
	if r.result == nil {
		return nil, p.Err()
	}
	return r.result, nil
}

// readOwn reads frames on the caller's goroutine, holding the reading
// role, until c's reply is in c.ch or this way of waiting must stop: the
// deadline passed, ctx ended, or the next frame needs ReadMessage. It
// always gives up the role before it returns.
func (p *Peer) readOwn(ctx context.Context, c *call, deadline *time.Time, hard time.Time, timeout time.Duration) {
	if stop := onDone(ctx, func() { p.interrupt(c) }); stop != nil {
		defer stop()
	}
	ctxDeadline, _ := ctx.Deadline()
	var e envelope
	for {
		if len(c.ch) > 0 {
			p.release(idleDelay)
			return
		}
		if c.reset != nil {
			select {
			case <-c.reset:
				*deadline = time.Now().Add(timeout)
			default:
			}
		}
		dl := earliest(earliest(*deadline, hard), ctxDeadline)
		if ctx.Err() != nil || !time.Now().Before(dl) {
			p.release(idleDelay) // the caller's select sees why
			return
		}
		frame, err := p.direct.ReadMessageBefore(dl)
		switch {
		case err == nil:
		case errors.Is(err, ErrReadTimeout):
			continue
		default:
			p.handOver()
			return
		}
		p.directFrames.Add(1)
		in, err := p.handleFrame(frame, p.frameOwned(), &e)
		if err != nil {
			p.fail(err)
			return
		}
		if in != nil {
			go p.worker(in)
		}
	}
}

// onDone runs f in a goroutine of its own once ctx is done, as
// context.AfterFunc does, and returns its stop, or nil when ctx is never
// done. A context with an AfterFunc of its own (a request's, and the
// values the host adds over it) gets f directly: context.AfterFunc would
// first wrap it in a context of its own, which costs every call several
// allocations and locks.
func onDone(ctx context.Context, f func()) (stop func() bool) {
	if a, ok := ctx.(interface{ AfterFunc(func()) func() bool }); ok {
		return a.AfterFunc(f)
	}
	if ctx.Done() == nil {
		return nil
	}
	return context.AfterFunc(ctx, f)
}

// earliest is the earlier of two deadlines, zero meaning none.
func earliest(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}

// acquire takes the free reading role, for caller c (nil: a background
// reader). It fails when someone holds it or the session is over.
func (p *Peer) acquire(c *call) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.reading || p.Err() != nil {
		return false
	}
	p.reading = true
	p.directCall = c
	// idleAt stays: a timer still pending when a reader takes the role
	// back fires into a held role and does nothing, and keeping it lets
	// the next release leave it alone instead of resetting it (a reader
	// serving requests inline releases and retakes the role for each).
	return true
}

// release frees the reading role. If replies are awaited, a new background
// reader takes it at once; otherwise it stays free, for a caller to read
// its own reply or the goroutine that freed it to take it back, and the
// idle timer hands it to a background reader after delay.
func (p *Peer) release(delay time.Duration) {
	if !p.releaseIfIdle(delay) && p.Err() == nil {
		go p.readLoop()
	}
}

// armIdle makes sure the idle timer fires within d; mu is held. A timer
// already due sooner is left alone: resetting a runtime timer to an
// earlier time wakes a thread sleeping in the network poller, which on
// every request would cost more than the wake-ups this design avoids.
func (p *Peer) armIdle(d time.Duration) {
	now := time.Now()
	at := now.Add(d)
	if p.idleAt.After(now) && !p.idleAt.After(at) {
		return
	}
	p.idleAt = at
	p.idle.Reset(d)
}

// releaseIfIdle frees the reading role when no reply is awaited, so that
// the next caller can read its own, and arms the idle timer with delay;
// it reports whether it did (if not, the caller keeps the role).
func (p *Peer) releaseIfIdle(delay time.Duration) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.directCall = nil
	if len(p.pending) > 0 {
		return false
	}
	p.reading = false
	p.armIdle(delay)
	return true
}

// handOver passes the role from a caller to a new background reader.
func (p *Peer) handOver() {
	p.mu.Lock()
	p.directCall = nil
	p.mu.Unlock()
	if p.Err() == nil {
		go p.readLoop()
	}
}

// interrupt stops caller c's direct read, if it is still reading.
func (p *Peer) interrupt(c *call) {
	p.mu.Lock()
	if p.directCall == c {
		p.direct.InterruptRead()
	}
	p.mu.Unlock()
}

// takeIdle runs when the idle timer fires: a free role gets a reader, so
// that nothing the other side sends waits longer than the delay.
func (p *Peer) takeIdle() {
	p.mu.Lock()
	p.idleAt = time.Time{}
	p.mu.Unlock()
	if p.acquire(nil) {
		p.readLoop()
	}
}

// forget removes a finished call from the tables.
func (p *Peer) forget(id int64, c *call) {
	p.inflight.Add(-1)
	p.mu.Lock()
	delete(p.pending, id)
	c.deadline = time.Time{}
	if c.onProgress != nil {
		delete(p.progress, c.token)
	}
	p.mu.Unlock()
	c.onProgress = nil
	c.token = ""
	if c.reset != nil {
		select {
		case <-c.reset:
		default:
		}
	}
}

// abandon gives up on a request and tells the other side, so it can stop
// working on it. The call object is not reused: a late reply may still land
// in its channel.
func (p *Peer) abandon(id int64, c *call, reason string) {
	p.forget(id, c)
	if p.Err() != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	type cancelled struct {
		RequestID int64  `json:"requestId"`
		Reason    string `json:"reason,omitempty"`
	}
	if err := p.Notify(ctx, NotificationCancelled, cancelled{id, reason}); err != nil {
		p.log.Debug("could not send cancellation", "id", id, "error", err)
	}
}

// Notify sends a notification.
func (p *Peer) Notify(ctx context.Context, method string, params any) error {
	if err := p.Err(); err != nil {
		return err
	}
	return p.send(ctx, 0, method, params)
}

// send writes a request (id > 0) or notification (id == 0).
func (p *Peer) send(ctx context.Context, id int64, method string, params any) error {
	praw, err := encodeParams(method, params)
	if err != nil {
		return err
	}
	p.wmu.Lock()
	defer p.wmu.Unlock()
	b, err := appendMessage(p.frameBuf(), id, method, params, praw)
	if err != nil {
		return err
	}
	if b, err = p.oneLine(b, 0); err != nil {
		return fmt.Errorf("%s: encoding params: %w", method, err)
	}
	return p.flush(ctx, b, id)
}

// oneLine returns b with the JSON value b[from:] free of line breaks, for
// a conn that delimits frames by newlines (a FrameWriter). JSON allows a
// newline only between tokens, and raw JSON spliced into a frame
// (arguments a client sent pretty-printed over HTTP, a json.RawMessage an
// embedder passed, a result's raw structured content) may have some:
// written as is, the other side would read two broken frames, and a
// stdio server would end the session. The check is a vector search; a
// value that has one is compacted, and one that is not JSON at all (raw
// JSON that was never checked) is refused rather than written.
func (p *Peer) oneLine(b []byte, from int) ([]byte, error) {
	if p.fw == nil || bytes.IndexByte(b[from:], '\n') < 0 {
		return b, nil
	}
	var out bytes.Buffer
	out.Grow(len(b))
	out.Write(b[:from])
	if err := json.Compact(&out, b[from:]); err != nil {
		return b, fmt.Errorf("the message is not valid JSON: %w", err)
	}
	return out.Bytes(), nil
}

// reqBufs are frames of requests sent through a RequestWriter, which
// are built outside the write lock.
var reqBufs = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// sendRequest sends a request through the conn's RequestWriter, on the
// caller's goroutine and outside the write lock.
func (p *Peer) sendRequest(ctx context.Context, deadline time.Time, id int64, method string, params any) error {
	praw, err := encodeParams(method, params)
	if err != nil {
		return err
	}
	bp := reqBufs.Get().(*[]byte)
	defer reqBufs.Put(bp)
	b, err := appendMessage((*bp)[:0], id, method, params, praw)
	if err != nil {
		return err
	}
	if cap(b) <= 64<<10 {
		*bp = b
	}
	if err := p.rw.WriteRequest(ctx, deadline, b); err != nil {
		if perr := p.Err(); perr != nil {
			return perr
		}
		return err
	}
	return nil
}

// encodeParams marshals params that cannot append themselves.
func encodeParams(method string, params any) ([]byte, error) {
	switch v := params.(type) {
	case nil:
		return nil, nil
	case json.RawMessage:
		return v, nil
	case appender:
		return nil, nil
	}
	b, err := json.Marshal(params)
	if err != nil {
		return nil, fmt.Errorf("%s: encoding params: %w", method, err)
	}
	return b, nil
}

// appendMessage appends a request (id > 0) or notification; praw is
// params already encoded, unless params appends itself.
func appendMessage(b []byte, id int64, method string, params any, praw []byte) ([]byte, error) {
	b = append(b, `{"jsonrpc":"2.0",`...)
	if id > 0 {
		b = append(b, `"id":`...)
		b = strconv.AppendInt(b, id, 10)
		b = append(b, ',')
	}
	b = append(b, `"method":`...)
	b = appendJSONString(b, method)
	if app, ok := params.(appender); ok {
		b = append(b, `,"params":`...)
		var err error
		if b, err = app.appendJSON(b); err != nil {
			return b, fmt.Errorf("%s: encoding params: %w", method, err)
		}
	} else if len(praw) > 0 && !isNull(praw) {
		b = append(b, `,"params":`...)
		b = append(b, praw...)
	}
	return append(b, '}'), nil
}

// keepMax is the largest write buffer a Peer keeps between messages;
// idle sessions should not pin megabytes.
const keepMax = 1 << 20

// bigBufs holds write buffers over keepMax that peers let go of, for the
// next big frame of any peer: a stream of 1 MB messages then reuses a few
// buffers instead of growing each frame through a dozen reallocations and
// freeing it (measured at 1 MB: a fifth of the client's CPU was GC), and
// the pool's idle buffers go with the next collections rather than stay
// pinned by a session. Only buffers no conn holds any more go in: the
// pool is shared, so one still being written would reach another peer.
var bigBufs sync.Pool

// poolMax bounds what bigBufs keeps: one freak message should not live on.
const poolMax = 64 << 20

// frameBuf returns the buffer to build the next frame in; p.wmu is held.
func (p *Peer) frameBuf() []byte {
	if p.big {
		p.big = false
		if v, ok := bigBufs.Get().(*[]byte); ok {
			return (*v)[:0]
		}
	}
	return p.wbuf[:0]
}

// keepBuf takes back a frame buffer nothing uses any more: kept for the
// next message if it is small, pooled if big.
func (p *Peer) keepBuf(b []byte) {
	if cap(b) <= keepMax {
		p.wbuf = b
		return
	}
	p.wbuf = nil
	p.releaseBig(b)
}

// releaseBig pools a big buffer nothing uses any more, and notes whether
// the frame it held was big, which predicts the next one is too.
func (p *Peer) releaseBig(b []byte) {
	p.big = len(b) > keepMax/2
	if cap(b) <= poolMax {
		b = b[:0]
		bigBufs.Put(&b)
	}
}

// respond writes a response to an incoming request. With cork, the
// response is queued for the next write instead (flushCorked).
func (p *Peer) respond(id json.RawMessage, result any, rerr *RPCError, cork bool) {
	var body []byte
	app, direct := result.(appender)
	if rerr == nil && direct {
		// Encode straight into the frame buffer below.
	} else if rerr == nil {
		switch v := result.(type) {
		case json.RawMessage:
			body = v
		default:
			b, err := json.Marshal(result)
			if err != nil {
				rerr = &RPCError{Code: CodeInternalError, Message: "encoding result: " + err.Error()}
			} else {
				body = b
			}
		}
		if rerr == nil && (len(body) == 0 || isNull(body)) {
			body = []byte("{}")
		}
	}
	if rerr != nil {
		b, _ := json.Marshal(rerr)
		body = b
	}
	p.wmu.Lock()
	defer p.wmu.Unlock()
	b := append(p.frameBuf(), `{"jsonrpc":"2.0","id":`...)
	b = append(b, id...)
	if rerr != nil {
		b = append(b, `,"error":`...)
		b = append(b, body...)
	} else {
		b = append(b, `,"result":`...)
		mark := len(b)
		var err error
		if direct {
			b, err = app.appendJSON(b)
		} else {
			b = append(b, body...)
		}
		if err == nil {
			b, err = p.oneLine(b, mark)
		}
		if err != nil {
			eb, _ := json.Marshal(&RPCError{Code: CodeInternalError, Message: "encoding result: " + err.Error()})
			b = append(append(b[:mark-len(`"result":`)], `"error":`...), eb...)
		}
	}
	b = append(b, '}')
	if cork {
		p.pend = append(append(p.pend, b...), '\n')
		p.keepBuf(b)
		p.pendN++
		p.corked = true
		return
	}
	ctx, cancel := p.writeCtx()
	defer cancel()
	if err := p.flush(ctx, b, -1); err != nil {
		p.log.Debug("could not send response", "error", err)
	}
}

// flush sends the frame b, built in p.wbuf; p.wmu is held. Over a
// transport that can write several frames at once, concurrent senders are
// batched: the first becomes the writer and sends what the others queue
// while it writes, so 32 callers cost a few system calls, not 32.
//
// kind says who waits for a queued frame to be written: a notification
// (0) waits, to return the write's error; a request (its id) and a
// response (-1) do not. A request's call learns of a failed write through
// its reply channel (failQueued), and nobody is told about a response;
// not waiting saves each sender a sleep and a wake-up, which under
// concurrency cost more than the write.
func (p *Peer) flush(ctx context.Context, b []byte, kind int64) error {
	if p.fw == nil {
		err := p.write(ctx, b)
		p.keepBuf(b)
		return err
	}
	if len(p.pend) == 0 && !p.writing {
		// Nothing is queued: the frame becomes the batch as it is, not a
		// copy (a large argument is not copied once more). The three
		// buffers rotate and stay distinct: the spare builds the next
		// frame, the empty batch buffer becomes the spare.
		p.pend, p.wbuf, p.pendBuf = append(b, '\n'), p.pendBuf[:0], p.pend[:0]
	} else {
		p.pend = append(append(p.pend, b...), '\n')
		p.keepBuf(b)
	}
	p.pendN++
	mine := p.batch
	if p.writing {
		if kind != 0 && p.werr == nil {
			if kind > 0 {
				p.pendIDs = append(p.pendIDs, kind)
			}
			return nil
		}
		for p.flushed <= mine {
			p.wcond.Wait()
		}
		return p.batchErr(mine)
	}
	if kind > 0 && p.inflight.Load() > groupMin {
		// Group commit: with several calls in flight, the callers their
		// replies just woke are about to send too. Holding the writer's
		// place while they get a turn lets them queue behind this write
		// (measured with 32 callers: a fifth as many writes, and as many
		// fewer wake-ups of the other side); with nothing else to run,
		// Gosched returns at once.
		p.writing = true
		p.wmu.Unlock()
		runtime.Gosched()
		p.wmu.Lock()
		p.writing = false
	}
	p.writePending(ctx, mine)
	return p.batchErr(mine)
}

// failQueued ends the calls whose requests were queued in a batch that
// could not be written: each gets err as its reply (the session's error
// if it has ended), and a caller reading its own reply is interrupted.
func (p *Peer) failQueued(ids []int64, err error) {
	if perr := p.Err(); perr != nil {
		err = perr
	}
	var direct *call
	p.mu.Lock()
	for _, id := range ids {
		c, ok := p.pending[id]
		if !ok {
			continue
		}
		delete(p.pending, id) // as onResponse does: one reply per call
		c.ch <- reply{failed: err}
		if p.directCall == c {
			direct = c
		}
	}
	p.mu.Unlock()
	if direct != nil {
		p.interrupt(direct)
	}
}

// writeCtx bounds the write of responses by the request timeout, where the
// conn's writes honour a context (see boundWrites).
func (p *Peer) writeCtx() (context.Context, context.CancelFunc) {
	if !p.boundWrites {
		return p.baseCtx, func() {}
	}
	return context.WithTimeout(p.baseCtx, p.opts.Timeout)
}

// flushCorked writes the responses respond held back, unless a writer is
// at work, which takes them with its next write.
func (p *Peer) flushCorked() {
	p.wmu.Lock()
	defer p.wmu.Unlock()
	if !p.corked {
		return
	}
	p.corked = false
	if p.writing || len(p.pend) == 0 {
		return
	}
	ctx, cancel := p.writeCtx()
	defer cancel()
	mine := p.batch
	p.writePending(ctx, mine)
	if err := p.batchErr(mine); err != nil {
		p.log.Debug("could not send responses", "error", err)
	}
}

// writePending makes this goroutine the writer until pend is empty; wmu
// is held (and released while writing). mine is the caller's batch.
func (p *Peer) writePending(ctx context.Context, mine uint64) {
	p.writing = true
	for len(p.pend) > 0 {
		buf, n, id, ids := p.pend, p.pendN, p.batch, p.pendIDs
		p.pend, p.pendN, p.pendIDs = p.pendBuf[:0], 0, p.pendIDsBuf[:0]
		p.batch++
		p.wmu.Unlock()
		wctx, cancel := ctx, context.CancelFunc(func() {})
		switch {
		case n == 1 && id == mine:
		case p.boundWrites:
			// Other callers' frames must not fail because this caller
			// gave up; the request timeout still bounds a stuck write.
			wctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), p.opts.Timeout)
		default:
			// The conn's writes cannot be interrupted, so no timer; but
			// a context this caller cancelled must not fail them either.
			wctx = p.valueCtx
		}
		err := p.fw.WriteFrames(wctx, buf)
		cancel()
		p.wmu.Lock()
		if cap(buf) <= keepMax {
			p.pendBuf = buf[:0]
		} else {
			// Not kept; and pendBuf is p.pend's buffer now, which must
			// not be handed out again as the next batch's while p.pend
			// fills it.
			p.pendBuf = nil
			p.releaseBig(buf)
		}
		if err != nil && p.werr == nil {
			p.werr, p.failedAt = err, id
		}
		if err != nil && len(ids) > 0 {
			// On a goroutine of its own: failQueued takes mu, and wmu
			// is held here.
			go p.failQueued(slices.Clone(ids), p.batchErr(id))
		}
		p.pendIDsBuf = ids[:0]
		p.flushed = id + 1
		p.wcond.Broadcast()
	}
	p.writing = false
}

// batchErr is the write error of batch id, if it or an earlier one failed.
func (p *Peer) batchErr(id uint64) error {
	if p.werr == nil || p.failedAt > id {
		return nil
	}
	if perr := p.Err(); perr != nil {
		return perr
	}
	return p.werr
}

func (p *Peer) write(ctx context.Context, b []byte) error {
	if err := p.conn.WriteMessage(ctx, b); err != nil {
		if perr := p.Err(); perr != nil {
			return perr
		}
		return err
	}
	return nil
}

// envelope holds spans of one frame's top-level members. They point into
// the frame, which is only valid until the next read: whatever outlives the
// dispatch is copied.
type envelope struct {
	id, method, params, result, err []byte

	// owned: the frame is the Peer's to keep (FrameOwner), so what a
	// request or response carries on is a slice of it, not a copy.
	owned bool
}

// parseEnvelope validates the whole frame and finds its members in one pass.
func parseEnvelope(frame []byte, e *envelope) error {
	*e = envelope{}
	return members(frame, func(k, v []byte) error {
		switch {
		case keyIs(k, "id"):
			e.id = v
		case keyIs(k, "method"):
			if v[0] != '"' {
				return &scanError{msg: "\"method\" is not a string", offset: 1}
			}
			e.method = v
		case keyIs(k, "params"):
			e.params = v
		case keyIs(k, "result"):
			e.result = v
		case keyIs(k, "error"):
			e.err = v
		}
		return nil
	})
}

// Delays of the reading role, see readLoop and readOwn.
const (
	// corkMax bounds the responses held back for one write: larger batches
	// save system calls but leave the other side idle until they arrive.
	corkMax = 4
	// groupMin: with more calls than this in flight, a request's
	// writer lets other senders join its write (see flush).
	groupMin = 2
	// serveDelay: how long a request served on the goroutine that read it
	// may run before a new goroutine takes over reading.
	serveDelay = 200 * time.Microsecond
	// idleDelay: how long the role stays free after a reply, for the next
	// caller to read its own, before a background reader takes it.
	idleDelay = time.Millisecond
)

// readLoop reads and dispatches frames; it runs holding the reading role.
// When a request may start at once, this goroutine frees the role and
// serves it: a fast handler then runs on the thread that read it, with no
// other thread woken on the critical path (on a loaded or virtualized
// machine that wake-up costs more than the whole JSON-RPC round trip), and
// takes the role back when done. A slow handler is overtaken after
// serveDelay by a reader the idle timer starts, so requests still run
// concurrently. Requests that arrive together are answered with one write
// (FrameBufferer): a response waits while more requests are buffered, at
// most serveDelay, since every new reader first writes what is held back.
// Over a DirectReader the loop also frees the role once no reply is
// awaited, so the next caller reads its own.
func (p *Peer) readLoop() {
	// Responses held back by a goroutine that is still serving (or was
	// overtaken) go out now: no response waits longer than serveDelay.
	p.flushCorked()
	var e envelope
	held := false // responses of this loop wait in pend for one write
	heldN := 0
	for {
		if held && !p.fb.FrameBuffered() {
			p.flushCorked() // before waiting for input
			held, heldN = false, 0
		}
		frame, err := p.conn.ReadMessage()
		if err != nil {
			p.flushCorked()
			if errors.Is(err, io.EOF) && !p.opts.NoDrain {
				// A clean close of the input (a client that sent its last
				// requests and closed stdin) still gets its answers. No
				// request is accepted after this (a PushConn may still
				// deliver one), so the wait below sees them all.
				p.hmu.Lock()
				p.draining = true
				p.hmu.Unlock()
				p.drain()
			}
			p.fail(err)
			return
		}
		in, err := p.handleFrame(frame, p.frameOwned(), &e)
		if err != nil {
			p.flushCorked()
			p.fail(err)
			return
		}
		if in != nil && in.method == MethodInitialize {
			// Nothing may overtake initialize: a client that sends its
			// first requests without waiting for the answer (allowed on
			// an ordered stream) would have them refused as coming
			// before it. So no other reader takes over while it is served.
			p.worker(in)
			continue
		}
		if in != nil {
			// Requests that arrive together are answered together: while
			// more are buffered, their responses wait for one write.
			in.cork = p.fb != nil && heldN < corkMax && p.fb.FrameBuffered()
			if in.cork {
				held = true
				heldN++
			} else {
				heldN = 0
			}
			p.release(serveDelay)
			p.worker(in)
			if !p.acquire(nil) {
				p.flushCorked()
				return
			}
			continue
		}
		if p.direct != nil && e.method == nil {
			if held {
				p.flushCorked()
				held, heldN = false, 0
			}
			if p.releaseIfIdle(idleDelay) {
				return
			}
		}
	}
}

// Deliver handles one message that a PushConn received, on the calling
// goroutine, as if it had been read: a response or notification is
// dispatched, and a request that may start at once is served before
// Deliver returns (one over MaxHandlers is queued as usual). It fails when
// the session is over or the message is malformed; frame is not kept.
func (p *Peer) Deliver(frame []byte) error {
	if err := p.Err(); err != nil {
		return err
	}
	var e envelope
	in, err := p.handleFrame(frame, false, &e)
	if err != nil {
		return err
	}
	if in != nil {
		p.worker(in)
	}
	return nil
}

// handleFrame parses and dispatches one frame. It returns an incoming
// request that may start now, for the caller to serve.
func (p *Peer) handleFrame(frame []byte, owned bool, e *envelope) (*inbound, error) {
	if err := parseEnvelope(frame, e); err != nil {
		return nil, newInvalidMessage(frame, err)
	}
	e.owned = owned
	in, err := p.dispatch(e)
	if err != nil {
		return nil, newInvalidMessage(frame, err)
	}
	return in, nil
}

func newInvalidMessage(frame []byte, err error) *InvalidMessageError {
	off := int64(-1)
	var se *json.SyntaxError
	var sc *scanError
	switch {
	case errors.As(err, &sc):
		off = sc.offset
	case errors.As(err, &se):
		off = se.Offset
	}
	const keep = 4 << 10
	f := frame
	if len(f) > keep {
		f = f[:keep]
	}
	return &InvalidMessageError{Frame: append([]byte(nil), f...), Offset: off, Err: err}
}

// frameOwned reports whether the frame just read is the Peer's to keep.
func (p *Peer) frameOwned() bool { return p.owner != nil && p.owner.FrameOwned() }

func isNull(v []byte) bool { return len(v) == 4 && string(v) == "null" }

// dispatch handles one frame. It returns an incoming request that may start
// now (already counted as active), for the caller to serve.
func (p *Peer) dispatch(e *envelope) (*inbound, error) {
	hasID := len(e.id) > 0 && !isNull(e.id)
	switch {
	case e.method != nil:
		method, err := internMethod(e.method)
		if err != nil {
			return nil, err
		}
		if hasID {
			var id, params json.RawMessage
			if e.owned {
				id, params = keep(e.id, true), keep(e.params, true)
			} else {
				id, params = cloneTwo(e.id, e.params)
			}
			return p.onRequest(id, method, params), nil
		}
		p.onNotification(method, e.params)
	case len(e.id) > 0:
		p.onResponse(e)
	default:
		p.log.Warn("dropping message that is neither request, response nor notification")
	}
	return nil, nil
}

// cloneTwo copies a request's id and params in one allocation.
func cloneTwo(a, b []byte) (json.RawMessage, json.RawMessage) {
	buf := make([]byte, len(a)+len(b))
	n := copy(buf, a)
	copy(buf[n:], b)
	ca := json.RawMessage(buf[:n:n])
	if b == nil {
		return ca, nil
	}
	return ca, json.RawMessage(buf[n:])
}

func clone(b []byte) json.RawMessage {
	if b == nil {
		return nil
	}
	return append(json.RawMessage(nil), b...)
}

func (p *Peer) onResponse(e *envelope) {
	id, err := strconv.ParseInt(string(e.id), 10, 64)
	if err != nil {
		p.log.Warn("dropping response with an id this client never sends", "id", string(e.id))
		return
	}
	p.mu.Lock()
	c, ok := p.pending[id]
	if ok {
		delete(p.pending, id)
	}
	p.mu.Unlock()
	if !ok {
		if id > 0 && id <= p.nextID.Load() {
			// A request this side sent and gave up on (cancelled, timed
			// out): its answer is late, not wrong.
			p.log.Debug("dropping a late response to a request no longer waited for", "id", id)
		} else {
			p.log.Warn("dropping response that matches no request this side sent", "id", id)
		}
		return
	}
	switch {
	case e.err != nil:
		rerr := &RPCError{}
		if err := json.Unmarshal(e.err, rerr); err != nil || isNull(e.err) {
			rerr = &RPCError{Code: CodeInvalidRequest, Message: "malformed error object in response"}
		}
		c.ch <- reply{err: rerr}
	case e.result == nil:
		c.ch <- reply{err: &RPCError{Code: CodeInvalidRequest, Message: "response has neither result nor error"}}
	default:
		c.ch <- reply{result: keep(e.result, e.owned)}
	}
}

func (p *Peer) onNotification(method string, params json.RawMessage) {
	switch method {
	case NotificationCancelled:
		var n struct {
			RequestID json.RawMessage `json:"requestId"`
		}
		if json.Unmarshal(params, &n) == nil {
			p.mu.Lock()
			rc := p.incoming[keyOf(n.RequestID)]
			p.mu.Unlock()
			if rc != nil {
				rc.cancel()
			}
		}
		return
	case NotificationProgress:
		var pr Progress
		if err := json.Unmarshal(params, &pr); err != nil {
			p.log.Debug("malformed progress notification", "error", err)
			return
		}
		p.mu.Lock()
		c := p.progress[string(pr.ProgressToken)]
		var fn func(Progress)
		if c != nil {
			fn = c.onProgress
		}
		p.mu.Unlock()
		if fn != nil {
			select {
			case c.reset <- struct{}{}:
			default:
			}
			fn(pr)
			return
		}
	}
	if p.handler != nil {
		// Handlers may keep params; the frame's bytes are reused.
		p.handler.HandleNotification(p.baseCtx, method, clone(params))
	}
}

// onRequest accepts an incoming request. It returns it when it may start
// now; otherwise it is queued, or refused when the queue is full.
func (p *Peer) onRequest(id json.RawMessage, method string, params json.RawMessage) *inbound {
	if method == MethodPing {
		// Answered aside from the handlers, but counted with them, so the
		// drain at the end of input waits for its answer too.
		p.hmu.Lock()
		draining := p.draining
		if !draining {
			p.serving.Add(1)
		}
		p.hmu.Unlock()
		if draining {
			go p.respond(id, nil, &RPCError{Code: CodeInternalError, Message: "the session is closing"}, false)
			return nil
		}
		go func() {
			defer p.serving.Done()
			p.respond(id, json.RawMessage("{}"), nil, false)
		}()
		return nil
	}
	in := &inbound{id: id, method: method, params: params}
	p.hmu.Lock()
	defer p.hmu.Unlock()
	switch {
	case p.draining:
		go p.respond(id, nil, &RPCError{Code: CodeInternalError, Message: "the session is closing"}, false)
	case p.active < p.opts.MaxHandlers:
		p.active++
		p.serving.Add(1)
		return in
	case len(p.queue) < p.opts.MaxQueue:
		p.queue = append(p.queue, in)
		p.serving.Add(1)
	default:
		go p.respond(id, nil, &RPCError{Code: CodeBusy, Message: "too many requests in flight; retry later"}, false)
	}
	return nil
}

func (p *Peer) worker(in *inbound) {
	for in != nil {
		p.serve(in)
		p.serving.Done()
		p.hmu.Lock()
		if len(p.queue) > 0 {
			in = p.queue[0]
			p.queue[0] = nil
			p.queue = p.queue[1:]
		} else {
			in = nil
			p.active--
		}
		p.hmu.Unlock()
	}
}

func (p *Peer) serve(in *inbound) {
	key := keyOf(in.id)
	ctx := &in.ctx
	ctx.Context = p.valueCtx
	ctx.id = in.id
	ctx.handler = p.handler
	p.mu.Lock()
	if p.Err() != nil {
		ctx.cancel() // the session ended: fail registered requests did
	}
	p.incoming[key] = ctx
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		if p.incoming[key] == ctx {
			delete(p.incoming, key)
		}
		p.mu.Unlock()
		ctx.cancel()
	}()

	var result any
	var err error
	func() {
		defer func() {
			if r := recover(); r != nil {
				p.log.Error("handler panicked", "method", in.method, "panic", r)
				err = &RPCError{Code: CodeInternalError, Message: fmt.Sprintf("internal error in %s handler", in.method)}
			}
		}()
		if p.handler == nil {
			err = MethodNotFound(in.method)
			return
		}
		result, err = p.handler.HandleRequest(ctx, in.method, in.params)
	}()
	if ctx.Err() != nil && p.baseCtx.Err() == nil {
		// Cancelled by the other side: the spec says not to answer.
		return
	}
	if p.baseCtx.Err() != nil {
		return
	}
	if err != nil {
		var rerr *RPCError
		if !errors.As(err, &rerr) {
			rerr = &RPCError{Code: CodeInternalError, Message: err.Error()}
		}
		p.respond(in.id, nil, rerr, in.cork)
		return
	}
	p.respond(in.id, result, nil, in.cork)
}

// drain waits, at most one request timeout, for accepted incoming requests
// to be answered.
func (p *Peer) drain() {
	done := make(chan struct{})
	go func() { p.serving.Wait(); close(done) }()
	t := time.NewTimer(p.opts.Timeout)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}
