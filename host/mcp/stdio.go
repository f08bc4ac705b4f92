package mcp

import (
	"io"
	"os"
	"sync"
)

// StdioConn is the server side of the stdio transport: a StreamConn over
// this process's stdin and stdout.
//
// Stdin is switched to non-blocking mode where the OS allows it, so reads go
// through Go's network poller. A blocking read would hold its scheduler
// thread in the kernel, and a handler started for the previous message could
// then wait for the runtime to notice (tens of microseconds to milliseconds)
// before it runs; with the poller it runs the moment the reader parks. On
// Linux, where stdin is a pipe or socket, a read that finds it empty first
// waits a moment (internal/pollpipe's Window) in ppoll(2) on its own
// thread, since a client in a conversation sends its next request right
// after the last answer: the request then wakes that thread alone instead
// of the poller's, which would hand it on (a wake-up that costs a sixth of
// a round trip on a small machine).
func StdioConn() *StreamConn {
	return NewStreamConn(stdin(), os.Stdout, 0)
}

// stdin is the process's stdin made pollable, once: a second conversion
// would find fd 0 already registered with the poller and fall back to
// plain reads of a non-blocking descriptor, which fail with EAGAIN as
// soon as no input is waiting.
var stdin = sync.OnceValue(func() io.Reader { return stdinReader(os.Stdin) })
