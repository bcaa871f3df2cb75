package controllertest_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/ctrlkit/ctrlkit/controller/controllertest"
)

// The shared API server is stopped by WithSharedAPIServer before goleak looks, so connections
// to it are closed and their goroutines gone.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(controllertest.WithSharedAPIServer(m))
}
