//go:build unix

package stdio

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// platform holds per-OS process state; Unix needs none beyond the PID,
// because the process group id equals the leader's PID (Setpgid).
//
//lint:ignore U1000 the Windows build keeps state here
type platform struct{}

func (c *Conn) platformStarted() {}

// The group functions are called with c.procMu held and only while the
// leader is not yet reaped (see Conn.wait), so -pid still names our group.

func termGroup(c *Conn) { _ = syscall.Kill(-c.pid, syscall.SIGTERM) }

func killGroup(c *Conn) { _ = syscall.Kill(-c.pid, syscall.SIGKILL) }

func releaseGroup(*Conn) {}

func exitStatus(ps *os.ProcessState) (code int, signal string) {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		name := unix.SignalName(ws.Signal())
		if name == "" {
			name = ws.Signal().String()
		}
		return -1, name
	}
	return ps.ExitCode(), ""
}
