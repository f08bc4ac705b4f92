package mcp

import (
	"context"
	"errors"
	"io"
	"time"
)

// The reading role. Contract:
//   - At most one goroutine reads the connection at a time: the one that
//     holds the role (reading, under mu). It is a background reader
//     (readLoop) or, over a DirectReader, the caller whose reply is next
//     (directCall), reading on its own goroutine so that no other thread
//     is woken on the critical path.
//   - The role moves to where the work is: a caller takes a free role
//     (acquire) and gives it up when its reply is in (release); while
//     replies are still awaited, a background reader takes it at once
//     (handOver); a free role goes to a background reader after idleDelay
//     (takeIdle), so nothing the other side sends waits long. A
//     background reader is one that lost or freed the role before and
//     waits to read again (spareReader, keeping its stack), else a new
//     goroutine (newReader).
//   - A caller reading its own reply is interrupted (interrupt) when its
//     context ends or the reaper times it out; it always frees the role
//     before it returns.

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
			p.release(p.idleFor())
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
			p.release(p.idleFor()) // the caller's select sees why
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
			p.spawn(in)
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
		p.newReader()
	}
}

// newReader gives the role, held for it, to a background reader: one
// that was overtaken and waits (spareReader), which kept the stack the
// requests it served grew, else a new goroutine. A goroutine that reads
// and serves requests inline grows its stack from the smallest, copying
// it each time (runtime.newstack), and a new one did so for every
// request a slow handler got overtaken on (a bridged call's, say).
func (p *Peer) newReader() {
	select {
	case p.readers <- struct{}{}:
	default:
		go p.readLoop()
	}
}

// spareReader waits, up to spareIdle, for newReader to hand it the role;
// it reports whether it got it (then it reads), false once the wait ends
// or the session does. There are never more of them than requests served
// at once.
func (p *Peer) spareReader(t **time.Timer) bool {
	if *t == nil {
		*t = time.NewTimer(spareIdle)
	} else {
		(*t).Reset(spareIdle)
	}
	select {
	case <-p.readers:
		return true
	case <-(*t).C:
		return false
	case <-p.done:
		return false
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
		p.newReader()
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

// idleFor is how long a freed role waits for a caller before a
// background reader takes it: idleDelay but in tests.
func (p *Peer) idleFor() time.Duration { return time.Duration(p.idleWait.Load()) }

// takeIdle runs when the idle timer fires: a free role gets a reader, so
// that nothing the other side sends waits longer than the delay.
func (p *Peer) takeIdle() {
	p.mu.Lock()
	p.idleAt = time.Time{}
	p.mu.Unlock()
	if p.acquire(nil) {
		p.newReader()
	}
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
	// spareIdle: how long a spare worker waits for a request before it
	// ends (spareWorker). Long beside a round trip, so a session in use
	// keeps its workers; a timer this far out never wakes the poller
	// early.
	spareIdle = time.Second
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
//
// A reader overtaken while it served, or that freed the role, waits to
// take it again (spareReader), keeping its stack, until newReader hands
// it over.
func (p *Peer) readLoop() {
	var t *time.Timer
	for p.readRole() && p.spareReader(&t) {
	}
	if t != nil {
		t.Stop()
	}
}

// readRole is readLoop's reading, holding the role; it reports whether
// it ended with the session alive, the role passed on (overtaken) or
// freed for a caller: then the goroutine may wait to read again.
func (p *Peer) readRole() bool {
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
				// A request answered during the drain by a goroutine
				// that had been the reader corks its response for a
				// reader to send; none will come. And a write another
				// goroutine has under way must end before the session
				// does (nexus serve exits then, cutting it off).
				p.writeAll()
			}
			p.fail(err)
			return false
		}
		in, err := p.handleFrame(frame, p.frameOwned(), &e)
		if err != nil {
			p.flushCorked()
			p.fail(err)
			return false
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
			p.release(time.Duration(p.serveWait.Load()))
			p.worker(in)
			if !p.acquire(nil) {
				p.flushCorked()
				return true
			}
			continue
		}
		if p.direct != nil && e.method == nil {
			if held {
				p.flushCorked()
				held, heldN = false, 0
			}
			if p.releaseIfIdle(p.idleFor()) {
				return true
			}
		}
	}
}
