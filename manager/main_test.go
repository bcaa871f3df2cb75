package manager

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/ctrlkit/ctrlkit/manager/internal/clientgometrics"
)

// hookedAtInit is whether client-go's metric hooks were taken when this
// package was initialised: a package-level variable of a test file is set
// before TestMain, so before any test built a Manager.
var hookedAtInit = clientgometrics.Hooked()

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
