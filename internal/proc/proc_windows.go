//go:build windows

package proc

import (
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/windows"
)

// platform holds the job object that contains the child and its
// descendants. Windows has no process groups that can be killed as a
// unit; a job with KILL_ON_JOB_CLOSE kills the whole tree on demand and,
// because the handle closes when the host dies, whenever the host dies.
type platform struct {
	job windows.Handle
}

// attr: a new process group is what CTRL_BREAK_EVENT is addressed to;
// CREATE_NO_WINDOW keeps a console child from flashing a window.
func attr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{
		CreationFlags: windows.CREATE_NEW_PROCESS_GROUP | windows.CREATE_NO_WINDOW,
		HideWindow:    true,
	}
}

// started puts the child in a job. It is best effort: descendants the
// child spawns before the assignment escape it, and a failure leaves only
// the leader killable.
func (g *Group) started() {
	job, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return
	}
	var info windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION
	info.BasicLimitInformation.LimitFlags = windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE
	if _, err := windows.SetInformationJobObject(job, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		_ = windows.CloseHandle(job)
		return
	}
	h, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE, false, uint32(g.pid))
	if err != nil {
		_ = windows.CloseHandle(job)
		return
	}
	defer windows.CloseHandle(h)
	if err := windows.AssignProcessToJobObject(job, h); err != nil {
		_ = windows.CloseHandle(job)
		return
	}
	g.plat.job = job
}

// term is the polite stop. CTRL_BREAK only reaches processes attached to
// the host's console, which a CREATE_NO_WINDOW child may not be; the kill
// that follows a grace period covers that case.
func term(g *Group) {
	_ = windows.GenerateConsoleCtrlEvent(windows.CTRL_BREAK_EVENT, uint32(g.pid))
}

func kill(g *Group) {
	if g.plat.job != 0 {
		_ = windows.TerminateJobObject(g.plat.job, 1)
	}
	_ = g.cmd.Process.Kill()
}

// release kills what is left of the tree once the leader is gone and
// drops the job handle.
func release(g *Group) {
	if g.plat.job != 0 {
		_ = windows.TerminateJobObject(g.plat.job, 1)
		_ = windows.CloseHandle(g.plat.job)
		g.plat.job = 0
	}
}

func waitNoReap(int) bool { return false }

// ExitStatus says how a process ended: its exit code.
func ExitStatus(ps *os.ProcessState) (code int, signal string) {
	return ps.ExitCode(), ""
}
