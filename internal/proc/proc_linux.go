//go:build linux

package proc

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// attr: a new process group, and the kernel SIGKILLs the leader when the
// host dies. (Pdeathsig fires when the forking OS thread exits; Go retires
// a thread only when a goroutine exits while locked to it, which the
// callers of Start never do.)
func attr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// waitNoReap blocks until the leader has exited but leaves it a zombie.
func waitNoReap(pid int) bool {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err != unix.EINTR {
			return err == nil
		}
	}
}
