package gateway

import (
	"fmt"
	"syscall"
	"time"
	"unsafe"
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

// PidCPU is the CPU time process pid has used, its ended threads
// included, to the nanosecond: its process CPU clock (clock_gettime on
// MAKE_PROCESS_CPUCLOCK(pid, CPUCLOCK_SCHED), as glibc's
// clock_getcpuclockid makes it). /proc/PID/stat counts in clock ticks
// (10 ms), too coarse for a few hundred µs a round.
func PidCPU(pid int) (time.Duration, error) {
	clk := (^pid << 3) | 2
	var ts syscall.Timespec
	if _, _, e := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, uintptr(clk), uintptr(unsafe.Pointer(&ts)), 0); e != 0 {
		return 0, fmt.Errorf("the CPU clock of process %d: %w", pid, e)
	}
	return time.Duration(ts.Nano()), nil
}
