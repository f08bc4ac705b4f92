package mcp

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/nexus-mcp/nexus/internal/wire"
)

// reqCtx is the context of one incoming request: the session's values,
// plus a cancellation of its own (notifications/cancelled, the end of the
// request, or the end of the session, which cancels every request in
// Peer.incoming). It is cheaper than context.WithCancel on the session's
// context, which a busy server pays for on every request: nothing is
// registered with the parent, and the done channel is made only if a
// handler asks for it. AfterFunc lets context.WithCancel and
// context.AfterFunc on it work without a goroutine each.
type reqCtx struct {
	context.Context                 // the session's values only (Peer.valueCtx)
	id              json.RawMessage // the request's id, for RelatedRequest
	handler         Handler         // the Peer's, for HandlerOf
	peer            *Peer           // for PeerOf
	call            *callRef        // the call the request came with, for CallOf (nil: none said)

	mu     sync.Mutex
	done   chan struct{}
	err    error
	funcs  []afterFunc // registered by AfterFunc, in order
	nextID uint64
	first  [2]afterFunc // funcs' first storage: a call registers one or two
}

// afterFunc is a function AfterFunc registered; id tells its stop which.
type afterFunc struct {
	id uint64
	f  func()
}

func (c *reqCtx) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done == nil {
		c.done = make(chan struct{})
		if c.err != nil {
			close(c.done)
		}
	}
	return c.done
}

// relatedKey is the context key RelatedRequest answers for.
type relatedKey struct{}

// handlerKey is the context key HandlerOf answers for.
type handlerKey struct{}

// peerKey is the context key PeerOf answers for.
type peerKey struct{}

func (c *reqCtx) Value(key any) any {
	switch key.(type) {
	case relatedKey:
		return &c.id // a pointer: boxing the slice would allocate
	case handlerKey:
		return c.handler
	case peerKey:
		return c.peer
	case callKey:
		if c.call != nil {
			return c.call
		}
	}
	return c.Context.Value(key)
}

// HandlerOf returns the Handler serving the request whose context ctx is
// (or derives from), or nil. A handler finds its own state this way in
// code it calls, without wrapping ctx: a context.WithValue around the
// request's context would cost every context.AfterFunc on it a goroutine.
func HandlerOf(ctx context.Context) Handler {
	h, _ := ctx.Value(handlerKey{}).(Handler)
	return h
}

// PeerOf returns the Peer that read the request whose context ctx is (or
// derives from), or nil.
func PeerOf(ctx context.Context) *Peer {
	p, _ := ctx.Value(peerKey{}).(*Peer)
	return p
}

// RelatedRequest returns the id of the incoming request whose handler ctx
// belongs to (ctx is the handler's context, or derives from it), or nil.
// A transport that carries each request's answer on a stream of its own
// (streamable HTTP) uses it to send what a handler sends while serving a
// request (progress, log messages, sampling, elicitation) on that
// request's stream.
func RelatedRequest(ctx context.Context) json.RawMessage {
	if id, _ := ctx.Value(relatedKey{}).(*json.RawMessage); id != nil {
		return *id
	}
	return nil
}

// WithRelatedRequest makes RelatedRequest(ctx) return id: for a handler
// that sends on behalf of another request than its own (a gateway passing
// an upstream server's sampling request to the client whose call caused it).
func WithRelatedRequest(ctx context.Context, id json.RawMessage) context.Context {
	return context.WithValue(ctx, relatedKey{}, &id)
}

func (c *reqCtx) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// AfterFunc runs f (in its own goroutine) once c is cancelled; see
// context.AfterFunc, which uses it.
func (c *reqCtx) AfterFunc(f func()) (stop func() bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		go f()
		return func() bool { return false }
	}
	if c.funcs == nil {
		c.funcs = c.first[:0]
	}
	c.nextID++
	id := c.nextID
	c.funcs = append(c.funcs, afterFunc{id, f})
	return func() bool { return c.stopFunc(id) }
}

// stopFunc unregisters the function id; it reports whether it was still
// registered (so it will not run).
func (c *reqCtx) stopFunc(id uint64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, a := range c.funcs {
		if a.id == id {
			last := len(c.funcs) - 1
			copy(c.funcs[i:], c.funcs[i+1:])
			c.funcs[last] = afterFunc{} // let f go
			c.funcs = c.funcs[:last]
			return true
		}
	}
	return false
}

func (c *reqCtx) cancel() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return
	}
	c.err = context.Canceled
	if c.done != nil {
		close(c.done)
	}
	for _, a := range c.funcs {
		go a.f()
	}
	c.funcs = nil
}

// reqKey identifies an incoming request by its id, so that "1" and 1 stay
// apart and a re-encoded id still finds its request. Integer ids, the
// usual kind, are keyed without allocating.
type reqKey struct {
	n   int64
	s   string
	str bool // a string id
	raw bool // neither a plain integer nor a string: s is the raw JSON
}

func keyOf(raw json.RawMessage) reqKey {
	i, j := 0, len(raw)
	for i < j && wire.IsWS(raw[i]) {
		i++
	}
	for j > i && wire.IsWS(raw[j-1]) {
		j--
	}
	raw = raw[i:j]
	if n, ok := smallInt(raw); ok {
		return reqKey{n: n}
	}
	if len(raw) > 0 && raw[0] == '"' {
		if s, err := wire.Unquote(raw); err == nil {
			return reqKey{s: s, str: true}
		}
	}
	return reqKey{s: string(raw), raw: true}
}

// smallInt parses a JSON integer of at most 18 digits.
func smallInt(b []byte) (int64, bool) {
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	if len(b) == 0 || len(b) > 18 || (b[0] == '0' && len(b) > 1) {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}
