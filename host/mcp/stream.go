package mcp

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"sync"
	"sync/atomic"
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
	buf   []byte // accumulates a frame longer than the bufio buffer

	closed atomic.Bool

	wmu  sync.Mutex
	w    io.Writer
	wbuf []byte
}

var _ Conn = (*StreamConn)(nil)

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
	return c
}

// ReadMessage returns the next non-blank line without its line ending. The
// slice is valid until the next call.
func (c *StreamConn) ReadMessage() ([]byte, error) {
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

// readLine returns the next line including its newline (or the last bytes
// before EOF). It never waits for more input once the frame is known to be
// over the limit, so an endless line fails as soon as it passes the limit.
func (c *StreamConn) readLine() ([]byte, error) {
	if cap(c.buf) > 1<<20 {
		c.buf = nil // one huge frame should not pin its buffer
	}
	c.buf = c.buf[:0]
	for {
		if c.r.Buffered() == 0 {
			if _, err := c.r.Peek(1); err != nil {
				if errors.Is(err, io.EOF) && len(c.buf) > 0 {
					return c.buf, nil // a last frame without a newline
				}
				return nil, err
			}
		}
		avail, _ := c.r.Peek(c.r.Buffered())
		if i := bytes.IndexByte(avail, '\n'); i >= 0 {
			if len(c.buf)+i+1 > c.limit+2 {
				return nil, &FrameTooLargeError{Limit: c.limit}
			}
			if len(c.buf) == 0 {
				// The whole line is in the read buffer: no copy. It stays
				// valid until the next read, as ReadMessage promises.
				line := avail[:i+1]
				c.r.Discard(i + 1)
				return line, nil
			}
			c.buf = append(c.buf, avail[:i+1]...)
			c.r.Discard(i + 1)
			return c.buf, nil
		}
		if len(c.buf)+len(avail) > c.limit+2 {
			return nil, &FrameTooLargeError{Limit: c.limit}
		}
		c.buf = append(c.buf, avail...)
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
