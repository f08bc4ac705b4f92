//go:build !unix && !windows

package filelock

import "os"

// tryLock: this platform has no file locks Nexus uses; the PID file is
// still written, so a person can see who holds the file.
func tryLock(*os.File) error { return nil }

// removeHeld: without file locks, a removed file would let a second
// process in while the first still writes; it stays (Hold).
const removeHeld = false
