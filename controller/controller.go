package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	kworkqueue "k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/ctrlkit/ctrlkit/featuregate"
	"github.com/ctrlkit/ctrlkit/provenance"
)

// Controller runs a Reconciler over the keys in its queue with a fixed number
// of workers. Build it with New, connect informers with Watch, and start it
// with Run (or add it to a manager.Manager). The queue is built and the
// watches are registered when Run starts, as controller-runtime does at
// Start; keys enqueued before that are kept and handed to the queue then.
type Controller[K comparable] struct {
	name        string
	r           Reconciler[K]
	workers     int
	maxRetries  int            // Options.Retry's backoff retries; -1: forever
	slowRetry   time.Duration  // then a try every slowRetry; 0: give up
	bypass      bool           // Options.EventsBypassBackoff
	wake        time.Duration  // Options.BackoffEventWait, resolved: 0 when events wait for the retry
	jitter      float64        // Options.RequeueJitter
	minInterval time.Duration  // Options.MinInterval
	debounce    time.Duration  // Options.Debounce
	debounceMax time.Duration  // Options.DebounceMaxWait, defaulted
	flows       func(K) string // Options.Flows
	flowWeights func(string) int
	aging       time.Duration  // Options.Aging
	limiters    []*Limiter     // Options.Limiters
	random      func() float64 // [0, 1): rand.Float64, a fixed one in tests
	timeout     time.Duration
	drain       time.Duration // Options.DrainTimeout, defaulted
	syncWait    time.Duration
	needLeader  bool
	feature     featuregate.Feature
	rePanic     bool
	logger      klog.Logger
	clock       clock.WithTicker
	limiter     kworkqueue.TypedRateLimiter[K]
	metrics     *Metrics                                 // Options.Metrics
	prebuilt    kworkqueue.TypedRateLimitingInterface[K] // Options.Queue
	provenance  bool                                     // Options.Provenance != nil
	provLevel   int                                      // verbosity of the "Reconciling" line; < 0: none
	tracing     *tracing[K]                              // nil without Options.TracerProvider
	fenceOpts   *Fences                                  // Options.Fences
	fenceOn     []fenceDecl                              // FenceOn, and each Watch's informer
	fences      atomic.Pointer[fenceTable[K]]            // set by Run when fenceOpts != nil
	admission   Admission[K]                             // SetAdmission; set before Run
	freshness   Freshness                                // Options.Freshness
	freshOn     []versioner                              // FenceOn's informers, judged by Freshness
	lagging     atomic.Pointer[string]                   // what the gate waits for (Stats.Lagging)
	brk         atomic.Pointer[breaker[K]]               // the running Run's, with Freshness.MaxLag
	deb         atomic.Pointer[debouncer[K]]             // the running Run's, with Options.Debounce

	// q is the running queue: nil before Run, then set once under mu. The
	// hot path (Enqueue from informer handlers) reads it without the lock.
	q atomic.Pointer[liveQueue[K]]

	dynamic dynamicWatches[K] // WatchUntil's (dynamic.go)

	mu      sync.Mutex
	watches []watched[K] // one per informer (sources.go)
	waits   []source
	checks  []func() error  // wirings judged once the caches synced (owners.go)
	sources []source        // registered watches and waits, set by Run
	pending []pendingKey[K] // enqueued before Run
	ran     bool            // Run has begun: Watch is too late
	// registered is set once Run registered the watches: HasSynced is false
	// before, whatever sources says.
	registered bool
	stopped    bool // a Run returned and no other began: Enqueue is ignored

	running  atomic.Bool // a Run is in progress
	inFlight atomic.Int64
	cm       *controllerMetrics // set by Run before the workers start

	// retries holds the keys whose last Reconcile failed (retry.go).
	retries retrySet[K]
}

// pendingKey is a key enqueued before Run, with the time it is due.
type pendingKey[K comparable] struct {
	key K
	at  time.Time // zero: at once
	t   provenance.Trigger
}

// Name returns the controller's name.
func (c *Controller[K]) Name() string { return c.name }

// NeedLeaderElection reports whether the controller runs only on the leader
// (Options.NeedLeaderElection, default true). It makes a Controller a
// manager.LeaderElectionRunnable.
func (c *Controller[K]) NeedLeaderElection() bool { return c.needLeader }

// Restartable reports whether Run may be called again after it returned:
// true unless the controller was built with a prebuilt Options.Queue, which
// its first Run shuts down. It makes a Controller a
// manager.RestartableRunnable, which a Manager runs again when it wins back
// a lost Lease.
func (c *Controller[K]) Restartable() bool { return c.prebuilt == nil }

// Feature returns the feature gate the controller is behind ("" for none).
// It makes a Controller a manager.GatedRunnable.
func (c *Controller[K]) Feature() featuregate.Feature { return c.feature }

// Enqueue adds key to the queue. A key already waiting is not added twice;
// a key being reconciled now is reconciled again after the current call.
// Before Run the key is kept and queued when Run starts; after Run returned,
// Enqueue does nothing. With provenance, the key's reasons record a manual
// trigger.
func (c *Controller[K]) Enqueue(key K) { c.EnqueueAfter(key, 0) }

// EnqueueAfter adds key after d (at once when d <= 0). Before Run the key is
// kept and handed to the queue when Run starts, still due d after this call.
func (c *Controller[K]) EnqueueAfter(key K, d time.Duration) {
	c.enqueue(key, manualTrigger(d))
}

func (c *Controller[K]) enqueue(key K, t provenance.Trigger) {
	if q := c.q.Load(); q != nil {
		addTrigger[K](q, key, t)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	// Run may have published the queue since the lock-free look.
	if q := c.q.Load(); q != nil {
		addTrigger[K](q, key, t)
		return
	}
	if c.stopped {
		return
	}
	p := pendingKey[K]{key: key, t: t}
	if t.After > 0 {
		p.at = c.clock.Now().Add(t.After)
	}
	c.pending = append(c.pending, p)
}

// Stats is a snapshot of a controller's load, for test kits and probes that
// wait for a settled world instead of sleeping (testkit.WaitForQuiet).
type Stats struct {
	// Queued is how many keys are ready in the queue: not counting keys being
	// reconciled or waiting out a delay. Before Run, the keys enqueued so far
	// (delayed ones included).
	Queued int
	// InFlight is how many Reconcile calls are running now.
	InFlight int
	// Retrying is how many keys failed their last Reconcile and wait out a
	// backoff before their next try. A key leaves the count when a Reconcile
	// of it succeeds, fails terminally or runs out of retries (and then
	// counts in SlowRetrying, unless Options.Retry gives up).
	Retrying int
	// SlowRetrying is how many keys failed after their last backoff retry
	// and are tried again at the Every interval of Options.Retry until they
	// succeed. Like keys waiting out a
	// RequeueAfter, they are not work to wait for (testkit.WaitForQuiet
	// does not): nothing is due for them before the interval. Both retry
	// counts are 0 once Run returned: nothing is retried any more.
	SlowRetrying int
	// Fenced is how many keys were due but are held back until the informer
	// shows their last Reconcile's writes (Options.Fences).
	Fenced int
	// Settling is how many keys had watch events since their last Reconcile
	// and wait for them to settle (Options.Debounce): work that is due once
	// the events stop, or at DebounceMaxWait. Like Retrying it is work to
	// wait for (testkit.WaitForQuiet does), though Idle leaves it out; 0 once
	// Run returned.
	Settling int
	// Stale is how many keys are held because a cache the controller reads lags behind the API
	// server beyond Options.Freshness.MaxLag; they are queued again once it caught up.
	Stale int
	// Lagging says which informers lag and by how much, while Options.Freshness holds work
	// (the gate before the workers start, or MaxLag); "" otherwise.
	Lagging string
}

// Idle reports whether nothing is ready, nothing is running and no key is
// held back by a write fence. Keys waiting out a RequeueAfter or a backoff do
// not count: see Retrying for the latter.
func (s Stats) Idle() bool { return s.Queued == 0 && s.InFlight == 0 && s.Fenced == 0 }

// Stats returns a snapshot of the controller's load. A key handed out by the
// queue is counted in flight a few instructions after it leaves the queue,
// so poll until Idle holds for a while (as testkit.WaitForQuiet does)
// rather than trusting one reading.
func (c *Controller[K]) Stats() Stats {
	// Read in-flight first: a worker finishing marks the key Done (which may
	// put it back in the queue) before it leaves the in-flight count.
	s := Stats{InFlight: int(c.inFlight.Load())}
	if q := c.q.Load(); q != nil {
		s.Queued = q.len()
	} else {
		c.mu.Lock()
		s.Queued = len(c.pending)
		c.mu.Unlock()
	}
	s.Retrying, s.SlowRetrying = c.retries.counts()
	if ft := c.fences.Load(); ft != nil {
		s.Fenced = ft.heldKeys()
	}
	if d := c.deb.Load(); d != nil {
		s.Settling = d.settling()
	}
	if b := c.brk.Load(); b != nil {
		s.Stale = b.heldKeys()
		s.Lagging = b.describe()
	}
	if l := c.lagging.Load(); l != nil {
		s.Lagging = *l
	}
	return s
}

// Run builds the queue, registers the watches, waits for every watched
// informer to sync, starts the workers and blocks until ctx ends; then it
// stops taking new keys, lets in-flight Reconciles finish (they see ctx
// cancelled), removes its event handlers and returns nil. It returns an
// error matching ErrCacheSyncTimeout (an *informer.CacheSyncError naming the
// informers) when the caches did not sync within CacheSyncTimeout, and
// ErrAlreadyStarted while another Run of the controller is in progress.
//
// Run may be called again once it returned, as a manager.Manager does when
// this process wins back a Lease it lost: each Run is a fresh term with a
// new queue, whose watches replay every cached object, so keys enqueued
// between two Runs are not kept (those enqueued before the first Run are).
// Keys start their retries afresh, and write fences the cache does not
// show yet still hold their keys.
// A controller built with Options.Queue runs once: that queue is shut down
// when Run returns.
//
// Metrics go to Options.Metrics, else to the Metrics in ctx (WithMetrics; a
// manager.Manager puts its own there), else nowhere.
func (c *Controller[K]) Run(ctx context.Context) error {
	if !c.running.CompareAndSwap(false, true) {
		return fmt.Errorf("controller %q: %w", c.name, ErrAlreadyStarted)
	}
	defer c.running.Store(false)
	c.mu.Lock()
	again := c.ran
	if again && c.prebuilt != nil {
		c.mu.Unlock()
		return fmt.Errorf("controller %q: %w: its Options.Queue was shut down when the last Run returned", c.name, ErrAlreadyStarted)
	}
	c.stopped = false // keys enqueued from here on wait for this Run's queue
	c.mu.Unlock()
	logger := c.logger
	if logger.GetSink() == nil {
		logger = klog.FromContext(ctx)
	}
	logger = logger.WithValues("controller", c.name)
	ctx = klog.NewContext(ctx, logger)

	m := c.metrics
	if m == nil {
		m = MetricsFrom(ctx)
	}
	q := c.start(m)
	defer c.stop()
	var bg sync.WaitGroup // the fence sweeper
	ft := c.startFences(logger, q)
	if ft != nil {
		defer ft.unregister()
		sweepCtx, stopSweep := context.WithCancel(ctx)
		defer bg.Wait()
		defer stopSweep()
		bg.Go(func() { ft.sweep(sweepCtx, c.clock) })
	}

	var deb *debouncer[K]
	watched := q // what the watches feed
	if c.debounce > 0 {
		deb = newDebouncer[K](c.clock, c.debounce, c.debounceMax)
		watched = debounceQueue[K]{queue: q, d: deb}
		c.deb.Store(deb)
	}
	regs, err := c.register(watched, ft)
	defer c.unregister(logger, regs)
	c.dynamic.start(watched, c.provenance, logger)
	defer c.dynamic.stop()
	if err != nil {
		q.shutDown()
		return err
	}
	if err := c.waitForSync(ctx); err != nil {
		q.shutDown()
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	if err := c.checkWirings(); err != nil {
		q.shutDown()
		return err
	}
	if c.freshness.Gate {
		if err := c.gate(ctx, logger); err != nil {
			q.shutDown()
			return nil // only ctx ends the gate
		}
	}
	var brk *breaker[K]
	if c.freshness.MaxLag > 0 {
		brk = newBreaker(c, q, logger)
		c.brk.Store(brk)
		defer c.brk.Store(nil)
		watchCtx, stopWatch := context.WithCancel(ctx)
		defer bg.Wait()
		defer stopWatch()
		bg.Go(func() { brk.watch(watchCtx) })
	}

	var passes sync.WaitGroup // WithResyncPeriod's; they end with ctx, as Run does from here
	defer passes.Wait()
	for _, r := range regs {
		for _, rs := range r.resyncs {
			passes.Go(func() { rs.run(ctx, c.clock, logger) })
		}
	}
	logger.V(2).Info("Starting workers", "workers", c.workers)
	steps := c.pipeline(ft, deb, brk)
	// The Reconciles' context is Run's, except that a graceful shutdown
	// leaves it alive for the drain (Options.DrainTimeout).
	rctx, stopReconciles := context.WithCancelCause(context.WithoutCancel(ctx))
	defer stopReconciles(nil)
	var wg sync.WaitGroup
	for range c.workers {
		wg.Go(func() { c.worker(ctx, rctx, q, steps, logger) })
	}
	<-ctx.Done()
	drained := make(chan struct{})
	var drain sync.WaitGroup // the drain's timer
	if cause := context.Cause(ctx); errors.Is(cause, ErrShutdown) && c.drain > 0 {
		logger.V(2).Info("Shutting down: letting the reconciles in flight finish", "inFlight", c.inFlight.Load(), "timeout", c.drain)
		drain.Go(func() {
			t := c.clock.NewTimer(c.drain)
			defer t.Stop()
			select {
			case <-t.C():
				logger.Info("Cancelling the reconciles still in flight: the drain timeout expired", "inFlight", c.inFlight.Load(), "timeout", c.drain)
				stopReconciles(fmt.Errorf("%w: the drain timeout (%v) expired", ErrShutdown, c.drain))
			case <-drained:
			}
		})
	} else {
		logger.V(2).Info("Shutting down: cancelling the reconciles in flight", "inFlight", c.inFlight.Load(), "cause", cause)
		stopReconciles(cause)
	}
	q.shutDownWithDrain()
	// A client-go queue given as Options.Queue stops its delay goroutine only
	// on ShutDown, not on ShutDownWithDrain; nothing is in flight any more,
	// so this is only that cleanup.
	q.shutDown()
	wg.Wait()
	close(drained)
	drain.Wait()
	logger.V(2).Info("Stopped")
	return nil
}

// liveQueue publishes the running queue to Enqueue (Controller.q).
type liveQueue[K comparable] struct{ queue[K] }

// start builds the queue, hands it the keys enqueued so far and publishes it.
func (c *Controller[K]) start(m *Metrics) queue[K] {
	var kq kworkqueue.TypedRateLimitingInterface[K] = c.prebuilt
	if kq == nil {
		kq = c.newDefaultQueue(m)
	}
	q := adaptQueue(kq, c.provenance)
	c.cm = m.forController(c.name, c.workers)
	c.retries.reset(c.cm)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ran, c.stopped = true, false
	for _, p := range c.pending {
		p.t.After = 0
		if !p.at.IsZero() {
			// Still due d after the Enqueue; at once if that has passed.
			p.t.After = max(p.at.Sub(c.clock.Now()), 0)
		}
		addTrigger(q, p.key, p.t)
	}
	c.pending = nil
	c.q.Store(&liveQueue[K]{q})
	return q
}

// stop makes later Enqueues no-ops until the next Run; the queue is shut
// down by then. HasSynced is false again: the handlers are gone.
func (c *Controller[K]) stop() {
	if c.prebuilt == nil {
		// The next Run's queue shares the limiter: its keys start their
		// retries afresh, as in a restarted process.
		for k := range c.retries.list() {
			c.limiter.Forget(k)
		}
	}
	c.retries.reset(c.cm) // nothing is retried any more
	c.deb.Store(nil)      // nor reconciled after its events settle
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stopped, c.registered = true, false
	c.sources = nil
	c.q.Store(nil)
	// The fence table is kept: a write of this Run the cache does not show
	// yet still holds its key in the next (see fenceTable.nextTerm).
}

// register adds the event handlers of every Watch, feeding q. It returns the
// registrations made so far even on error, so they can be removed.
