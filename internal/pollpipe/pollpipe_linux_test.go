package pollpipe

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nexus-mcp/nexus/internal/testenv"
)

func newTestPipe(t *testing.T) (*Reader, *os.File) {
	t.Helper()
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	r, err := New(p[0])
	if err != nil {
		t.Fatal(err)
	}
	w := os.NewFile(uintptr(p[1]), "w")
	t.Cleanup(func() { _ = r.Close(); _ = w.Close() })
	return r, w
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

// readWaiting waits until a Read waits in the runtime's poller.
func readWaiting(t *testing.T, done <-chan error) {
	t.Helper()
	if !testenv.WaitBlocked(t, done, "IO wait", "pollpipe.(*Reader).Read(") {
		t.Fatalf("Read returned before it waited: %v", <-done)
	}
}

// awaitWaiting starts an Await with no deadline and returns once it waits
// in ppoll(2). A signal may end a wait early (the runtime's preemption
// signals among them, which the stack reads here set off), so an Await
// that returns before it is seen waiting is started again; one that never
// waits fails the test.
func awaitWaiting(t *testing.T, r *Reader) <-chan error {
	t.Helper()
	for range 20 {
		done := awaitAsync(r, time.Time{})
		if testenv.WaitBlocked(t, done, "syscall", "pollpipe.(*Reader).Await(") {
			return done
		}
	}
	t.Fatal("20 Awaits in a row returned without waiting")
	return nil
}

func TestPollReaderReadsAndEnds(t *testing.T) {
	r, w := newTestPipe(t)
	done := make(chan string, 1)
	errc := make(chan error, 1)
	go func() {
		buf := make([]byte, 16)
		n, err := r.Read(buf) // waits: nothing written yet
		done <- string(buf[:n])
		errc <- err
	}()
	readWaiting(t, errc)
	if _, err := w.WriteString("hello\n"); err != nil {
		t.Fatal(err)
	}
	if got := <-done; got != "hello\n" {
		t.Fatalf("read %q, %v", got, <-errc)
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

	// A deadline in the future ends a waiting Read when it passes. A Read
	// that starts too late finds it passed without waiting: then again,
	// with a longer one.
	for d := 20 * time.Millisecond; ; d *= 2 {
		_ = r.SetReadDeadline(time.Now().Add(d))
		done := readAsync(r)
		waited := testenv.WaitBlocked(t, done, "IO wait", "pollpipe.(*Reader).Read(")
		if err := within(t, done, 5*time.Second+d); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("deadline passed while waiting: %v", err)
		}
		if waited {
			break
		}
		if d > 5*time.Second {
			t.Fatal("a Read never started before its deadline passed")
		}
	}

	// Moving the deadline into the past wakes a Read waiting without one
	// (an InterruptRead), however many times it is done.
	for range 50 {
		_ = r.SetReadDeadline(time.Time{})
		done := readAsync(r)
		readWaiting(t, done)
		_ = r.SetReadDeadline(time.Unix(1, 0))
		if err := within(t, done, 5*time.Second); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("interrupted wait: %v", err)
		}
	}
}

func TestPollReaderCloseWakesReader(t *testing.T) {
	r, _ := newTestPipe(t)
	done := readAsync(r)
	readWaiting(t, done)
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

// New leaves the pipe non-blocking and its own descriptors close-on-exec.
func TestNewDescriptors(t *testing.T) {
	r, _ := newTestPipe(t)
	fl, err := unix.FcntlInt(uintptr(r.fd), unix.F_GETFL, 0)
	if err != nil || fl&unix.O_NONBLOCK == 0 {
		t.Fatalf("pipe flags %#x, %v: want O_NONBLOCK", fl, err)
	}
	for _, fd := range []int{r.wake, r.ep} {
		if fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err != nil || fl&unix.FD_CLOEXEC == 0 {
			t.Fatalf("fd %d: flags %#x, %v: want FD_CLOEXEC", fd, fl, err)
		}
	}
}

// awaitAsync runs one Await and closes the channel when it returns.
func awaitAsync(r *Reader, deadline time.Time) <-chan error {
	done := make(chan error, 1)
	go func() {
		r.Await(deadline)
		done <- nil
	}()
	return done
}

func TestPollReaderAwaitWakes(t *testing.T) {
	if runtime.GOMAXPROCS(0) == 1 {
		t.Skip("Await does not wait with one processor; TestPollReaderAwaitOneProc covers it")
	}
	r, w := newTestPipe(t)
	r.window = time.Hour // only what the test does can end a wait

	// A reply ends the wait, and the Read after it has it.
	done := awaitWaiting(t, r)
	if _, err := w.WriteString("reply\n"); err != nil {
		t.Fatal(err)
	}
	within(t, done, 5*time.Second)
	if n, err := r.Read(make([]byte, 16)); n != 6 || err != nil {
		t.Fatalf("read after Await: %d, %v", n, err)
	}

	// Its own deadline ends it (again with a longer one if it started too
	// late to wait, or a signal ended its wait early).
	for d := 20 * time.Millisecond; ; d *= 2 {
		done := awaitAsync(r, time.Now().Add(d))
		waited := testenv.WaitBlocked(t, done, "syscall", "pollpipe.(*Reader).Await(")
		within(t, done, 5*time.Second+d)
		if waited {
			break
		}
		if d > 5*time.Second {
			t.Fatal("an Await never started before its deadline passed")
		}
	}

	// A deadline change (an interrupt) ends it, however often.
	for range 50 {
		done := awaitWaiting(t, r)
		_ = r.SetReadDeadline(time.Unix(1, 0))
		within(t, done, 5*time.Second)
		_ = r.SetReadDeadline(time.Time{})
	}

	// Close ends it, and waits for it.
	done = awaitWaiting(t, r)
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	within(t, done, 5*time.Second)
}

func TestPollReaderAwaitOneProc(t *testing.T) {
	r, _ := newTestPipe(t)
	r.window = time.Hour
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	within(t, awaitAsync(r, time.Time{}), 5*time.Second)
}

// At most GOMAXPROCS-1 Awaits wait at once, across Readers: with two
// processors, a second Reader's Await returns at once while the first
// waits, and waits again once the first is done.
func TestAwaitLeavesAProcessor(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	a, _ := newTestPipe(t)
	b, wb := newTestPipe(t)
	a.window, b.window = time.Hour, time.Hour
	var first <-chan error
	for attempt := 0; ; attempt++ {
		first = awaitWaiting(t, a)
		other := awaitAsync(b, time.Time{})
		select {
		case <-other: // no processor to spare: it returned at once
		case <-first:
			// A signal ended the first wait early, so the other may
			// rightly wait: end it and try again.
			_ = b.SetReadDeadline(time.Unix(1, 0))
			within(t, other, 5*time.Second)
			_ = b.SetReadDeadline(time.Time{})
			if attempt == 20 {
				t.Fatal("the first Await never kept waiting")
			}
			continue
		case <-time.After(5 * time.Second):
			t.Fatal("a second Await waited while the first did")
		}
		break
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	within(t, first, 5*time.Second)
	second := awaitWaiting(t, b) // fails if it keeps returning at once
	if _, err := wb.WriteString("x"); err != nil {
		t.Fatal(err)
	}
	within(t, second, 5*time.Second)
}

// eventsPending reports whether the private epoll instance has an event,
// that is whether a write to the pipe would wake the runtime's poller.
func eventsPending(t *testing.T, r *Reader) bool {
	t.Helper()
	var ev [1]unix.EpollEvent
	n, err := unix.EpollWait(r.ep, ev[:], 0)
	if err != nil {
		t.Fatal(err)
	}
	return n > 0
}

// The pipe is armed in the private epoll instance only while a Read waits
// there: writes at other times (replies that Await picks up) do not reach
// the runtime's poller.
func TestPollReaderArmsOnlyWhileReadWaits(t *testing.T) {
	r, w := newTestPipe(t)
	buf := make([]byte, 16)
	if _, err := w.WriteString("a"); err != nil {
		t.Fatal(err)
	}
	if eventsPending(t, r) {
		t.Fatal("an event before any Read waited")
	}
	if _, err := r.Read(buf); err != nil { // does not wait: data is there
		t.Fatal(err)
	}
	done := readAsync(r) // waits, armed
	readWaiting(t, done)
	if _, err := w.WriteString("b"); err != nil {
		t.Fatal(err)
	}
	if err := within(t, done, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	// The event that woke it disarmed the pipe: later writes make none.
	if _, err := w.WriteString("c"); err != nil {
		t.Fatal(err)
	}
	if eventsPending(t, r) {
		t.Fatal("an event for a write while no Read waited")
	}
}

// Reads, waits, deadline changes and writes all at once, then a Close in
// the middle of it: everything returns, and nothing read is corrupted.
func TestReaderStress(t *testing.T) {
	r, w := newTestPipe(t)
	r.window = 200 * time.Microsecond
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { // writer: numbered lines
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := fmt.Fprintf(w, "%08d\n", i); err != nil {
				return
			}
		}
	}()
	go func() { // interrupter: deadlines come and go
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			_ = r.SetReadDeadline(time.Now().Add(time.Duration(rand.IntN(300)) * time.Microsecond))
			time.Sleep(50 * time.Microsecond)
			_ = r.SetReadDeadline(time.Time{})
		}
	}()
	readerDone := make(chan error, 1)
	go func() {
		var line []byte
		next := 0
		buf := make([]byte, 64)
		for {
			r.Await(time.Now().Add(time.Millisecond))
			n, err := r.Read(buf)
			switch {
			case errors.Is(err, os.ErrDeadlineExceeded):
				continue
			case err != nil:
				readerDone <- err
				return
			}
			for _, c := range buf[:n] {
				if c != '\n' {
					line = append(line, c)
					continue
				}
				if want := fmt.Sprintf("%08d", next); string(line) != want {
					readerDone <- fmt.Errorf("read %q, want %q", line, want)
					return
				}
				line, next = line[:0], next+1
			}
		}
	}()
	time.Sleep(300 * time.Millisecond)
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-readerDone:
		if !errors.Is(err, os.ErrClosed) {
			t.Fatalf("reader ended with %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("reader still running after Close")
	}
	close(stop)
	_ = w.Close() // unblocks the writer if the pipe is full
	wg.Wait()
}
