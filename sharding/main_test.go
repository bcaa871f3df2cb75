package sharding_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/ctrlkit/ctrlkit/testkit"
)

// Every goroutine a Member, Sharder or Dispatcher starts ends before its Run
// returns. The shared API server (for the tests that use one) is stopped
// before goleak looks.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(testkit.WithSharedAPIServer(m))
}
