//go:build !linux

package gateway

import "time"

// threadCPU falls back to wall time where the thread's CPU time is not
// at hand.
func threadCPU() time.Duration { return time.Duration(time.Now().UnixNano()) }

// ProcessCPU falls back to wall time.
func ProcessCPU() time.Duration { return time.Duration(time.Now().UnixNano()) }
