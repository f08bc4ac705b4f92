//go:build !linux

package stdio

import "os"

// stdoutPipe makes the pipe for the server's stdout: an ordinary one,
// read through the runtime's poller where it can watch pipes.
func stdoutPipe() (stdoutReader, *os.File, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	return r, w, nil
}

// quickWriter: elsewhere every write goes through the ordinary, watched
// write (see the Linux one).
type quickWriter struct{}

func (quickWriter) init(*os.File)    {}
func (quickWriter) write([]byte) int { return 0 }

// growPipes: elsewhere pipes keep the size the system gives them.
func growPipes(...*os.File) int { return 0 }
func releasePipes(int)          {}
