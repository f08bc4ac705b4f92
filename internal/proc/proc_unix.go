//go:build unix

package proc

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// platform holds per-OS state; Unix needs none beyond the PID, since the
// group id is the leader's PID.
//
//lint:ignore U1000 the Windows build keeps state here
type platform struct{}

func (g *Group) started() { g.unwatch = watch(g.pid) }

func term(g *Group) { _ = syscall.Kill(-g.pid, syscall.SIGTERM) }

func kill(g *Group) { _ = syscall.Kill(-g.pid, syscall.SIGKILL) }

func release(*Group) {}

// ExitStatus says how a process ended: its exit code, or -1 and the name
// of the signal that ended it.
func ExitStatus(ps *os.ProcessState) (code int, signal string) {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		name := unix.SignalName(ws.Signal())
		if name == "" {
			name = ws.Signal().String()
		}
		return -1, name
	}
	return ps.ExitCode(), ""
}
