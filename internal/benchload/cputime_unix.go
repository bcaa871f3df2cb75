//go:build unix

package benchload

import "syscall"

// cpuTime is the CPU time the process has used, user and system, in nanoseconds; ok is false
// when the system cannot tell.
func cpuTime() (ns int64, ok bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return ru.Utime.Nano() + ru.Stime.Nano(), true
}
