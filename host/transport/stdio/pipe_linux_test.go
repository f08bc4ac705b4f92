package stdio

import (
	"errors"
	"io"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func newTestPipe(t *testing.T) (*pollReader, *os.File) {
	t.Helper()
	r, w, err := stdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close(); _ = w.Close() })
	return r.(*pollReader), w
}

// readAsync runs one Read and hands back what it returned.
func readAsync(r io.Reader) <-chan error {
	done := make(chan error, 1)
	go func() {
		_, err := r.Read(make([]byte, 16))
		done <- err
	}()
	return done
}

func within(t *testing.T, done <-chan error, d time.Duration) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		t.Fatalf("Read still blocked after %v", d)
		return nil
	}
}

func TestPollReaderReadsAndEnds(t *testing.T) {
	r, w := newTestPipe(t)
	done := make(chan string, 1)
	go func() {
		buf := make([]byte, 16)
		n, _ := r.Read(buf) // waits: nothing written yet
		done <- string(buf[:n])
	}()
	time.Sleep(10 * time.Millisecond)
	if _, err := w.WriteString("hello\n"); err != nil {
		t.Fatal(err)
	}
	if got := <-done; got != "hello\n" {
		t.Fatalf("read %q", got)
	}
	_ = w.Close()
	if n, err := r.Read(make([]byte, 4)); n != 0 || err != io.EOF {
		t.Fatalf("after the writer closed: %d, %v; want EOF", n, err)
	}
}

func TestPollReaderDeadline(t *testing.T) {
	r, w := newTestPipe(t)
	// A passed deadline wins over data that is waiting, as for *os.File.
	if _, err := w.WriteString("x"); err != nil {
		t.Fatal(err)
	}
	_ = r.SetReadDeadline(time.Unix(1, 0))
	if _, err := r.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("passed deadline: %v", err)
	}
	_ = r.SetReadDeadline(time.Time{})
	if n, err := r.Read(make([]byte, 1)); n != 1 || err != nil {
		t.Fatalf("deadline cleared: %d, %v", n, err)
	}

	// A deadline in the future ends a waiting Read when it passes.
	_ = r.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	if err := within(t, readAsync(r), 5*time.Second); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("deadline passed while waiting: %v", err)
	}

	// Moving the deadline into the past wakes a Read waiting without one
	// (an InterruptRead), however many times it is done.
	for range 50 {
		_ = r.SetReadDeadline(time.Time{})
		done := readAsync(r)
		time.Sleep(time.Millisecond)
		_ = r.SetReadDeadline(time.Unix(1, 0))
		if err := within(t, done, 5*time.Second); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("interrupted wait: %v", err)
		}
	}
}

func TestPollReaderCloseWakesReader(t *testing.T) {
	r, _ := newTestPipe(t)
	done := readAsync(r)
	time.Sleep(10 * time.Millisecond)
	closed := make(chan error, 1)
	go func() { closed <- r.Close() }()
	if err := within(t, done, 5*time.Second); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("Read during Close: %v", err)
	}
	if err := <-closed; err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := r.Close(); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := r.Read(make([]byte, 1)); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("Read after Close: %v", err)
	}
	if err := r.SetReadDeadline(time.Now()); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("SetReadDeadline after Close: %v", err)
	}
}

// The read end is what makes waits cheap: non-blocking, close-on-exec,
// and never handed to the runtime's poller (an *os.File would be).
func TestStdoutPipeDescriptor(t *testing.T) {
	r, w := newTestPipe(t)
	fl, err := unix.FcntlInt(uintptr(r.fd), unix.F_GETFL, 0)
	if err != nil || fl&unix.O_NONBLOCK == 0 {
		t.Fatalf("read end flags %#x, %v: want O_NONBLOCK", fl, err)
	}
	for _, fd := range []int{r.fd, r.wake, int(w.Fd())} {
		if fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err != nil || fl&unix.FD_CLOEXEC == 0 {
			t.Fatalf("fd %d: flags %#x, %v: want FD_CLOEXEC", fd, fl, err)
		}
	}
	// The write end is the child's stdout and stays blocking.
	if fl, _ := unix.FcntlInt(w.Fd(), unix.F_GETFL, 0); fl&unix.O_NONBLOCK != 0 {
		t.Fatalf("write end is non-blocking")
	}
}
