//go:build linux

package mcp

import (
	"io"
	"os"
	"time"

	"github.com/nexus-mcp/nexus/internal/pollpipe"
)

// stdinReader reads stdin through a pollpipe.Reader that awaits input
// before each read that would wait (see StdioConn); where stdin is not a
// pipe or socket (a file, a terminal, /dev/null) it is pollable(f).
func stdinReader(f *os.File) io.Reader {
	r, err := pollpipe.New(int(f.Fd()))
	if err != nil {
		return pollable(f)
	}
	return awaitingReader{r}
}

// awaitingReader awaits input before each read that would otherwise wait
// in the poller.
type awaitingReader struct{ r *pollpipe.Reader }

func (a awaitingReader) Read(b []byte) (int, error) {
	a.r.Await(time.Time{})
	return a.r.Read(b)
}

func (a awaitingReader) Close() error { return a.r.Close() }
