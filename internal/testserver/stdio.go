package testserver

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/nexus-mcp/nexus/host/mcp"
)

// ServeStdio serves one session over newline-delimited JSON: requests and
// notifications arrive on stdin, one JSON-RPC message per line, and every
// message goes out on stdout as one line in a single Write. Incoming frames
// are capped at mcp.MaxFrameSize; outgoing ones are not (large_output can
// exceed the client's limit on purpose).
//
// It returns nil when stdin reaches EOF (the client is gone; requests still
// running are abandoned), ctx.Err() when ctx ends, and otherwise the error
// that ended the session (an oversized or malformed frame, a write error).
// When the session ends ServeStdio closes stdin if it is an io.Closer, so
// that a blocked read returns; stdout is left open.
func ServeStdio(ctx context.Context, o Options, stdin io.Reader, stdout io.Writer) error {
	if err := o.waitStart(ctx); err != nil {
		return err
	}
	conn := mcp.NewStreamConn(stdin, stdout, mcp.MaxFrameSize)
	srv := New(o)
	err := srv.Serve(ctx, conn)
	srv.EndTasks()
	var tooLarge *mcp.FrameTooLargeError
	switch {
	case err == nil, errors.Is(err, io.EOF):
		return nil
	case errors.As(err, &tooLarge):
		return &ClientFrameTooLargeError{Limit: tooLarge.Limit}
	}
	return err
}

// ClientFrameTooLargeError is returned by ServeStdio when the client sent a
// line longer than the frame limit; the session is over because the stream
// can no longer be split reliably.
type ClientFrameTooLargeError struct {
	Limit int // bytes
}

func (e *ClientFrameTooLargeError) Error() string {
	return fmt.Sprintf("testserver: a message from the client exceeds the %d-byte frame limit; the session was closed", e.Limit)
}

// Unwrap lets errors.As find the protocol package's *mcp.FrameTooLargeError.
func (e *ClientFrameTooLargeError) Unwrap() error { return &mcp.FrameTooLargeError{Limit: e.Limit} }
