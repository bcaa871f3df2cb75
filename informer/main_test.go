package informer

import (
	"testing"

	"go.uber.org/goleak"
)

// Every test shuts its factory down; goleak proves no informer goroutine
// survives that.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
