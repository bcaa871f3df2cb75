package manager

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/klog/v2"

	"github.com/ctrlkit/ctrlkit/controller"
	"github.com/ctrlkit/ctrlkit/internal/clientgometrics"
	"github.com/ctrlkit/ctrlkit/leaderelection"
)

// RestartableRunnable is a Runnable that may be Run again after its Run
// returned. When this process wins back a Lease it lost, the Manager runs
// its Runnables that need leader election again only if each of them is
// restartable (a controller.Controller is, unless built with a prebuilt
// Options.Queue); otherwise the lost Lease is fatal, as with
// Options.ExitOnLeaseLoss, since a Runnable that cannot run twice would
// leave the new term without it.
type RestartableRunnable interface {
	Runnable
	Restartable() bool
}

var _ RestartableRunnable = (*controller.Controller[controller.Key])(nil)

func restartable(r Runnable) bool {
	rr, ok := r.(RestartableRunnable)
	return ok && rr.Restartable()
}

// campaign contends for the Lease until ctx ends. A lost Lease ends it only
// with Options.ExitOnLeaseLoss; otherwise, once the Runnables that need
// leader election stopped (the elector's Run returns only after
// onStartedLeading did), it contends again, so a leader cut off from the API
// server for a moment leads again without a restart.
func (m *Manager) campaign(ctx context.Context) error {
	defer clientgometrics.LeaderElectionEnded(m.leaseName())
	for {
		err := m.elector.Run(ctx)
		switch {
		case ctx.Err() != nil && !m.exitOnLoss:
			return nil // shutting down: a loss in the same moment is moot
		case err == nil || m.exitOnLoss || !errors.Is(err, leaderelection.ErrLeaseLost):
			return err
		}
		if once := m.notRestartable(); len(once) > 0 {
			return fmt.Errorf("%w; not contending again: Runnables %s need leader election and cannot run twice (manager.RestartableRunnable)",
				err, strings.Join(once, ", "))
		}
		clientgometrics.LeaderElectionEnded(m.leaseName())
		m.log().Info("Lost the lease: the controllers that need leader election stopped; contending for it again",
			"lease", m.leaseName(), "identity", m.elector.Identity())
	}
}

// notRestartable names the Runnables that need leader election and cannot
// be Run again.
func (m *Manager) notRestartable() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var names []string
	for _, r := range m.leaders.members {
		if !restartable(r) {
			names = append(names, fmt.Sprintf("%q", r.Name()))
		}
	}
	slices.Sort(names)
	return names
}

// onStartedLeading runs the controllers that need leader election until
// leadership ends or the Manager stops them, whichever is first, and waits
// for them. After a lost Lease it waits at most leaderStopTimeout: leader
// work still running past it would act alongside the new leader, so that is
// fatal (and it still waits, so the elector neither
// contends again nor releases the Lease meanwhile).
func (m *Manager) onStartedLeading(leading context.Context) {
	m.mu.Lock()
	if m.stopping {
		m.mu.Unlock()
		return
	}
	m.beenReady.Store(true) // a Lease refused from now on no longer fails /readyz
	ctx, cancel := context.WithCancelCause(leading)
	defer cancel(nil)
	// The elector's ctx carries a logger with the lease and identity; the
	// controllers log with the Manager's, as the ones that need no election do.
	ctx = controller.WithMetrics(klog.NewContext(ctx, m.log()), m.metrics)
	// The Manager's stop passes its cause on (a graceful shutdown drains the
	// reconciles in flight); a lost Lease cancels them plainly, at once.
	stop := context.AfterFunc(m.ctrlCtx, func() { cancel(context.Cause(m.ctrlCtx)) })
	defer stop()
	m.leaders.startLocked(ctx)
	n := len(m.leaders.members)
	m.mu.Unlock()
	m.log().Info("Started leading: starting the controllers that need leader election", "controllers", n)

	// The term lasts until leadership ends, even if its Runnables all
	// returned: one added meanwhile (Add) starts in it.
	<-ctx.Done()
	m.mu.Lock()
	stopped := m.leaders.endLocked()
	m.mu.Unlock()
	if m.ctrlCtx.Err() == nil && m.shutdownTimeout >= 0 {
		wait := m.leaderStopTimeout()
		m.log().Info("Leadership ended: stopping the controllers that need leader election", "timeout", wait)
		m.awaitLeaderWork(stopped, wait)
	}
	<-stopped
	m.log().Info("Controllers that need leader election stopped")
}

// leaderStopTimeout is how long leader work may take to stop after a lost
// Lease: the graceful shutdown timeout, but no longer than a standby may wait
// before it takes the Lease (LeaseDuration - RenewDeadline after the loss
// was noticed), so work that overstays ends the process before it can act
// next to the new leader for long.
func (m *Manager) leaderStopTimeout() time.Duration {
	cfg := m.elector.Config()
	if gap := cfg.LeaseDuration - cfg.RenewDeadline; gap > 0 && gap < m.shutdownTimeout {
		return gap
	}
	return m.shutdownTimeout
}

// awaitLeaderWork waits for stopped up to wait and reports the leader work
// still running then as a fatal error.
func (m *Manager) awaitLeaderWork(stopped <-chan struct{}, wait time.Duration) {
	timer := m.clock.NewTimer(wait)
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
		ErrShutdownTimeout, m.leaseName(), strings.Join(names, ", "), wait))
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

// leaseName is the elector's lease as client-go names it in
// leader_election_master_status: "<namespace>/<name>".
func (m *Manager) leaseName() string {
	cfg := m.elector.Config()
	return cfg.Namespace + "/" + cfg.Name
}
