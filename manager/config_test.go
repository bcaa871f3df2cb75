//go:build unix

package manager

import (
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// SIGTERM, what the kubelet sends, cancels the context Start runs under.
func TestSetupSignalHandlerCancelsOnSIGTERM(t *testing.T) {
	ctx := SetupSignalHandler()
	require.NoError(t, ctx.Err())
	require.NoError(t, syscall.Kill(syscall.Getpid(), syscall.SIGTERM))
	select {
	case <-ctx.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("SIGTERM did not cancel the context")
	}
}
