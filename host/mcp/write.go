package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/nexus-mcp/nexus/internal/wire"
)

// Frames out. Contract:
//   - Frames are built by hand into a reused buffer (wbuf, under wmu); a
//     frame larger than keepMax is built in a pooled buffer instead and
//     the reused one stays small.
//   - Writes are serialized. Over a FrameWriter, concurrent senders are
//     grouped: the first becomes the writer and sends what the others
//     queued meanwhile (flush, writePending), a group commit.
//   - Who waits for a queued write: a notification does, to return the
//     write's error; a request learns of a failed write through its reply
//     (failQueued); a response is not waited for.
//   - Responses to requests read together may be held back (corked) and
//     written as one, never longer than serveDelay (flushCorked).

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
// embedder passed, a result passed on as its server wrote it) may have
// some: written as is, the other side would read two broken frames, and a
// stdio server would end the session. A lone CR is compacted too: readers
// that take universal newlines (Python's text streams) end a line there.
// The checks are vector searches; a value that has one is compacted, and
// one that is not JSON at all (raw JSON that was never checked) is
// refused rather than written.
func (p *Peer) oneLine(b []byte, from int) ([]byte, error) {
	if p.fw == nil || (bytes.IndexByte(b[from:], '\n') < 0 && bytes.IndexByte(b[from:], '\r') < 0) {
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
	b = wire.AppendString(b, method)
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
		case *json.RawMessage: // a handler's own, kept: no slice header to box
			body = *v
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

// writeAll waits for the write another goroutine has under way and writes
// what is still held back, so that every response is out when it
// returns: at the end of input, the session ends next. The wait is
// bounded as each write is (writeCtx).
func (p *Peer) writeAll() {
	p.wmu.Lock()
	defer p.wmu.Unlock()
	for p.writing {
		p.wcond.Wait()
	}
	p.corked = false
	if len(p.pend) == 0 || p.fw == nil {
		return
	}
	ctx, cancel := p.writeCtx()
	defer cancel()
	p.writePending(ctx, p.batch)
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
