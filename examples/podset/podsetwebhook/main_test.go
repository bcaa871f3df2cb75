package podsetwebhook_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/ctrlkit/ctrlkit/controller/controllertest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(controllertest.WithSharedAPIServer(m))
}
