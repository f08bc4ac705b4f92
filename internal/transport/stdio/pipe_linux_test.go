package stdio

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nexus-mcp/nexus/internal/pollpipe"
)

// The read end is a pollpipe.Reader, close-on-exec like the write end; the
// write end is the child's stdout and stays blocking.
func TestStdoutPipeDescriptors(t *testing.T) {
	r, w, err := stdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	pr, ok := r.(*pollpipe.Reader)
	if !ok {
		t.Fatalf("read end is a %T", r)
	}
	for _, fd := range []int{pr.Fd(), int(w.Fd())} {
		if fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err != nil || fl&unix.FD_CLOEXEC == 0 {
			t.Fatalf("fd %d: flags %#x, %v: want FD_CLOEXEC", fd, fl, err)
		}
	}
	if fl, _ := unix.FcntlInt(w.Fd(), unix.F_GETFL, 0); fl&unix.O_NONBLOCK != 0 {
		t.Fatal("write end is non-blocking")
	}
}

// Where a pollpipe.Reader cannot be made, the pipe is an ordinary one and
// the transport still works, direct reads included.
func TestStdoutPipeFallback(t *testing.T) {
	defer func(f func(int) (stdoutReader, error)) { newPollReader = f }(newPollReader)
	newPollReader = func(int) (stdoutReader, error) { return nil, errors.New("eventfd refused") }
	r, w, err := stdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if _, ok := r.(*os.File); !ok {
		t.Fatalf("read end is a %T, want *os.File", r)
	}
	if err := r.SetReadDeadline(time.Time{}); err != nil {
		t.Fatalf("the fallback pipe has no deadlines: %v", err)
	}
	if _, err := w.WriteString("x\n"); err != nil {
		t.Fatal(err)
	}
	if n, err := r.Read(make([]byte, 4)); n != 2 || err != nil {
		t.Fatalf("read %d, %v", n, err)
	}
}

// Direct reads over the fallback pipe behave as over a pollpipe.Reader.
func TestReadMessageBeforeFallback(t *testing.T) {
	defer func(f func(int) (stdoutReader, error)) { newPollReader = f }(newPollReader)
	newPollReader = func(int) (stdoutReader, error) { return nil, errors.New("eventfd refused") }
	t.Run("deadlines", TestReadMessageBefore)
	t.Run("noise-and-exit", TestReadMessageBeforeNoiseAndExit)
}

// A frame the pipe takes at once is written without registering with the
// caller's context (a registration per write cost more than the write):
// a cancellable write allocates nothing.
func TestQuickWriteAllocatesNothing(t *testing.T) {
	c, _ := startFake(t, "noread", nil)
	mustRead(t, c)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	frame := []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n")
	// 100 runs of 56 bytes fit in any pipe buffer, so none waits.
	if n := testing.AllocsPerRun(100, func() {
		if err := c.WriteFrames(ctx, frame); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("a write allocates %v times", n)
	}
}

func sizeOf(t *testing.T, f *os.File) int {
	t.Helper()
	rc, err := f.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if cerr := rc.Control(func(fd uintptr) { n, err = unix.FcntlInt(fd, unix.F_GETPIPE_SZ, 0) }); cerr != nil || err != nil {
		t.Fatal(cerr, err)
	}
	return n
}

// The pipes to and from a server are grown while the budget lasts, and
// Close gives their share back; past the budget, pipes keep their size
// and the server works all the same.
func TestPipesGrowWithinBudget(t *testing.T) {
	left := budget()
	start := left.Load()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if n := growPipes(w); n != 1 || sizeOf(t, r) != pipeSize || left.Load() != start-1 {
		t.Fatalf("grew %d pipes to %d bytes, budget %d -> %d", n, sizeOf(t, r), start, left.Load())
	}
	releasePipes(1)

	c, _ := startFake(t, "echo", nil)
	if c.grown != 2 || left.Load() != start-2 {
		t.Fatalf("a started server grew %d pipes, budget %d -> %d; want 2", c.grown, start, left.Load())
	}
	if sizeOf(t, c.stdin) != pipeSize {
		t.Fatalf("stdin pipe holds %d bytes", sizeOf(t, c.stdin))
	}
	c.Close()
	if left.Load() != start {
		t.Fatalf("after Close the budget is %d, want %d back", left.Load(), start)
	}

	// With the budget spent, nothing grows and nothing is taken.
	left.Store(1)
	defer left.Store(start)
	r2, w2, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	defer w2.Close()
	before := sizeOf(t, r2)
	if n := growPipes(w, w2); n != 1 || sizeOf(t, r2) != before || left.Load() != 0 {
		t.Fatalf("over budget: grew %d, second pipe %d -> %d bytes, budget left %d", n, before, sizeOf(t, r2), left.Load())
	}
	c, _ = startFake(t, "echo", nil)
	defer c.Close()
	if c.grown != 0 {
		t.Fatalf("grew %d pipes with no budget", c.grown)
	}
	mustWrite(t, c, `{"x":1}`)
	if got := mustRead(t, c); got != `{"x":1}` {
		t.Fatalf("echoed %q", got)
	}
}
