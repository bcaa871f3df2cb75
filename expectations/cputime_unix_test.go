//go:build unix

package expectations_test

import (
	"syscall"
	"time"
)

// processCPU returns the CPU time (user + system) the test process has used so far. The
// benchmarks report ops per CPU-second next to wall-clock ns/op: on a machine shared with
// other jobs the wall clock measures the neighbours as much as the code.
func processCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
