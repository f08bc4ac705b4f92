//go:build unix

package testenv

import (
	"bytes"
	"os"
	"runtime"
	"strconv"
	"syscall"
)

// Running says whether process pid runs. A zombie counts as gone: an
// orphan's parent is PID 1, which in some containers never reaps it.
func Running(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	if runtime.GOOS != "linux" {
		return true
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	return !Zombie(stat)
}

// Zombie says whether /proc/PID/stat's text is a zombie's.
func Zombie(stat []byte) bool {
	i := bytes.LastIndexByte(stat, ')')
	return i > 0 && i+2 < len(stat) && stat[i+2] == 'Z'
}
