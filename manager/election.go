package manager

import (
	"context"
	"sync"

	"k8s.io/klog/v2"

	"github.com/ctrlkit/ctrlkit/controller"
)

// onStartedLeading runs the controllers that need leader election until
// leadership ends or the Manager stops them, whichever is first.
func (m *Manager) onStartedLeading(leading context.Context) {
	m.mu.Lock()
	if m.stopping {
		m.mu.Unlock()
		return
	}
	ctx, cancel := context.WithCancel(leading)
	defer cancel()
	// The elector's ctx carries a logger with the lease and identity; the
	// controllers log with the Manager's, as the ones that need no election do.
	ctx = controller.WithMetrics(klog.NewContext(ctx, m.log()), m.metrics)
	stop := context.AfterFunc(m.ctrlCtx, cancel)
	defer stop()
	var wg sync.WaitGroup
	for _, r := range m.leaders {
		m.goRunLocked(ctx, r, &wg)
	}
	n := len(m.leaders)
	m.mu.Unlock()
	m.log().Info("Started leading: starting the controllers that need leader election", "controllers", n)
	wg.Wait()
	m.log().Info("Controllers that need leader election stopped")
}
