//go:build !unix

package expectations_test

import "time"

// processCPU is not available here; the benchmarks then report wall-clock figures only.
func processCPU() (time.Duration, bool) { return 0, false }
