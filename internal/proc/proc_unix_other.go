//go:build unix && !linux

package proc

import "syscall"

// attr: a new process group. There is no parent-death signal here; the
// watchdog covers the host's death.
func attr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// waitNoReap is unavailable here (no portable waitid with WNOWAIT), so the
// group is killed just after the reap; the window in which its id could be
// recycled is a few microseconds.
func waitNoReap(int) bool { return false }
