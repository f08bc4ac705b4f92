package gateway

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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

// PidSleeps is how many times the threads of process pid have gone to
// sleep waiting (their voluntary context switches, /proc/PID/task/*/status):
// a thread parks in a futex or the poller when the Go scheduler finds no
// goroutine to run, and each such sleep is a wake-up later. Threads that
// ended are not counted (the Go runtime seldom ends one).
func PidSleeps(pid int) (int64, error) {
	dir := fmt.Sprintf("/proc/%d/task", pid)
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return 0, fmt.Errorf("the threads of process %d: %w", pid, err)
	}
	var n int64
	for _, t := range tasks {
		b, err := os.ReadFile(filepath.Join(dir, t.Name(), "status"))
		if err != nil {
			continue // the thread ended meanwhile
		}
		_, rest, ok := strings.Cut(string(b), "\nvoluntary_ctxt_switches:")
		if !ok {
			continue
		}
		line, _, _ := strings.Cut(rest, "\n")
		v, err := strconv.ParseInt(strings.TrimSpace(line), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("the context switches of thread %s of process %d: %q: %w", t.Name(), pid, line, err)
		}
		n += v
	}
	return n, nil
}

// SignalProfile asks the nexusbench build of `nexus serve` (pid) to start
// or stop its CPU profile (bench.go).
func SignalProfile(pid int) error { return syscall.Kill(pid, syscall.SIGUSR1) }
