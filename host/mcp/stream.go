package mcp

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nexus-mcp/nexus/internal/longframe"
)

// StreamConn is a Conn over a byte stream pair carrying newline-delimited
// JSON: the server side of stdio (the test server, later the gateway), and
// anything else that speaks MCP's stdio framing over pipes.
//
// Frames over the limit end the session with a FrameTooLargeError without
// buffering more than the limit. Blank lines are skipped and a trailing
// "\r" is dropped, so CRLF peers work.
type StreamConn struct {
	r     *bufio.Reader
	rc    io.Closer // closes the read side on Close, if it can be closed
	limit int
	long  longframe.Collector // a frame longer than the bufio buffer
	owned bool                // the last frame is the caller's (a long one)

	closed atomic.Bool

	rd *ReadDeadline // direct reads (DirectReader), when the reader has deadlines

	wmu  sync.Mutex
	w    io.Writer
	wbuf []byte
}

var (
	_ Conn         = (*StreamConn)(nil)
	_ DirectReader = (*StreamConn)(nil)
	_ FrameOwner   = (*StreamConn)(nil)
)

// deadliner is a reader whose reads can be bounded in time (*os.File over
// a pipe or a pollable descriptor).
type deadliner interface{ SetReadDeadline(time.Time) error }

// NewStreamConn reads frames from r and writes them to w. limit <= 0 means
// MaxFrameSize. Close closes r if it is an io.Closer.
func NewStreamConn(r io.Reader, w io.Writer, limit int) *StreamConn {
	if limit <= 0 {
		limit = MaxFrameSize
	}
	c := &StreamConn{r: bufio.NewReaderSize(r, 64<<10), limit: limit, w: w}
	if rc, ok := r.(io.Closer); ok {
		c.rc = rc
	}
	if d, ok := r.(deadliner); ok && d.SetReadDeadline(time.Time{}) == nil {
		c.rd = NewReadDeadline(d.SetReadDeadline)
	}
	return c
}

// ReadMessage returns the next non-blank line without its line ending. The
// slice is valid until the next call.
func (c *StreamConn) ReadMessage() ([]byte, error) {
	if c.rd != nil {
		c.rd.Clear() // a direct read may have left its deadline
	}
	for {
		line, err := c.readLine()
		if err != nil {
			if c.closed.Load() {
				return nil, ErrClosed
			}
			return nil, err
		}
		line = bytes.TrimSpace(line)
		if len(line) > c.limit {
			return nil, &FrameTooLargeError{Limit: c.limit}
		}
		if len(line) > 0 {
			return line, nil
		}
	}
}

// FrameBuffered reports whether a whole line is buffered; see
// FrameBufferer.
func (c *StreamConn) FrameBuffered() bool {
	n := c.r.Buffered()
	if n == 0 {
		return false
	}
	b, _ := c.r.Peek(n)
	return bytes.IndexByte(b, '\n') >= 0
}

// DirectReads reports whether the reader has deadlines; see DirectReader.
func (c *StreamConn) DirectReads() bool { return c.rd != nil }

// ReadMessageBefore returns the next frame if it arrives before deadline;
// see DirectReader. It waits only while nothing is buffered, so a timeout
// never splits a frame; a frame that has only partly arrived, and any read
// error, are left to ReadMessage.
func (c *StreamConn) ReadMessageBefore(deadline time.Time) ([]byte, error) {
	if c.rd == nil || c.closed.Load() {
		return nil, ErrNotDirect
	}
	c.owned = false
	for {
		if n := c.r.Buffered(); n > 0 {
			avail, _ := c.r.Peek(n)
			i := bytes.IndexByte(avail, '\n')
			if i < 0 {
				return nil, ErrNotDirect
			}
			line := bytes.TrimSpace(avail[:i+1])
			c.r.Discard(i + 1) // line stays valid until the next read
			if len(line) > c.limit {
				return nil, &FrameTooLargeError{Limit: c.limit}
			}
			if len(line) > 0 {
				return line, nil
			}
			continue
		}
		if err := c.rd.Arm(deadline); err != nil {
			return nil, err
		}
		if _, err := c.r.Peek(1); err != nil {
			if !errors.Is(err, os.ErrDeadlineExceeded) || c.rd.TimedOut() {
				return nil, ErrNotDirect
			}
			return nil, ErrReadTimeout
		}
	}
}

// InterruptRead makes a ReadMessageBefore in progress (or the next one)
// return ErrReadTimeout.
func (c *StreamConn) InterruptRead() {
	if c.rd != nil {
		c.rd.Interrupt()
	}
}

// FrameOwned reports whether the frame just read is the caller's to keep;
// see FrameOwner.
func (c *StreamConn) FrameOwned() bool { return c.owned }

// readLine returns the next line including its newline (or the last bytes
// before EOF). It never waits for more input once the frame is known to be
// over the limit, so an endless line fails as soon as it passes the limit.
// A line longer than the read buffer is collected into memory of its own.
func (c *StreamConn) readLine() ([]byte, error) {
	c.owned = false
	c.long.Reset()
	for {
		if c.r.Buffered() == 0 {
			if _, err := c.r.Peek(1); err != nil {
				if errors.Is(err, io.EOF) && c.long.Len() > 0 {
					c.owned = true
					return c.long.Take(nil), nil // a last frame without a newline
				}
				c.long.Reset()
				return nil, err
			}
		}
		avail, _ := c.r.Peek(c.r.Buffered())
		if i := bytes.IndexByte(avail, '\n'); i >= 0 {
			if c.long.Len()+i+1 > c.limit+2 {
				c.long.Reset()
				return nil, &FrameTooLargeError{Limit: c.limit}
			}
			if c.long.Len() == 0 {
				// The whole line is in the read buffer: no copy. It stays
				// valid until the next read, as ReadMessage promises.
				line := avail[:i+1]
				c.r.Discard(i + 1)
				return line, nil
			}
			line := c.long.Take(avail[:i+1])
			c.r.Discard(i + 1)
			c.owned = true
			return line, nil
		}
		if c.long.Len()+len(avail) > c.limit+2 {
			c.long.Reset()
			return nil, &FrameTooLargeError{Limit: c.limit}
		}
		c.long.Add(avail)
		c.r.Discard(len(avail))
	}
}

// WriteMessage writes msg and a newline in one Write.
func (c *StreamConn) WriteMessage(ctx context.Context, msg []byte) error {
	if c.closed.Load() {
		return ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	b := append(append(c.wbuf[:0], msg...), '\n')
	if cap(b) <= 1<<20 {
		c.wbuf = b
	} else {
		c.wbuf = nil
	}
	_, err := c.w.Write(b)
	return err
}

// WritesHonourDeadline reports that a StreamConn's writes cannot be
// interrupted; see WriteBounder.
func (c *StreamConn) WritesHonourDeadline() bool { return false }

// WriteFrames writes frames (complete messages, each ending in '\n') in
// one Write.
func (c *StreamConn) WriteFrames(ctx context.Context, frames []byte) error {
	if c.closed.Load() {
		return ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err := c.w.Write(frames)
	return err
}

// Close marks the conn closed and closes the read side if it can.
func (c *StreamConn) Close() error {
	if c.closed.Swap(true) {
		return nil
	}
	if c.rc != nil {
		return c.rc.Close()
	}
	return nil
}
