package client_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/ctrlkit/ctrlkit/testkit"
)

// The API server tests share one kube-apiserver; every test ends with no goroutine left.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(testkit.WithSharedAPIServer(m))
}
