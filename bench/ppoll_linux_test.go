package bench

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"testing"

	"golang.org/x/sys/unix"
)

// rawPPoll is the raw pipe read the way Nexus's stdio transport waits for
// a reply on Linux: the pipe stays out of the runtime's poller and the
// caller waits in ppoll(2) on its own thread. It is the floor for that way
// of waiting, reported next to the plain raw pipe so the ratio can be read
// either way.
type rawPPoll struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	fd  int
	buf []byte
}

func init() {
	ppollPipe = &contender{"rawpipe-ppoll", func(tb testing.TB) caller { return newRawPPoll(tb) }}
}

func newRawPPoll(tb testing.TB) *rawPPoll {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		tb.Fatal(err)
	}
	if err := unix.SetNonblock(p[0], true); err != nil {
		tb.Fatal(err)
	}
	w := os.NewFile(uintptr(p[1]), "|1")
	cmd := exec.Command(bins.pipeecho)
	cmd.Stdout = w
	in, _ := cmd.StdinPipe()
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	w.Close()
	return &rawPPoll{cmd: cmd, in: in, fd: p[0], buf: make([]byte, 0, 64<<10)}
}

func (r *rawPPoll) call(context.Context) error {
	if _, err := io.WriteString(r.in, request); err != nil {
		return err
	}
	r.buf = r.buf[:0]
	for {
		n, err := unix.Read(r.fd, r.buf[len(r.buf):cap(r.buf)])
		switch {
		case n > 0:
			r.buf = r.buf[:len(r.buf)+n]
			if bytes.IndexByte(r.buf, '\n') >= 0 {
				return nil
			}
		case err == unix.EAGAIN:
			fds := []unix.PollFd{{Fd: int32(r.fd), Events: unix.POLLIN}}
			if _, err := unix.Ppoll(fds, nil, nil); err != nil && err != unix.EINTR {
				return err
			}
		case err == nil:
			return io.ErrUnexpectedEOF
		case err != unix.EINTR:
			return err
		}
	}
}

func (r *rawPPoll) close() { r.in.Close(); r.cmd.Wait(); unix.Close(r.fd) }
