package pollpipe

import (
	"errors"
	"io"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Window is how long Await waits in ppoll(2) on its own thread before the
// caller falls back to waiting in the runtime's poller like any other
// read. It bounds what the fast path can cost a slow reply: a thread held,
// and, until the runtime takes it back, the processor that thread ran on.
const Window = time.Millisecond

// awaiting counts the Awaits in progress, in all Readers.
var awaiting atomic.Int32

// Reader reads a pipe (or socket) that the runtime's network poller does
// not watch directly, so that a message can wake exactly the thread
// waiting for it.
//
// Why: through the poller, a message wakes the poller's thread, which then
// hands the waiting goroutine to a thread to run; and the poller watches a
// descriptor edge-triggered, so every write to the pipe wakes it even when
// the reader waits elsewhere. On a small machine those wake-ups are a third
// of a fast server's round trip. So a reader expecting a message soon
// (Await) waits in ppoll(2) on the pipe and on an eventfd that deadline
// changes and Close write to, and the kernel wakes its thread alone.
//
// Every other wait (Read finding the pipe empty: a session between calls,
// a slow reply past the window) must not hold a thread, so it goes through
// the poller after all, by way of a private epoll instance that holds the
// pipe one-shot: it is armed only while such a read waits, so messages
// picked up by Await never wake the poller.
//
// Read behaves like an *os.File pipe's: it returns os.ErrDeadlineExceeded
// once the deadline has passed, even with data waiting, io.EOF at the end,
// os.ErrClosed after Close. One goroutine reads at a time.
type Reader struct {
	fd   int
	wake int      // eventfd: wakes Await
	ep   int      // private epoll instance holding fd one-shot
	epf  *os.File // ep, registered with the runtime's poller
	epc  syscall.RawConn

	mu sync.Mutex // held through Read and Await; Close takes it to free fd and wake

	dmu      sync.Mutex
	deadline time.Time

	window time.Duration // Window; tests lengthen it

	waiting atomic.Bool // an Await is in ppoll or about to be
	closed  atomic.Bool
}

// New takes over fd (it is switched to non-blocking mode, and Close
// closes it).
func New(fd int) (_ *Reader, err error) {
	if err := unix.SetNonblock(fd, true); err != nil {
		return nil, os.NewSyscallError("setnonblock", err)
	}
	r := &Reader{fd: fd, wake: -1, ep: -1, window: Window}
	defer func() {
		if err != nil {
			r.closeExtras()
		}
	}()
	if r.wake, err = unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK); err != nil {
		return nil, os.NewSyscallError("eventfd", err)
	}
	if r.ep, err = unix.EpollCreate1(unix.EPOLL_CLOEXEC); err != nil {
		return nil, os.NewSyscallError("epoll_create1", err)
	}
	// Added disarmed; Read arms it before each wait.
	if err = unix.EpollCtl(r.ep, unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Events: unix.EPOLLONESHOT}); err != nil {
		return nil, os.NewSyscallError("epoll_ctl", err)
	}
	if err = unix.SetNonblock(r.ep, true); err != nil {
		return nil, os.NewSyscallError("setnonblock", err)
	}
	// A non-blocking descriptor: os.NewFile hands it to the poller.
	r.epf = os.NewFile(uintptr(r.ep), "pollpipe")
	if r.epc, err = r.epf.SyscallConn(); err != nil {
		_ = r.epf.Close()
		r.ep = -1
		return nil, err
	}
	return r, nil
}

// closeExtras frees what New made before it failed.
func (r *Reader) closeExtras() {
	if r.wake >= 0 {
		_ = unix.Close(r.wake)
	}
	if r.ep >= 0 {
		_ = unix.Close(r.ep)
	}
}

// Read reads what the pipe has, waiting in the runtime's poller if it is
// empty.
func (r *Reader) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for {
		if r.closed.Load() {
			return 0, os.ErrClosed
		}
		if dl := r.readDeadline(); !dl.IsZero() && !time.Now().Before(dl) {
			return 0, os.ErrDeadlineExceeded
		}
		n, err := unix.Read(r.fd, b)
		switch {
		case n > 0:
			return n, nil
		case err == nil:
			return 0, io.EOF
		case err == unix.EINTR:
			continue
		case err != unix.EAGAIN:
			return 0, os.NewSyscallError("read", err)
		}
		// Arm, then wait until the instance has the event. Data that came
		// between the read and the arming is reported at once. Both go
		// through epc, which holds the instance's descriptor open for
		// the call: a Close cannot recycle its number underneath.
		var armErr error
		if err := r.epc.Control(func(ep uintptr) {
			armErr = unix.EpollCtl(int(ep), unix.EPOLL_CTL_MOD, r.fd, &unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLONESHOT})
		}); err != nil {
			return 0, os.ErrClosed
		}
		if armErr != nil {
			return 0, os.NewSyscallError("epoll_ctl", armErr)
		}
		err = r.epc.Read(func(ep uintptr) bool {
			var ev [1]unix.EpollEvent
			n, err := unix.EpollWait(int(ep), ev[:], 0)
			return n > 0 || (err != nil && err != unix.EINTR)
		})
		switch {
		case errors.Is(err, os.ErrDeadlineExceeded):
			return 0, os.ErrDeadlineExceeded
		case err != nil:
			return 0, os.ErrClosed // the instance was closed
		}
	}
}

// Await waits, for at most Window and not past either deadline, until the
// pipe has something to read, a deadline change or Close wakes it, or a
// signal arrives; the Read that follows finds out which. It is for a
// reader that expects a message soon, so it waits on its own thread (see
// Reader), and the processor that thread ran on stays with it until the
// runtime takes it back. So at most GOMAXPROCS-1 Awaits wait at once,
// across all Readers: one processor is always left for other goroutines
// (with a single processor Await never waits). The others return at once
// and their Read waits in the poller.
func (r *Reader) Await(deadline time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if n := awaiting.Add(1); n > int32(runtime.GOMAXPROCS(0)-1) {
		awaiting.Add(-1)
		return
	}
	defer awaiting.Add(-1)
	// waiting goes up before the deadline is read: a SetReadDeadline
	// either sees it and wakes the ppoll below, or came before and its
	// deadline is the one read here.
	r.waiting.Store(true)
	defer r.waiting.Store(false)
	if r.closed.Load() {
		return
	}
	d := r.window
	if dl := r.readDeadline(); !dl.IsZero() {
		d = min(d, time.Until(dl))
	}
	if !deadline.IsZero() {
		d = min(d, time.Until(deadline))
	}
	if d <= 0 {
		return
	}
	ts := unix.NsecToTimespec(int64(d))
	fds := [2]unix.PollFd{{Fd: int32(r.fd), Events: unix.POLLIN}, {Fd: int32(r.wake), Events: unix.POLLIN}}
	_, _ = unix.Ppoll(fds[:], &ts, nil)
	if fds[1].Revents != 0 {
		var buf [8]byte
		_, _ = unix.Read(r.wake, buf[:])
	}
}

func (r *Reader) readDeadline() time.Time {
	r.dmu.Lock()
	defer r.dmu.Unlock()
	return r.deadline
}

// SetReadDeadline bounds a Read or Await in progress and later ones; zero
// means none.
func (r *Reader) SetReadDeadline(t time.Time) error {
	if r.closed.Load() {
		return os.ErrClosed
	}
	r.dmu.Lock()
	r.deadline = t
	r.dmu.Unlock()
	if err := r.epf.SetReadDeadline(t); err != nil {
		return err
	}
	if r.waiting.Load() {
		r.poke()
	}
	return nil
}

// poke wakes an Await. The eventfd stays readable until that Await drains
// it, so a poke just before the wait is not lost.
func (r *Reader) poke() {
	one := [8]byte{1}
	_, _ = unix.Write(r.wake, one[:]) // EAGAIN: already full of pokes
}

// Close ends a Read or Await in progress (the Read returns os.ErrClosed)
// and frees the descriptors once it has returned.
func (r *Reader) Close() error {
	if r.closed.Swap(true) {
		return os.ErrClosed
	}
	r.poke()
	err := r.epf.Close() // wakes a Read waiting in the poller
	r.mu.Lock()
	defer r.mu.Unlock()
	return errors.Join(err, unix.Close(r.fd), unix.Close(r.wake))
}

// Fd returns the pipe's descriptor, for inspection only.
func (r *Reader) Fd() int { return r.fd }
