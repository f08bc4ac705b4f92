package filelock

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
)

// ErrLocked is TryLock's answer when another open file holds the lock.
var ErrLocked = errors.New("locked")

// TryLock takes an exclusive lock on f without waiting: ErrLocked when
// another open file holds it. The lock belongs to the open file, so a
// second open in the same process is refused as a second process is. It
// is released when f is closed.
func TryLock(f *os.File) error { return tryLock(f) }

// poll is how often Acquire tries again: the locks here are held for a
// file write or for a process's life, so a short wait is the common case.
const poll = 20 * time.Millisecond

// Acquire opens (creating it) the lock file at path and takes its lock,
// waiting until ctx ends; it then writes this process's id into it. Close
// the file to release. A wait that ends early says which process holds
// the lock.
func Acquire(ctx context.Context, path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		err := TryLock(f)
		if err == nil {
			WritePID(f)
			return f, nil
		}
		if !errors.Is(err, ErrLocked) {
			f.Close()
			return nil, fmt.Errorf("locking %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			holder := Holder(f)
			f.Close()
			return nil, fmt.Errorf("%s is locked by %s: %w", path, holder, context.Cause(ctx))
		case <-t.C:
		}
	}
}

// WritePID records this process as the holder of the lock file f. The id
// only informs those refused, so a failure to write it is not an error.
func WritePID(f *os.File) {
	if f.Truncate(0) == nil {
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
}

// Holder says which process holds the lock file f, from the id in it.
func Holder(f *os.File) string {
	b := make([]byte, 32)
	n, err := f.ReadAt(b, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return "a process whose id cannot be read"
	}
	pid := strings.TrimSpace(string(b[:n]))
	if _, err := strconv.Atoi(pid); err != nil || pid == "" {
		return "a process that has not written its id yet"
	}
	if pid == strconv.Itoa(os.Getpid()) {
		return "process " + pid + ", this one"
	}
	return "process " + pid
}
