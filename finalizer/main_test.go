package finalizer_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/ctrlkit/ctrlkit/testkit"
)

// The shared API server is stopped before goleak looks, so its connections' goroutines are gone.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(testkit.WithSharedAPIServer(m))
}
