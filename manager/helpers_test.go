package manager

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"

	"github.com/ctrlkit/ctrlkit/controller"
	"github.com/ctrlkit/ctrlkit/testkit"
)

// keyRecorder records the keys reconciled.
type keyRecorder = testkit.Recorder[controller.Key]

// waitIdle waits until c has nothing queued and nothing running.
func waitIdle[K comparable](t *testing.T, c *controller.Controller[K]) {
	t.Helper()
	require.Eventually(t, func() bool { return c.Stats().Idle() }, 10*time.Second, time.Millisecond)
}

func testLogger(t *testing.T) (context.Context, ktesting.Underlier) {
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true), ktesting.Verbosity(4)))
	return klog.NewContext(context.Background(), logger), logger.GetSink().(ktesting.Underlier)
}

func logged(u ktesting.Underlier) []ktesting.LogEntry { return u.GetBuffer().Data() }
