//go:build unix && !linux

package stdio

import "syscall"

// sysProcAttr puts the server in its own process group so it and everything
// it spawns can be signalled at once. There is no Pdeathsig outside Linux.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// waitNoReap is unavailable here (no portable waitid with WNOWAIT), so the
// group is killed just after the reap; the window in which its id could be
// recycled is a few microseconds.
func waitNoReap(int) bool { return false }
