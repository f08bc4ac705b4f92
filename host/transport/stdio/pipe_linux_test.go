package stdio

import (
	"testing"

	"golang.org/x/sys/unix"

	"github.com/nexus-mcp/nexus/host/transport/stdio/internal/pollpipe"
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
