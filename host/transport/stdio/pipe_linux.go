package stdio

import (
	"os"

	"golang.org/x/sys/unix"

	"github.com/nexus-mcp/nexus/host/internal/pollpipe"
)

// newPollReader is pollpipe.New; tests make it fail.
var newPollReader = func(fd int) (stdoutReader, error) { return pollpipe.New(fd) }

// stdoutPipe makes the pipe for the server's stdout. On Linux its read end
// is a pollpipe.Reader, so a caller waiting for its own reply (Await in
// ReadMessageBefore) is woken by the kernel alone. Where the pieces that
// needs are refused (eventfd or a nested epoll instance, in some
// sandboxes), it is an ordinary pipe read through the runtime's poller.
func stdoutPipe() (stdoutReader, *os.File, error) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		return nil, nil, os.NewSyscallError("pipe2", err)
	}
	// The write end is the child's stdout: a plain blocking descriptor.
	w := os.NewFile(uintptr(p[1]), "|1")
	if r, err := newPollReader(p[0]); err == nil {
		return r, w, nil
	}
	_ = unix.Close(p[0])
	_ = w.Close()
	r, w, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	return r, w, nil
}
