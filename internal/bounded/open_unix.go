//go:build unix

package bounded

import (
	"os"
	"syscall"
)

// open opens path for reading without waiting for a FIFO's writer (the
// file is refused as not regular right after).
func open(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}
