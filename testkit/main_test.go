package testkit_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/ctrlkit/ctrlkit/testkit"
)

// The shared API server is stopped by WithSharedAPIServer before goleak looks, so connections
// to it are closed and their goroutines gone.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(testkit.WithSharedAPIServer(m))
}
