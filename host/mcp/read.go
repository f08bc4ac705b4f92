package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nexus-mcp/nexus/internal/wire"
)

// Frames in. Contract:
//   - Each frame is parsed once into an envelope of spans pointing into it;
//     the frame is only valid until the next read, so whatever outlives
//     the dispatch is copied (clone).
//   - A response goes to its call (onResponse); a notification to the
//     Handler or to the call it is about (progress, cancellation); a
//     request is served (serve) on the goroutine that read it when a
//     handler slot is free, queued up to MaxQueue otherwise, and refused
//     with CodeBusy beyond that.
//   - A frame that is not JSON-RPC ends the session with an
//     InvalidMessageError saying where it went wrong (its offset and the
//     frame's start); over a PushConn, Deliver returns that error to the
//     transport instead. Nothing a frame holds makes the peer panic.
//   - When the input ends, accepted requests are answered (drain, at most
//     DrainTimeout) unless NoDrain cancels them.

// envelope holds spans of one frame's top-level wire.Members. They point into
// the frame, which is only valid until the next read: whatever outlives the
// dispatch is copied.
type envelope struct {
	id, method, params, result, err []byte

	// owned: the frame is the Peer's to keep (FrameOwner), so what a
	// request or response carries on is a slice of it, not a copy.
	owned bool
}

// parseEnvelope validates the whole frame and finds its wire.Members in one pass.
func parseEnvelope(frame []byte, e *envelope) error {
	*e = envelope{}
	return wire.Members(frame, e.member)
}

// parseCheckedEnvelope is parseEnvelope for a frame already validated
// (CheckedPushConn): its members' values are skipped, not checked.
func parseCheckedEnvelope(frame []byte, e *envelope) error {
	*e = envelope{}
	return wire.ValidMembers(frame, e.member)
}

// member takes one of the envelope's members, as parseEnvelope finds it.
func (e *envelope) member(k, v []byte) error {
	switch {
	case wire.KeyIs(k, "id"):
		e.id = v
	case wire.KeyIs(k, "method"):
		if v[0] != '"' {
			return &wire.ScanError{Msg: "\"method\" is not a string", Offset: 1}
		}
		e.method = v
	case wire.KeyIs(k, "params"):
		e.params = v
	case wire.KeyIs(k, "result"):
		e.result = v
	case wire.KeyIs(k, "error"):
		e.err = v
	}
	return nil
}

// Deliver handles one message that a PushConn received, on the calling
// goroutine, as if it had been read: a response or notification is
// dispatched, and a request that may start at once is served before
// Deliver returns (one over MaxHandlers is queued as usual). It fails when
// the session is over or the message is malformed; frame is not kept.
func (p *Peer) Deliver(frame []byte) error { return p.deliver(frame, false) }

// deliverChecked is Deliver for a frame a CheckedPushConn vouches for:
// validated whole, and the Peer's to keep.
func (p *Peer) deliverChecked(frame []byte) error { return p.deliver(frame, true) }

func (p *Peer) deliver(frame []byte, checked bool) error {
	if err := p.Err(); err != nil {
		return err
	}
	var e envelope
	var in *inbound
	var err error
	if checked {
		in, err = p.handleChecked(frame, &e)
	} else {
		in, err = p.handleFrame(frame, false, &e)
	}
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
	return p.handleParsed(frame, e)
}

// handleChecked is handleFrame for a frame validated whole that the Peer
// may keep (deliverChecked).
func (p *Peer) handleChecked(frame []byte, e *envelope) (*inbound, error) {
	if err := parseCheckedEnvelope(frame, e); err != nil {
		return nil, newInvalidMessage(frame, err)
	}
	e.owned = true
	return p.handleParsed(frame, e)
}

func (p *Peer) handleParsed(frame []byte, e *envelope) (*inbound, error) {
	in, err := p.dispatch(e)
	if err != nil {
		return nil, newInvalidMessage(frame, err)
	}
	return in, nil
}

func newInvalidMessage(frame []byte, err error) *InvalidMessageError {
	off := int64(-1)
	var se *json.SyntaxError
	var sc *wire.ScanError
	switch {
	case errors.As(err, &sc):
		off = sc.Offset
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
		if len(e.id) > 0 {
			if err := CheckRequestID(e.id); err != nil {
				// Valid JSON, a broken request: answered, the session goes on.
				// The id cannot be echoed, so the answer carries null.
				go p.respond(json.RawMessage("null"), nil, &RPCError{Code: CodeInvalidRequest, Message: "invalid request: " + err.Error()}, false)
				return nil, nil
			}
		}
		if hasID {
			var id, params json.RawMessage
			if e.owned {
				id, params = keep(e.id, true), keep(e.params, true)
			} else {
				id, params = cloneTwo(e.id, e.params)
			}
			return p.onRequest(id, method, params, p.relatedCall()), nil
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
		ctx := p.baseCtx
		if ref := p.relatedCall(); ref != nil {
			ctx = context.WithValue(p.baseCtx, callKey{}, ref)
		}
		// Handlers may keep params; the frame's bytes are reused.
		p.handler.HandleNotification(ctx, method, clone(params))
	}
}

// callKey is the context key CallOf answers for.
type callKey struct{}

// callRef is what a handler's context holds under callKey: the context
// of the call the message came with (nil: that call has ended).
type callRef struct{ ctx context.Context }

// relatedCall is the call the frame just read came with, when the
// transport says (a frame on the response stream of this side's
// request; its ctx nil once that call has ended), or nil. Only the
// reading goroutine calls it, before it dispatches the frame: the call
// is still pending then, since its answer, on the same stream, comes
// after. Over a transport that never says (stdio) it costs nothing.
func (p *Peer) relatedCall() *callRef {
	if p.rel == nil {
		return nil
	}
	id := p.rel.FrameRelated()
	if id == nil {
		return nil
	}
	ref := &callRef{}
	if n, err := strconv.ParseInt(string(id), 10, 64); err == nil {
		p.mu.Lock()
		if c := p.pending[n]; c != nil {
			ref.ctx = c.ctx
		}
		p.mu.Unlock()
	}
	return ref
}

// CallOf tells a handler (ctx is its context, or derives from it)
// whether the notification or request it serves came on the response
// stream of a request this side sent (related; see RelatedFramer), and
// if so that call's context, as its caller passed it: nil once the call
// has ended (answered, cancelled, timed out). A host uses it to give a
// notification only to whom the call was made for, and to tie a
// server's request (sampling, elicitation, roots) to the call it was
// made during. Over a transport that does not say (stdio), nothing is
// related.
func CallOf(ctx context.Context) (call context.Context, related bool) {
	ref, _ := ctx.Value(callKey{}).(*callRef)
	if ref == nil {
		return nil, false
	}
	return ref.ctx, true
}

var metaVersionKey = []byte(MetaProtocolVersion)

// onRequest accepts an incoming request. It returns it when it may start
// now; otherwise it is queued, or refused when the queue is full.
// call is the call it came with (relatedCall), or nil.
func (p *Peer) onRequest(id json.RawMessage, method string, params json.RawMessage, call *callRef) *inbound {
	if method == MethodPing && !bytes.Contains(params, metaVersionKey) {
		// A modern (2026-07-28) ping goes to the handler, which refuses
		// it: the method is gone from that era.
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
	in.ctx.call = call
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

// spawn serves in on a goroutine other than the reader's: a spare
// worker's when one waits, else a new one. A new goroutine starts with a
// small stack and grows it (copying it each time) while it decodes and
// serves; a spare one kept the stack its last request grew.
func (p *Peer) spawn(in *inbound) {
	select {
	case p.spare <- in:
	default:
		go p.spareWorker(in)
	}
}

// spareWorker serves in, then waits up to spareIdle for the next request
// spawn hands it; it ends when none comes or the session ends. There are
// never more than the requests served at once (MaxHandlers) of them.
func (p *Peer) spareWorker(in *inbound) {
	var t *time.Timer
	for {
		p.worker(in)
		select {
		case <-p.done: // ended meanwhile: take nothing more
			return
		default:
		}
		if t == nil {
			t = time.NewTimer(spareIdle)
			defer t.Stop()
		} else {
			t.Reset(spareIdle)
		}
		select {
		case in = <-p.spare:
		case <-t.C:
			return
		case <-p.done:
			return
		}
	}
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
	ctx.peer = p
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

// drain waits, at most DrainTimeout (default one request timeout), for
// accepted incoming requests to be answered.
func (p *Peer) drain() {
	done := make(chan struct{})
	go func() { p.serving.Wait(); close(done) }()
	d := p.opts.DrainTimeout
	if d <= 0 {
		d = p.opts.Timeout
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}
