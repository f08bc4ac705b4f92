package stdio

import (
	"errors"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// stdoutPipe makes the pipe for the server's stdout. On Linux its read end
// stays out of the runtime's network poller: see pollReader.
func stdoutPipe() (stdoutReader, *os.File, error) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		return nil, nil, os.NewSyscallError("pipe2", err)
	}
	r, err := newPollReader(p[0])
	if err != nil {
		_ = unix.Close(p[0])
		_ = unix.Close(p[1])
		return nil, nil, err
	}
	// The write end is the child's stdout: a plain blocking descriptor.
	return r, os.NewFile(uintptr(p[1]), "|1"), nil
}

// pollReader reads a pipe outside the runtime's network poller: a reader
// that finds it empty waits in ppoll(2) on its own thread, on the pipe and
// on an eventfd that deadline changes and Close write to.
//
// Why: a caller reading its own reply (mcp.DirectReader) is woken by the
// kernel the moment the server writes, on the thread that waits. Through
// the poller the same reply wakes the poller's thread, which then hands
// the goroutine to a thread to run; and a descriptor the poller watches
// wakes that thread on every write even when nobody waits through it. On
// a small machine those wake-ups are a third of a fast server's round
// trip. The price is a thread per session while its reader waits, the
// same as for a blocking read of a file.
//
// It behaves like an *os.File pipe for the calls the Conn makes: Read
// returns os.ErrDeadlineExceeded once the deadline has passed, even with
// data waiting, io.EOF at the end, os.ErrClosed after Close; Close wakes
// and waits out a Read in progress.
type pollReader struct {
	fd, wake int

	mu sync.Mutex // held through Read; Close takes it to free the descriptors

	dmu      sync.Mutex
	deadline time.Time

	waiting atomic.Bool // a Read is in ppoll or about to be
	closed  atomic.Bool
}

func newPollReader(fd int) (*pollReader, error) {
	if err := unix.SetNonblock(fd, true); err != nil {
		return nil, os.NewSyscallError("setnonblock", err)
	}
	wake, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return nil, os.NewSyscallError("eventfd", err)
	}
	return &pollReader{fd: fd, wake: wake}, nil
}

// Read reads what the pipe has, waiting for something if it is empty.
func (r *pollReader) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for {
		// waiting goes up before the deadline is read: a SetReadDeadline
		// either sees it and wakes the ppoll below, or came before and
		// its deadline is the one read here.
		r.waiting.Store(true)
		if r.closed.Load() {
			r.waiting.Store(false)
			return 0, os.ErrClosed
		}
		var timeout *unix.Timespec
		if dl := r.readDeadline(); !dl.IsZero() {
			left := time.Until(dl)
			if left <= 0 {
				r.waiting.Store(false)
				return 0, os.ErrDeadlineExceeded
			}
			ts := unix.NsecToTimespec(int64(left))
			timeout = &ts
		}
		n, err := unix.Read(r.fd, b)
		switch {
		case n > 0:
			r.waiting.Store(false)
			return n, nil
		case err == nil:
			r.waiting.Store(false)
			return 0, io.EOF
		case err == unix.EINTR:
			continue
		case err != unix.EAGAIN:
			r.waiting.Store(false)
			return 0, os.NewSyscallError("read", err)
		}
		fds := [2]unix.PollFd{{Fd: int32(r.fd), Events: unix.POLLIN}, {Fd: int32(r.wake), Events: unix.POLLIN}}
		_, err = unix.Ppoll(fds[:], timeout, nil)
		r.waiting.Store(false)
		if fds[1].Revents != 0 {
			var buf [8]byte
			_, _ = unix.Read(r.wake, buf[:])
		}
		if err != nil && err != unix.EINTR {
			return 0, os.NewSyscallError("ppoll", err)
		}
	}
}

func (r *pollReader) readDeadline() time.Time {
	r.dmu.Lock()
	defer r.dmu.Unlock()
	return r.deadline
}

// SetReadDeadline bounds Read in progress and later ones; zero means none.
func (r *pollReader) SetReadDeadline(t time.Time) error {
	if r.closed.Load() {
		return os.ErrClosed
	}
	r.dmu.Lock()
	r.deadline = t
	r.dmu.Unlock()
	if r.waiting.Load() {
		r.poke()
	}
	return nil
}

// poke wakes a Read waiting in ppoll. The eventfd stays readable until
// that Read drains it, so a poke just before the wait is not lost.
func (r *pollReader) poke() {
	one := [8]byte{1}
	_, _ = unix.Write(r.wake, one[:]) // EAGAIN: already full of pokes
}

// Close ends a Read in progress (os.ErrClosed) and frees the descriptors
// once it has returned.
func (r *pollReader) Close() error {
	if r.closed.Swap(true) {
		return os.ErrClosed
	}
	r.poke()
	r.mu.Lock()
	defer r.mu.Unlock()
	return errors.Join(unix.Close(r.fd), unix.Close(r.wake))
}
