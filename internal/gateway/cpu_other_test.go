//go:build !linux

package gateway

import (
	"errors"
	"time"
)

// threadCPU falls back to wall time where the thread's CPU time is not
// at hand.
func threadCPU() time.Duration { return time.Duration(time.Now().UnixNano()) }

// ProcessCPU falls back to wall time.
func ProcessCPU() time.Duration { return time.Duration(time.Now().UnixNano()) }

// PidCPU needs Linux's process CPU clocks.
func PidCPU(pid int) (time.Duration, error) {
	return 0, errors.New("reading another process's CPU time needs Linux (its process CPU clocks); run this benchmark on Linux")
}

// PidSleeps needs Linux's /proc.
func PidSleeps(pid int) (int64, error) {
	return 0, errors.New("counting another process's thread sleeps needs Linux (/proc/PID/task); run this benchmark on Linux")
}

// SignalProfile is for Linux, as the benchmark that uses it.
func SignalProfile(pid int) error {
	return errors.New("profiling nexus serve from its benchmark needs Linux; run this benchmark on Linux")
}
