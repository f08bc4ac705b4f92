package mcp

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
)

// A Peer and its life: the types every other file of the peer shares, how
// one is made and started, and how it ends (fail records the first error
// and closes done; Close ends it on purpose).
//
// The peer's work is split by role, each file with its contract at the top:
//   - call.go: a request out and its reply back, timeouts and the reaper.
//   - role.go: who reads the connection, and how that role moves.
//   - write.go: frames out, built by hand and written in groups.
//   - read.go: frames in, dispatched to the waiting call or to the Handler.
//
// Three locks guard separate state:
//   - mu guards the call tables (pending, progress, incoming) and the
//     reading role (reading, directCall, the idle and reaper timers);
//   - wmu guards everything that is written (wbuf and the batch queue);
//   - hmu guards the incoming requests being served (active, queue,
//     draining).

// Handler serves requests and notifications that the other side sends.
// HandleRequest returns the result (marshalled to JSON) or an error; an
// *RPCError is sent as it is, any other error as an internal error.
// ctx is cancelled when the other side cancels the request or the session ends.
// params are valid JSON: the Peer validated the frame as it read it, and
// handlers rely on that (DecodeValidCallToolParams).
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
	// DrainTimeout bounds that wait (default Timeout); requests still
	// unanswered then are cancelled.
	DrainTimeout time.Duration
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
	rel    RelatedFramer // conn, when it ties frames to this side's requests
	rw     RequestWriter // conn, when it answers requests one by one
	idle   *time.Timer   // gives a free reading role to a background reader
	reaper *time.Timer   // times out calls at their deadline (see reap)
	reapAt time.Time     // when reaper fires; zero when it is not armed (under mu)
	idleAt time.Time     // when idle fires; zero once it has (under mu)
	// idleWait is idleDelay in nanoseconds. Tests lengthen it to keep a
	// freed role free until their next call takes it, which otherwise
	// races the timer.
	idleWait atomic.Int64
	// serveWait is serveDelay in nanoseconds; tests lengthen it too.
	serveWait atomic.Int64
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
	// spare hands a request to a worker that served one and waits for
	// the next (spawn); unbuffered, so a send only finds one waiting.
	spare chan *inbound
	// readers hands the reading role, taken for it, to a reader that was
	// overtaken while it served a request and waits for it again
	// (newReader); unbuffered, like spare.
	readers chan struct{}
	baseCtx context.Context
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
	ctx        context.Context // the caller's, for CallOf (under mu while pending)
	deadline   time.Time       // when the reaper times the call out; zero: never (under mu)
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
		spare:    make(chan *inbound),
		readers:  make(chan struct{}),
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
	p.rel, _ = conn.(RelatedFramer)
	p.wcond = sync.NewCond(&p.wmu)
	p.idleWait.Store(int64(idleDelay))
	p.serveWait.Store(int64(serveDelay))
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
	if cc, ok := p.conn.(CheckedPushConn); ok {
		cc.SetDeliverChecked(p.deliverChecked) // first: see sessionConn
	}
	if pc, ok := p.conn.(PushConn); ok {
		pc.SetDeliver(p.Deliver)
	}
	go p.readLoop()
}

// Conn is the connection the peer runs on.
func (p *Peer) Conn() Conn { return p.conn }

// Incoming is how many of the other side's requests the peer has read and
// accepted and not yet answered (served or queued). A handler waiting for
// requests the other side sends together (the gateway's era bridge,
// gathering the questions of one round) compares it with those that
// reached it: more were read than arrived, so more are on their way.
func (p *Peer) Incoming() int {
	p.hmu.Lock()
	defer p.hmu.Unlock()
	return p.active + len(p.queue)
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
