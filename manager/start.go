package manager

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"k8s.io/client-go/util/connrotation"
	"k8s.io/klog/v2"

	"github.com/ctrlkit/ctrlkit/controller"
	"github.com/ctrlkit/ctrlkit/manager/internal/serving"
)

// Start runs everything until ctx ends or something fatal happens, then shuts
// down in order and returns:
//
//  1. serve the probes and metrics; ask the API server what must hold
//     before anything else starts (a Lease namespace defaulted outside a
//     Pod exists, the ring's permissions and mode), waiting while it does
//     not answer, as the informers and the election would; start recording
//     events, start the informers;
//  2. start the controllers that do not need leader election (all of them
//     without an election), and contend for the Lease; on winning, start the
//     others;
//  3. on ctx's end or the first fatal error: stop the controllers (each
//     stops taking keys and lets its in-flight Reconciles finish their
//     writes, up to controller.Options.DrainTimeout, their context alive
//     unless the API server is in an outage; see controller.ErrShutdown),
//     wait for them up to Options.GracefulShutdownTimeout, stop the
//     informers, end the election (releasing the Lease with
//     ReleaseOnCancel, unless a controller that needs leader election is
//     still running), stop events and the HTTP servers.
//
// A lost Lease stops the Runnables that need leader election and starts
// the campaign again; everything else keeps running (see
// Options.ExitOnLeaseLoss for kube-controller-manager's exit instead).
//
// It returns nil after a cancelled ctx, or the first fatal error: a
// Runnable's Run error, a cache sync timeout (matching
// informer.ErrCacheSyncTimeout), or, with ExitOnLeaseLoss,
// leaderelection.ErrLeaseLost (wrapped) when the lease was lost — the
// caller exits, as kube-controller-manager does, instead of this package
// calling os.Exit.
// Runnables still running after the graceful shutdown timeout are
// abandoned, each logged, and the error (joined to a fatal one, if any)
// matches ErrShutdownTimeout; a *ShutdownTimeoutError names them. The
// process should exit then: they may still be acting. A Manager starts
// once.
func (m *Manager) Start(ctx context.Context) error {
	m.mu.Lock()
	if m.started {
		m.mu.Unlock()
		return fmt.Errorf("manager: %w", ErrAlreadyStarted)
	}
	m.started = true
	m.mu.Unlock()

	logger := m.optLogger
	if logger.GetSink() == nil {
		logger = klog.FromContext(ctx)
	}
	m.logger.Store(&logger)
	ctx = controller.WithMetrics(klog.NewContext(ctx, logger), m.metrics)
	// The probes answer while preflight waits for the API server: /healthz ok, /readyz not.
	servers, err := m.listen(logger)
	if err != nil {
		return err
	}
	if err := m.preflight(ctx, logger); err != nil {
		servers.Shutdown(logger)
		if ctx.Err() != nil {
			return nil // stopped before it started
		}
		return err
	}
	r := &run{m: m, logger: logger, servers: servers}
	if err := r.start(ctx); err != nil {
		servers.Shutdown(logger)
		return fmt.Errorf("manager: %w", err)
	}
	return r.stop(r.wait(ctx))
}

// run is one Start of a Manager from preflight on: what it started, which
// stop takes down in order.
type run struct {
	m       *Manager
	logger  klog.Logger
	servers *serving.Servers

	probe           sync.WaitGroup // the API server probe
	stopProbe       context.CancelFunc
	stopControllers context.CancelCauseFunc
	fatal           chan error    // the Runnables' fatal errors
	syncDone        chan struct{} // closed once waitForCaches returned
	endElection     context.CancelFunc
	electorDone     chan error // the campaign's end; nil without an election
}

// start starts the events, the informers, the probe, the group of
// Runnables every replica runs and the election: steps 1 and 2 of Start. It
// fails only before starting anything.
func (r *run) start(ctx context.Context) error {
	m, logger := r.m, r.logger
	// Each stage is stopped explicitly, in order (stop), so none of them
	// inherits ctx's cancellation.
	base := context.WithoutCancel(ctx)

	var ring []Runnable
	if m.shard != nil {
		group, err := m.shardGroup(m.enabled)
		if err != nil {
			return err
		}
		ring = append(ring, group)
		if m.shard.assigner != nil {
			ring = append(ring, m.shard.assigner)
		}
	}
	m.events.Start(logger, m.identity())
	m.factory.Start(base)
	var probeCtx context.Context
	probeCtx, r.stopProbe = context.WithCancel(base)
	if m.probeEvery > 0 {
		r.probe.Go(func() { m.probeAPIServer(probeCtx, m.probeEvery) })
	}

	var ctrlCtx context.Context
	ctrlCtx, r.stopControllers = context.WithCancelCause(base)
	m.mu.Lock()
	for _, rn := range ring {
		m.groupOf(rn).addLocked(rn)
	}
	m.always.pruneLocked()
	m.leaders.pruneLocked()
	always, leaders := len(m.always.members), len(m.leaders.members)
	// One error per Runnable and one more; Runnables added later report
	// through reportFatal, which logs what does not fit.
	r.fatal = make(chan error, always+leaders+1)
	m.ctrlCtx, m.fatal = ctrlCtx, r.fatal
	r.syncDone = make(chan struct{})
	go func() {
		defer close(r.syncDone)
		m.waitForCaches(ctrlCtx)
	}()
	m.always.startLocked(ctrlCtx)
	m.mu.Unlock()

	var electionCtx context.Context
	electionCtx, r.endElection = context.WithCancel(base)
	if m.elector != nil {
		logger.Info("Contending for leadership", "identity", m.elector.Identity(),
			"controllers", leaders, "controllersOnEveryReplica", always)
		r.electorDone = make(chan error, 1)
		go func() { r.electorDone <- m.campaign(electionCtx) }()
	}
	m.running.Store(true)
	logger.Info("Manager started", "controllers", always+leaders)
	return nil
}

// wait returns when ctx ends (nil) or at the first fatal error.
func (r *run) wait(ctx context.Context) error {
	var first error
	select {
	case <-ctx.Done():
		r.logger.Info("Shutting down")
	case first = <-r.fatal:
	case first = <-r.electorDone:
		r.electorDone = nil
		if first == nil { // cannot happen while the election's context lives; be safe
			first = errors.New("manager: leader election ended unexpectedly")
		}
	}
	if first != nil {
		r.logger.Error(first, "Shutting down after a fatal error")
	}
	return first
}

// stop shuts down in order (step 3 of Start) and returns first, the error
// that ended the run, with what shutting down added.
func (r *run) stop(first error) error {
	m, logger := r.m, r.logger
	defer r.probe.Wait()
	m.running.Store(false)

	// 1-3: stop intake, drain, stop controllers (leaders included).
	m.mu.Lock()
	m.stopping = true
	m.always.endLocked()
	m.mu.Unlock()
	r.stopControllers(m.shutdownCause())
	r.stopProbe()
	logger.Info("Waiting for the controllers to finish their in-flight reconciles", "timeout", m.shutdownTimeout)
	stuck := m.waitForRunnables(logger)
	<-r.syncDone
	// 4: stop informers.
	m.factory.Shutdown()
	m.cachesSynced.Store(false)
	m.wasReady.Store(false)
	// 5: release the lease. The elector stops renewing it either way. With
	// leader work abandoned, its OnStartedLeading (onStartedLeading) has not
	// returned: leaderelection's release waits for it up to RenewDeadline,
	// then leaves the Lease to expire, and Run returns only after it — so
	// it is not waited for here.
	wasLeading := m.elector != nil && m.elector.IsLeader()
	r.endElection()
	if r.electorDone != nil {
		if m.leaderWorkAbandoned(stuck) {
			logger.Info("Not releasing the lease while abandoned controllers that need leader election run; it expires after its lease duration",
				"lease", m.leaseName(), "leaseDuration", m.elector.Config().LeaseDuration)
		} else {
			if wasLeading && m.elector.Config().ReleaseOnCancel {
				logger.Info("Releasing the lease", "lease", m.leaseName(), "timeout", m.elector.ReleaseTimeout())
			}
			if err := <-r.electorDone; err != nil && first == nil {
				first = err
			}
		}
	}
	m.events.Stop()
	r.servers.Shutdown(logger)
	// The connections of clients the Manager built are its own: their goroutines end here (the
	// clients dial again if used after).
	for _, d := range []*connrotation.Dialer{m.conns, m.probeConns} {
		if d != nil {
			d.CloseAll()
		}
	}
	// Later fatal errors are logged; the first one is returned.
	for len(r.fatal) > 0 {
		if err := <-r.fatal; err != first {
			logger.Error(err, "Another error during shutdown")
		}
	}
	logger.Info("Manager stopped")
	if err := m.shutdownTimeoutError(stuck); err != nil {
		if first == nil {
			return err
		}
		return errors.Join(first, err)
	}
	return first
}

// waitForCaches marks the Manager's caches synced, or reports a timeout.
func (m *Manager) waitForCaches(ctx context.Context) {
	if m.syncTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, m.syncTimeout)
		defer cancel()
	}
	if err := m.factory.WaitForCacheSync(ctx); err != nil {
		if m.syncTimeout > 0 && errors.Is(ctx.Err(), context.DeadlineExceeded) {
			m.reportFatal(fmt.Errorf("manager: %w", err))
		}
		return
	}
	m.cachesSynced.Store(true)
	m.log().V(2).Info("Caches synced")
}
