//go:build windows

package stdio

import (
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/windows"
)

// platform holds the job object that contains the server and its children.
// Windows has no process groups that can be killed as a unit; a job with
// KILL_ON_JOB_CLOSE both kills the whole tree on demand and, because the
// handle closes when the host dies, keeps servers from outliving the host.
type platform struct {
	job windows.Handle
}

// sysProcAttr: a new process group is what CTRL_BREAK_EVENT is addressed to;
// CREATE_NO_WINDOW keeps a console server from flashing a window.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{
		CreationFlags: windows.CREATE_NEW_PROCESS_GROUP | windows.CREATE_NO_WINDOW,
		HideWindow:    true,
	}
}

// platformStarted puts the server in a job. It is best effort: children the
// server spawns before the assignment escape it, and a failure leaves only
// the leader killable.
func (c *Conn) platformStarted() {
	job, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		c.log.Debug("cannot create job object; child processes may outlive the server", "error", err)
		return
	}
	var info windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION
	info.BasicLimitInformation.LimitFlags = windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE
	if _, err := windows.SetInformationJobObject(job, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		c.log.Debug("cannot configure job object", "error", err)
		_ = windows.CloseHandle(job)
		return
	}
	h, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE, false, uint32(c.pid))
	if err != nil {
		c.log.Debug("cannot open server process", "error", err)
		_ = windows.CloseHandle(job)
		return
	}
	defer windows.CloseHandle(h)
	if err := windows.AssignProcessToJobObject(job, h); err != nil {
		c.log.Debug("cannot assign server to job object", "error", err)
		_ = windows.CloseHandle(job)
		return
	}
	c.plat.job = job
}

// termGroup is the polite stop. CTRL_BREAK only reaches processes attached
// to the host's console, which a CREATE_NO_WINDOW child may not be; the kill
// that follows after the grace period covers that case.
func termGroup(c *Conn) {
	_ = windows.GenerateConsoleCtrlEvent(windows.CTRL_BREAK_EVENT, uint32(c.pid))
}

func killGroup(c *Conn) {
	if c.plat.job != 0 {
		_ = windows.TerminateJobObject(c.plat.job, 1)
	}
	_ = c.cmd.Process.Kill()
}

// releaseGroup kills what is left of the tree once the leader is gone and
// drops the job handle.
func releaseGroup(c *Conn) {
	if c.plat.job != 0 {
		_ = windows.TerminateJobObject(c.plat.job, 1)
		_ = windows.CloseHandle(c.plat.job)
		c.plat.job = 0
	}
}

func waitNoReap(int) bool { return false }

func exitStatus(ps *os.ProcessState) (code int, signal string) {
	return ps.ExitCode(), ""
}
