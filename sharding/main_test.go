package sharding_test

import (
	"testing"

	"go.uber.org/goleak"
)

// Every goroutine a Member, Sharder or Gate starts ends before its Run
// returns.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
