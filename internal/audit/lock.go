package audit

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// errLocked is tryLock's answer when another open file holds the lock.
var errLocked = errors.New("locked")

// lock takes path+".lock" for this Writer alone and writes the process id
// into it. Two writers on one log would interleave two chains, which
// verify then reports as tampering; the second is refused instead, told
// which process holds the log. The lock file is left in place at Close:
// removing it would race a writer that has just opened it.
func lock(path string) (*os.File, error) {
	lp := path + ".lock"
	f, err := os.OpenFile(lp, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("audit log %s: its lock file: %w; check the directory exists and is writable", path, err)
	}
	if err := tryLock(f); err != nil {
		holder := readHolder(f)
		f.Close()
		if errors.Is(err, errLocked) {
			return nil, fmt.Errorf("audit log %s is in use by another writer (%s, per %s): two writers would interleave two chains in one file; stop the other one, or give this one an audit path of its own", path, holder, lp)
		}
		return nil, fmt.Errorf("audit log %s: locking %s: %w", path, lp, err)
	}
	// The id only informs the next one refused: a failure to write it
	// does not stop the log.
	if f.Truncate(0) == nil {
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return f, nil
}

// readHolder says which process holds a lock file, from the PID in it.
func readHolder(f *os.File) string {
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
		return "process " + pid + ", this one: another Writer opened it"
	}
	return "process " + pid
}
