//go:build linux

package plugin

import (
	"os/exec"
	"syscall"
)

// setProcAttr puts the plugin in its own process group, so a Ctrl-C in the
// terminal reaches the host alone, which then stops its plugins in order;
// and asks the kernel to SIGKILL the plugin if the host dies without
// cleaning up, so no plugin outlives it.
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
