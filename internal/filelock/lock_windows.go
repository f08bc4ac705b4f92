//go:build windows

package filelock

import (
	"errors"
	"os"

	"golang.org/x/sys/windows"
)

// tryLock takes an exclusive lock on f without waiting. It locks one byte
// far past the end, not the start: a Windows lock is mandatory for the
// bytes it covers, and the PID written at the start must stay readable to
// the process that is refused.
func tryLock(f *os.File) error {
	ol := &windows.Overlapped{Offset: 0, OffsetHigh: 0x7fffffff}
	err := windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, ol)
	if errors.Is(err, windows.ERROR_LOCK_VIOLATION) || errors.Is(err, windows.ERROR_IO_PENDING) {
		return ErrLocked
	}
	return err
}

// removeHeld: a file open without FILE_SHARE_DELETE (as Go opens them)
// cannot be removed, so Hold leaves it.
const removeHeld = false
