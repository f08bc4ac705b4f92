package stdio

import (
	"errors"
	"os"
	"syscall"

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

// quickWriter writes to the server's stdin what the pipe takes without
// waiting. Its function is made once, so a write allocates nothing.
type quickWriter struct {
	rc  syscall.RawConn
	fn  func(fd uintptr) bool
	buf []byte
	n   int
}

func (q *quickWriter) init(f *os.File) {
	if rc, err := f.SyscallConn(); err == nil {
		q.rc, q.fn = rc, q.raw
	}
}

// write writes as much of b as the pipe takes now and returns how much;
// anything else (a full pipe, an error) is left to the ordinary write,
// which waits or reports it.
func (q *quickWriter) write(b []byte) int {
	if q.rc == nil {
		return 0
	}
	q.buf, q.n = b, 0
	err := q.rc.Write(q.fn)
	n := q.n
	q.buf = nil
	if err != nil {
		return 0
	}
	return n
}

func (q *quickWriter) raw(fd uintptr) bool {
	for q.n < len(q.buf) {
		n, err := unix.Write(int(fd), q.buf[q.n:])
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || n <= 0 {
			break
		}
		q.n += n
	}
	return true // never wait here
}
