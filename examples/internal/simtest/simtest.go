// Package simtest holds what the examples' testkit/sim tests share.
package simtest

import (
	"testing"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
)

// WithoutErrorBackoff turns apimachinery's HandleError off for the rest of t. Its rate limit
// sleeps until a package-level time it last saw, the process's start (real time) at first: in a
// synctest bubble, whose clock starts in 2000, a reflector whose watch failed as its process
// crashed slept 27 virtual years, and the run failed to converge (about one run in a few
// hundred). The simulator discards the log it would write. See the closing note of issue 47.
func WithoutErrorBackoff(t testing.TB) {
	saved := utilruntime.ErrorHandlers
	utilruntime.ErrorHandlers = nil
	t.Cleanup(func() { utilruntime.ErrorHandlers = saved })
}
