//go:build unix && !linux

package plugin

import (
	"os/exec"
	"syscall"
)

// setProcAttr puts the plugin in its own process group, so a Ctrl-C in the
// terminal reaches the host alone, which then stops its plugins in order.
func setProcAttr(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }
