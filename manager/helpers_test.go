package manager

import (
	"context"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"

	"github.com/ctrlkit/ctrlkit/controller"
)

// keyRecorder is a Reconciler that records every key it sees.
type keyRecorder struct {
	mu   sync.Mutex
	seen map[controller.Key]int
}

func (r *keyRecorder) Reconcile(_ context.Context, k controller.Key) (controller.Result, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.seen == nil {
		r.seen = map[controller.Key]int{}
	}
	r.seen[k]++
	return controller.Result{}, nil
}

func (r *keyRecorder) count(k controller.Key) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.seen[k]
}

func (r *keyRecorder) keys() map[controller.Key]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.seen)
}

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
