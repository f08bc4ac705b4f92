package mcp

import (
	"context"
	"errors"
	"strconv"
)

// Conn carries JSON-RPC messages, one message per frame, in both directions.
// Every transport (stdio, streamable HTTP, plugin streams) provides one.
//
// ReadMessage blocks until the next frame arrives and returns its bytes; the
// slice is only valid until the next ReadMessage call, so a caller that keeps
// it must copy. Only one goroutine calls ReadMessage. When the other side is
// gone, ReadMessage returns an error that says why (for a subprocess: the exit
// code and the tail of its stderr); io.EOF alone means a clean close.
//
// WriteMessage sends one complete JSON-RPC message; msg holds no trailing
// newline and must not be retained after the call returns. Conns are written
// from one goroutine at a time (the Peer serializes writes).
//
// Close ends the connection and releases everything it holds (for a
// subprocess: the whole process group). It is safe to call more than once and
// concurrently with ReadMessage, which then returns.
type Conn interface {
	ReadMessage() ([]byte, error)
	WriteMessage(ctx context.Context, msg []byte) error
	Close() error
}

// FrameWriter is implemented by newline-delimited transports (stdio and
// its kin) that can send several messages in one write. frames holds
// complete messages, each followed by '\n'. The Peer batches concurrent
// sends through it.
type FrameWriter interface {
	WriteFrames(ctx context.Context, frames []byte) error
}

// ErrClosed is returned by calls made after the local side closed a Peer.
var ErrClosed = errors.New("mcp: connection closed")

// FrameTooLargeError reports a frame over a transport's size limit. The
// session ends; the host lives on.
type FrameTooLargeError struct {
	Limit int // bytes
}

func (e *FrameTooLargeError) Error() string {
	return "message frame exceeds the " + formatBytes(e.Limit) + " limit; the server sent an oversized message, so the session was closed"
}

// MaxFrameSize is the default limit for one JSON-RPC message (10 MiB).
const MaxFrameSize = 10 << 20

func formatBytes(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return strconv.Itoa(n>>20) + " MiB"
	case n >= 1<<10 && n%(1<<10) == 0:
		return strconv.Itoa(n>>10) + " KiB"
	default:
		return strconv.Itoa(n) + " bytes"
	}
}
