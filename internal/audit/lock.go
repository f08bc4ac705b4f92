package audit

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/nexus-mcp/nexus/internal/filelock"
)

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
	if err := filelock.TryLock(f); err != nil {
		holder := filelock.Holder(f)
		f.Close()
		if errors.Is(err, filelock.ErrLocked) {
			if strings.HasSuffix(holder, "this one") {
				holder += ": another Writer opened it"
			}
			return nil, fmt.Errorf("audit log %s is in use by another writer (%s, per %s): two writers would interleave two chains in one file; stop the other one, or give this one an audit path of its own", path, holder, lp)
		}
		return nil, fmt.Errorf("audit log %s: locking %s: %w", path, lp, err)
	}
	filelock.WritePID(f)
	return f, nil
}
