package stdio

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/nexus-mcp/nexus/internal/pollpipe"
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

// pipeSize is what the pipes to and from a server are grown to from the
// default 64 KB: a large message then crosses in a quarter of the system
// calls and wake-ups (measured with 64 KB arguments and results: the
// client's CPU per byte down by a third, 1 MB ones by a sixth). 1 MB pipes
// bought little more.
const pipeSize = 256 << 10

// budget is how many more pipes this process may grow. The kernel
// charges a user's pipe pages against fs.pipe-user-pages-soft and, past
// it, gives every new pipe of that user (other programs' too) a single
// page; a gateway with many servers must not do that to its machine, so
// Nexus takes at most a quarter of the limit and the rest of its pipes
// keep the default size.
var budget = sync.OnceValue(func() *atomic.Int64 {
	left := new(atomic.Int64)
	if soft := pipeSoftLimit(); soft == 0 {
		left.Store(1 << 40)
	} else {
		left.Store(soft / 4 / (pipeSize / int64(os.Getpagesize())))
	}
	return left
})

// pipeSoftLimit reads fs.pipe-user-pages-soft; 0 means no limit.
func pipeSoftLimit() int64 {
	b, err := os.ReadFile("/proc/sys/fs/pipe-user-pages-soft")
	if err != nil {
		return 16384 // the kernel's default
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || n < 0 {
		return 16384
	}
	return n
}

// growPipes grows the pipes of files to pipeSize while the budget lasts
// and returns how many it grew, for releasePipes. A pipe that cannot grow
// (a hard limit, an old kernel) keeps its size; that costs only speed.
func growPipes(files ...*os.File) int {
	left, grown := budget(), 0
	for _, f := range files {
		if left.Add(-1) < 0 {
			left.Add(1)
			break
		}
		// Control, not Fd: Fd would put our end in blocking mode and
		// take write deadlines away from it.
		rc, err := f.SyscallConn()
		if err == nil {
			cerr := rc.Control(func(fd uintptr) {
				_, err = unix.FcntlInt(fd, unix.F_SETPIPE_SZ, pipeSize)
			})
			if err == nil {
				err = cerr
			}
		}
		if err != nil {
			left.Add(1)
			continue
		}
		grown++
	}
	return grown
}

// releasePipes gives back what growPipes took, once the pipes are closed.
func releasePipes(n int) {
	if n > 0 {
		budget().Add(int64(n))
	}
}
