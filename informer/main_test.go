package informer_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/ctrlkit/ctrlkit/testkit"
)

// Every test shuts its factory down; goleak proves no informer goroutine
// survives that. The shared API server (for the tests that need one) is
// stopped before goleak looks.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(testkit.WithSharedAPIServer(m))
}
