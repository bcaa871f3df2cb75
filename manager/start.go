package manager

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"k8s.io/client-go/util/connrotation"
	"k8s.io/klog/v2"

	"github.com/ctrlkit/ctrlkit/controller"
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
		return fmt.Errorf("manager: %w", controller.ErrAlreadyStarted)
	}
	m.started = true
	rs := slices.Clone(m.runnables)
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
	// Each stage below is stopped explicitly, in order, so none of them
	// inherits ctx's cancellation.
	base := context.WithoutCancel(ctx)

	enabled := func(r Runnable) bool {
		if f := featureOf(r); f != "" && !m.gate.Enabled(f) {
			logger.Info("Not starting controller: its feature gate is disabled", "controller", r.Name(), "feature", f)
			return false
		}
		return true
	}
	if m.shard != nil {
		group, err := m.shardGroup(enabled)
		if err != nil {
			servers.Shutdown(logger)
			return fmt.Errorf("manager: %w", err)
		}
		rs = append(rs, group)
		if m.shard.assigner != nil {
			rs = append(rs, m.shard.assigner)
		}
	}
	m.events.Start(logger, m.identity())
	m.factory.Start(base)
	probeCtx, stopProbe := context.WithCancel(base)
	var probe sync.WaitGroup
	defer probe.Wait()
	defer stopProbe()
	if m.probeEvery > 0 {
		probe.Go(func() { m.probeAPIServer(probeCtx, m.probeEvery) })
	}

	var always, leaders, active []Runnable
	for _, r := range rs {
		if !enabled(r) {
			continue
		}
		active = append(active, r)
		if m.elector != nil && needsLeader(r) {
			leaders = append(leaders, r)
		} else {
			always = append(always, r)
		}
	}
	ctrlCtx, stopControllers := context.WithCancelCause(base)
	defer stopControllers(nil)
	// One error per Runnable and one more; Runnables added later report
	// through reportFatal, which logs what does not fit.
	fatal := make(chan error, len(rs)+1)
	m.mu.Lock()
	m.ctrlCtx, m.leaders, m.fatal = ctrlCtx, leaders, fatal
	late := m.late
	m.late = nil
	m.mu.Unlock()

	syncDone := make(chan struct{})
	go func() {
		defer close(syncDone)
		m.waitForCaches(ctrlCtx)
	}()

	m.mu.Lock()
	for _, r := range always {
		m.goRunLocked(ctrlCtx, r, nil)
	}
	for _, r := range late { // added while Start was getting here
		m.startLateLocked(r)
	}
	m.mu.Unlock()

	var electorDone chan error
	electionCtx, endElection := context.WithCancel(base)
	defer endElection()
	if m.elector != nil {
		logger.Info("Contending for leadership", "identity", m.elector.Identity(),
			"controllers", len(leaders), "controllersOnEveryReplica", len(always))
		electorDone = make(chan error, 1)
		go func() { electorDone <- m.campaign(electionCtx) }()
	}
	m.running.Store(true)
	logger.Info("Manager started", "controllers", len(active))

	var first error
	select {
	case <-ctx.Done():
		logger.Info("Shutting down")
	case first = <-fatal:
	case first = <-electorDone:
		electorDone = nil
		if first == nil { // cannot happen while electionCtx lives; be safe
			first = errors.New("manager: leader election ended unexpectedly")
		}
	}
	if first != nil {
		logger.Error(first, "Shutting down after a fatal error")
	}
	m.running.Store(false)

	// 1-3: stop intake, drain, stop controllers (leaders included).
	m.mu.Lock()
	m.stopping = true
	m.mu.Unlock()
	stopControllers(m.shutdownCause())
	stopProbe()
	logger.Info("Waiting for the controllers to finish their in-flight reconciles", "timeout", m.shutdownTimeout)
	stuck := m.waitForRunnables(logger)
	<-syncDone
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
	endElection()
	if electorDone != nil {
		if m.leaderWorkAbandoned(stuck) {
			logger.Info("Not releasing the lease while abandoned controllers that need leader election run; it expires after its lease duration",
				"lease", m.leaseName(), "leaseDuration", m.elector.Config().LeaseDuration)
		} else {
			if wasLeading && m.elector.Config().ReleaseOnCancel {
				logger.Info("Releasing the lease", "lease", m.leaseName(), "timeout", m.elector.ReleaseTimeout())
			}
			if err := <-electorDone; err != nil && first == nil {
				first = err
			}
		}
	}
	m.events.Stop()
	servers.Shutdown(logger)
	// The connections of clients the Manager built are its own: their goroutines end here (the
	// clients dial again if used after).
	for _, d := range []*connrotation.Dialer{m.conns, m.probeConns} {
		if d != nil {
			d.CloseAll()
		}
	}
	// Later fatal errors are logged; the first one is returned.
	for len(fatal) > 0 {
		if err := <-fatal; err != first {
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
