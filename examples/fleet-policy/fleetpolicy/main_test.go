package fleetpolicy_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/ctrlkit/ctrlkit/testkit"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(testkit.WithSharedAPIServer(m))
}
