package manager

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"k8s.io/klog/v2"

	"github.com/ctrlkit/ctrlkit/controller"
	"github.com/ctrlkit/ctrlkit/leaderelection"
)

// campaign contends for the Lease until ctx ends. A lost Lease ends it only
// with Options.ExitOnLeaseLoss; otherwise, once the Runnables that need
// leader election stopped (the elector's Run returns only after
// onStartedLeading did), it contends again, so a leader cut off from the API
// server for a moment leads again without a restart.
func (m *Manager) campaign(ctx context.Context) error {
	defer leaderElectionEnded(m.leaseName())
	for {
		err := m.elector.Run(ctx)
		if err == nil || ctx.Err() != nil || m.exitOnLoss || !errors.Is(err, leaderelection.ErrLeaseLost) {
			return err
		}
		leaderElectionEnded(m.leaseName())
		m.log().Info("Lost the lease: the controllers that need leader election stopped; contending for it again",
			"lease", m.leaseName(), "identity", m.elector.Identity())
	}
}

// onStartedLeading runs the controllers that need leader election until
// leadership ends or the Manager stops them, whichever is first, and waits
// for them. After a lost Lease it waits at most the graceful shutdown
// timeout: leader work still running past it would act alongside the new
// leader, so that is fatal (and it still waits, so the elector neither
// contends again nor releases the Lease meanwhile).
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

	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		wg.Wait()
	}()
	select {
	case <-stopped:
	case <-ctx.Done():
		if m.ctrlCtx.Err() == nil && m.shutdownTimeout >= 0 {
			m.log().Info("Leadership ended: stopping the controllers that need leader election", "timeout", m.shutdownTimeout)
			m.awaitLeaderWork(stopped)
		}
		<-stopped
	}
	m.log().Info("Controllers that need leader election stopped")
}

// awaitLeaderWork waits for stopped up to the graceful shutdown timeout and
// reports the leader work still running then as a fatal error.
func (m *Manager) awaitLeaderWork(stopped <-chan struct{}) {
	timer := m.clock.NewTimer(m.shutdownTimeout)
	defer timer.Stop()
	select {
	case <-stopped:
		return
	case <-timer.C():
	}
	m.mu.Lock()
	var names []string
	for r := range m.live {
		if needsLeader(*r) {
			names = append(names, fmt.Sprintf("%q", (*r).Name()))
		}
	}
	m.mu.Unlock()
	slices.Sort(names)
	m.reportFatal(fmt.Errorf("manager: %w: lease %s lost, and controllers %s that need leader election did not stop within %v",
		ErrShutdownTimeout, m.leaseName(), strings.Join(names, ", "), m.shutdownTimeout))
}

// reportFatal hands err to Start, which shuts down on the first one. The
// channel holds one error per Runnable and one more; past that Start is
// shutting down already, so a further error is only logged.
func (m *Manager) reportFatal(err error) {
	select {
	case m.fatal <- err:
	default:
		m.log().Error(err, "Another fatal error during shutdown")
	}
}
