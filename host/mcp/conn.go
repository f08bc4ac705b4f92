package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"time"
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

// RequestWriter is implemented by Conns that carry each request in an
// exchange of its own (HTTP: a POST and its answer). The Peer sends
// requests through WriteRequest, on the calling goroutine and outside its
// write lock, so the transport can run the exchange there instead of
// handing it to another goroutine: WriteRequest may block until the answer
// has been delivered to ReadMessage. ctx (the caller's) and deadline (the
// call's, zero for none) end the exchange early; the answer, or an error
// response standing for a failed exchange, still comes through
// ReadMessage.
type RequestWriter interface {
	WriteRequest(ctx context.Context, deadline time.Time, msg []byte) error
}

// PushConn is implemented by Conns whose messages are pushed to them on
// goroutines of their own (an HTTP server: each POST's handler). Peer.Start
// gives such a conn its Deliver, to call on the pushing goroutine instead
// of queueing the message for ReadMessage: that saves a goroutine hand-off
// per message, and a request is then served on the pushing goroutine.
type PushConn interface {
	SetDeliver(deliver func(frame []byte) error)
}

// CheckedPushConn is implemented by PushConns that can vouch for some of
// the messages they push: checked whole with ParseMessage, and in memory
// the conn gives up (an HTTP POST's body, read into a buffer of its own).
// Peer.Start gives such a conn a second deliver, before SetDeliver's, for
// those messages only: the Peer neither validates nor copies them again
// (a large tool call's arguments were scanned twice and copied once for
// nothing). Any other message still goes to SetDeliver's.
type CheckedPushConn interface {
	PushConn
	SetDeliverChecked(deliver func(frame []byte) error)
}

// RelatedFramer is implemented by Conns that carry messages on the
// response stream of a request this side sent (streamable HTTP: a POST's
// SSE answer), where the server sends what concerns that request alone
// (its log messages, progress). FrameRelated returns that request's id
// for the frame ReadMessage or ReadMessageBefore last returned, or nil
// for a frame that came otherwise (a JSON answer, the standalone stream,
// stdio). The Peer calls it for notifications and requests and hands
// their handler the request's caller's context (CallOf). Only the reading
// goroutine calls it; the slice must stay unchanged.
type RelatedFramer interface {
	FrameRelated() json.RawMessage
}

// WriteBounder is implemented by Conns that say whether WriteMessage
// honours its context's deadline. The Peer writes its responses under the
// request timeout only over a Conn whose writes do (the default for a
// Conn that does not say): for one whose writes never wait on the other
// side or cannot be interrupted, the timer would cost every response and
// buy nothing.
type WriteBounder interface {
	WritesHonourDeadline() bool
}

// FrameBufferer is implemented by Conns that can tell whether a whole frame
// is already buffered, so that ReadMessage returns without waiting. The
// Peer then holds back the responses to requests that arrived together
// and sends them in one write. Only the reading goroutine calls it.
type FrameBufferer interface {
	FrameBuffered() bool
}

// FrameOwner is implemented by Conns that sometimes read a frame into
// memory of its own (one longer than their read buffer, collected from
// pieces) instead of their reused buffer. FrameOwned reports whether the
// frame ReadMessage or ReadMessageBefore last returned is such a one: the
// caller may then keep it, or slices of it, without copying; nothing else
// holds or reuses it. Only the reading goroutine calls it.
type FrameOwner interface {
	FrameOwned() bool
}

// DirectReader is implemented by Conns whose reads can be bounded in time
// (stdio pipes). A caller waiting for its own reply then reads it itself
// instead of a reader goroutine reading it and waking the caller: on a
// loaded or virtualized machine that wake-up costs more than the rest of
// the round trip. Only the goroutine that holds the Peer's reading role
// calls the read methods, as with ReadMessage.
type DirectReader interface {
	// DirectReads reports whether ReadMessageBefore can work at all (pipes
	// on some systems have no deadlines); the Peer asks once.
	DirectReads() bool
	// ReadMessageBefore is ReadMessage bounded by deadline. It returns
	// ErrReadTimeout when the deadline passes or InterruptRead is called,
	// losing nothing: a frame that has partly arrived is finished by the
	// next read, of either kind. It returns ErrNotDirect when the next
	// frame cannot be read this way (a conn may say so of one that has
	// partly arrived; or the stream failed): ReadMessage then finishes it
	// or reports the failure.
	ReadMessageBefore(deadline time.Time) ([]byte, error)
	// InterruptRead makes a ReadMessageBefore in progress, or else the
	// next one, return ErrReadTimeout. Any goroutine may call it.
	InterruptRead()
}

// nearlyDue reports whether a read deadline already set (set) may stand in
// for the one asked for (want): it is less than a second earlier and still
// ahead. Callers pass a deadline a fixed time ahead on every call, and
// moving the timer behind it each time costs more than the occasional
// early ErrReadTimeout, after which the caller simply reads again.
func nearlyDue(set, want time.Time) bool {
	return !set.IsZero() && !set.After(want) && want.Sub(set) < time.Second && set.After(time.Now())
}

// Errors of DirectReader.ReadMessageBefore.
var (
	ErrReadTimeout = errors.New("mcp: read deadline passed")
	ErrNotDirect   = errors.New("mcp: the next frame must be read with ReadMessage")
)

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
