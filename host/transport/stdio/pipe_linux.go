package stdio

import (
	"os"

	"golang.org/x/sys/unix"

	"github.com/nexus-mcp/nexus/host/transport/stdio/internal/pollpipe"
)

// stdoutPipe makes the pipe for the server's stdout. On Linux its read end
// is a pollpipe.Reader, so a caller waiting for its own reply (Await in
// ReadMessageBefore) is woken by the kernel alone.
func stdoutPipe() (stdoutReader, *os.File, error) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		return nil, nil, os.NewSyscallError("pipe2", err)
	}
	r, err := pollpipe.New(p[0])
	if err != nil {
		_ = unix.Close(p[0])
		_ = unix.Close(p[1])
		return nil, nil, err
	}
	// The write end is the child's stdout: a plain blocking descriptor.
	return r, os.NewFile(uintptr(p[1]), "|1"), nil
}
