//go:build linux

package stdio

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// sysProcAttr puts the server in its own process group so it and everything
// it spawns can be signalled at once, and asks the kernel to SIGKILL it if
// the host dies, so no server outlives the host. (Pdeathsig fires when the
// forking OS thread exits; Go only retires threads whose goroutine exits
// while locked to them, which this package never does.)
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// waitNoReap blocks until the leader has exited but leaves it a zombie. While
// the zombie exists its PID, and so the process-group id, cannot be reused,
// which makes the group kill that follows safe against PID recycling.
func waitNoReap(pid int) bool {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err != unix.EINTR {
			return err == nil
		}
	}
}
