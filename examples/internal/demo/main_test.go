package demo_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/ctrlkit/ctrlkit/testkit"
)

// The shared API server is stopped by WithSharedAPIServer before goleak looks.
func TestMain(m *testing.M) { goleak.VerifyTestMain(testkit.WithSharedAPIServer(m)) }
