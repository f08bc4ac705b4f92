//go:build unix

package mcp

import (
	"os"
	"syscall"
)

// pollable returns f reopened on the same descriptor in non-blocking mode,
// which makes os.NewFile register it with the runtime poller. Files the
// poller cannot watch (regular files) simply keep blocking reads.
func pollable(f *os.File) *os.File {
	fd := int(f.Fd())
	if err := syscall.SetNonblock(fd, true); err != nil {
		return f
	}
	return os.NewFile(uintptr(fd), f.Name())
}
