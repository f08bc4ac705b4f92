package gateway

import (
	"syscall"
	"time"
)

// threadCPU is the CPU time the calling OS thread has used (lock the
// goroutine to its thread first): on a loaded machine, wall time counts
// other processes' turns too.
func threadCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(1 /* RUSAGE_THREAD */, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// ProcessCPU is the CPU time the whole process has used: for benchmarks
// whose work spans goroutines (client, gateway, upstream in process).
func ProcessCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
