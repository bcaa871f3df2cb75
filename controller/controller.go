package controller

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"
	"k8s.io/apimachinery/pkg/util/uuid"

	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/ctrlkit/ctrlkit/featuregate"
	"github.com/ctrlkit/ctrlkit/informer"
	ckqueue "github.com/ctrlkit/ctrlkit/workqueue"
)

// DefaultMaxRetries is how many times a failing key is retried with
// exponential backoff before the loop slows down: with the default limiter
// the 15th retry comes about 164 s after the first failure (kube-controller-
// manager's endpoint controllers stop there too). After that the key is tried
// again every Options.SlowRetryInterval (DefaultSlowRetryInterval, 5 minutes)
// until it succeeds, so a fault fixed later (a permission restored) is
// repaired without an event for the key; Options.Exhausted = GiveUp drops it
// instead.
const DefaultMaxRetries = 15

// RetryForever, as Options.MaxRetries, backs a failing key off through the
// rate limiter until it succeeds (up to the limiter's cap, 1000 s by
// default), as controller-runtime and kube-controller-manager's ReplicaSet
// controller do. The default instead switches to Options.SlowRetryInterval
// after MaxRetries, which waits less than the cap and shows the keys that
// keep failing (Stats.SlowRetrying, ctrlkit_controller_slow_retry_keys).
const RetryForever = -1

// Options configure a Controller. The zero value is valid: one worker, 15
// retries with backoff and then one every 5 minutes until the key succeeds,
// client-go's default controller rate limiter, a ctrlkit queue,
// the logger from Run's context, no metrics unless a Manager supplies them,
// no reconcile deadline, leader election required, no feature gate.
type Options[K comparable] struct {
	// Workers is how many keys are reconciled in parallel (never the same
	// key twice at once). 0 means 1; negative is an error.
	Workers int

	// MaxRetries is how many times a key whose Reconcile failed is added back
	// with backoff (through RateLimiter) before its retries are exhausted and
	// Exhausted decides: by default the key then comes back every
	// SlowRetryInterval until it succeeds. 0 means DefaultMaxRetries (15):
	// the first call plus 15 retries is 16 calls before the slow retries.
	// RetryForever (controller-runtime's and kube-controller-manager's
	// ReplicaSet controller's policy) backs off up to the limiter's cap
	// forever; any other negative value is an error. To never retry, set
	// NoRetries (or return Terminal errors, which are never retried whatever
	// MaxRetries says).
	// The count is the queue's NumRequeues, that is the rate limiter's
	// per-item count: a limiter without per-item state (a bare bucket)
	// reports 0 and retries forever.
	MaxRetries int

	// Exhausted is what happens to a key that failed after its MaxRetries
	// retries. The zero value, SlowRetry, tries it again every
	// SlowRetryInterval until a Reconcile succeeds (which forgets its
	// failures) or fails terminally; an event for the key meanwhile
	// reconciles it at once. GiveUp logs the error and forgets the key until
	// its next event. GiveUp with RetryForever or NoRetries is an error:
	// RetryForever never exhausts a key's retries, NoRetries always gives up.
	Exhausted ExhaustedPolicy

	// SlowRetryInterval is how long a key whose retries are exhausted waits
	// before each further try (Exhausted SlowRetry). 0 means
	// DefaultSlowRetryInterval (5 minutes, under the 1000 s cap of the
	// default limiter); negative is an error, and so is setting it with
	// GiveUp, RetryForever or NoRetries. The wait is a plain delay: the rate
	// limiter neither paces nor counts it.
	SlowRetryInterval time.Duration

	// NoRetries makes a failed key be logged and forgotten at once (the
	// effective MaxRetries is 0, with Exhausted GiveUp). It cannot be
	// combined with MaxRetries or SlowRetryInterval.
	NoRetries bool

	// RateLimiter paces retries and Result.Requeue. nil means client-go's
	// DefaultTypedControllerRateLimiter (per-item exponential 5 ms..1000 s,
	// overall 10 qps / burst 100). Ignored (an error) when Queue is set.
	RateLimiter workqueue.TypedRateLimiter[K]

	// Queue is a prebuilt queue to use instead of building one at Run; the
	// controller shuts it down when Run returns (if Run is never called, that
	// is the caller's job). RateLimiter, Clock and queue metrics are then the
	// queue's own business. A queue that also has
	// AddWithOpts(ctrlkit workqueue.AddOpts, ...K) gets Result.Priority.
	Queue workqueue.TypedRateLimitingInterface[K]

	// Logger overrides the logger taken from Run's context. Either way every
	// Reconcile gets a logger in its ctx (klog.FromContext) with the values
	// controller=<name> and key=<key>.
	Logger klog.Logger

	// Metrics receives this controller's reconcile and queue metrics. nil
	// means the Metrics in Run's context (WithMetrics; a manager.Manager
	// puts its own there), else none.
	Metrics *Metrics

	// ReconcileTimeout, when > 0, puts a deadline of this long (wall time,
	// not Clock) on each Reconcile's context.
	ReconcileTimeout time.Duration

	// CacheSyncTimeout bounds how long Run waits for the watched informers
	// to sync before it fails with a *CacheSyncError. 0 means wait until the
	// context ends.
	CacheSyncTimeout time.Duration

	// NeedLeaderElection says whether a Manager with leader election runs
	// this controller only while it leads. nil means true, as for every
	// kube-controller-manager controller; set new(false) for controllers
	// that are safe on every replica (for example ones that only warm a
	// cache or serve reads).
	NeedLeaderElection *bool

	// Feature, when set, is the feature gate a manager.Manager consults: the
	// controller is started only when manager.Options.FeatureGate says the
	// feature is enabled, and the log says so when it is not.
	Feature featuregate.Feature

	// RePanic makes a panic in Reconcile propagate (after the key is marked
	// Done and the panic counted) instead of being recovered and handled as
	// an error. For tests that want a crash to fail loudly.
	RePanic bool

	// Clock drives the queue's delays and the reconcile duration metric.
	// nil means the real clock; tests use k8s.io/utils/clock/testing.
	Clock clock.WithTicker

	// Provenance, when non-nil, makes every queued key carry why it is
	// queued (see Provenance and ReasonsFrom). nil means no record, and no
	// cost on the queue's path. With a prebuilt Queue, that queue must be a
	// ctrlkit *workqueue.Queue built WithProvenance.
	Provenance *Provenance

	// TracerProvider, when set, gives every Reconcile an OpenTelemetry span
	// ("Reconcile <name>", scope TracerScope) in its context, with the
	// controller, key and reconcile ID as attributes, the reasons (with
	// Provenance), the outcome, and a link to the span of the reconcile that
	// put the key back (retry, Requeue, RequeueAfter). API requests made with
	// the reconcile's context through an instrumented transport are its
	// children. nil means no spans.
	TracerProvider trace.TracerProvider

	// Fences, when non-nil, turns on write fences: a key whose Reconcile
	// wrote an object is not reconciled again until the informer shows the
	// write (see Fence, FenceGone, FenceOn and Fences.Auto). nil means Fence
	// records nothing and the worker loop checks for no fence.
	Fences *Fences
}

// Controller runs a Reconciler over the keys in its queue with a fixed number
// of workers. Build it with New, connect informers with Watch, and start it
// with Run (or add it to a manager.Manager). The queue is built and the
// watches are registered when Run starts, as controller-runtime does at
// Start; keys enqueued before that are kept and handed to the queue then.
type Controller[K comparable] struct {
	name       string
	r          Reconciler[K]
	workers    int
	maxRetries int
	exhausted  ExhaustedPolicy
	slowRetry  time.Duration // Options.SlowRetryInterval, defaulted
	timeout    time.Duration
	syncWait   time.Duration
	needLeader bool
	feature    featuregate.Feature
	rePanic    bool
	logger     klog.Logger
	clock      clock.WithTicker
	limiter    workqueue.TypedRateLimiter[K]
	metrics    *Metrics                                // Options.Metrics
	prebuilt   workqueue.TypedRateLimitingInterface[K] // Options.Queue
	provenance bool                                    // Options.Provenance != nil
	provLevel  int                                     // verbosity of the "Reconciling" line; < 0: none
	tracing    *tracing[K]                             // nil without Options.TracerProvider
	fenceOpts  *Fences                                 // Options.Fences
	fenceOn    []func() *fenceTarget                   // FenceOn, and each Watch's informer
	fences     atomic.Pointer[fenceTable[K]]           // set by Run when fenceOpts != nil
	gate       Admission[K]                         // SetAdmission; set before Run

	// q is the running queue: nil before Run, then set once under mu. The
	// hot path (Enqueue from informer handlers) reads it without the lock.
	q atomic.Pointer[runQueue[K]]

	mu      sync.Mutex
	watches []watch[K]
	waits   []source
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
	t   Trigger
}

// runQueue is the queue of a running controller with its optional
// priority interface, published together.
type runQueue[K comparable] struct {
	workqueue.TypedRateLimitingInterface[K]
	prio priorityAdder[K]
	why  *ckqueue.Queue[K] // nil without provenance
	ck   *ckqueue.Queue[K] // nil when Options.Queue is not ctrlkit's
}

// New validates opts and builds a controller named name (the name is used in
// logs, metrics, events and as the queue's name). Bad options are an error
// matching ErrInvalidOptions (an *OptionsError naming the field).
func New[K comparable](name string, r Reconciler[K], opts Options[K]) (*Controller[K], error) {
	bad := func(field, reason string) (*Controller[K], error) {
		return nil, &OptionsError{Controller: name, Field: field, Reason: reason}
	}
	switch {
	case name == "":
		return bad("name", "empty; every controller needs a name for logs, metrics and events")
	case isNil(r):
		return bad("Reconciler", "nil")
	case opts.Workers < 0:
		return bad("Workers", fmt.Sprintf("%d is negative", opts.Workers))
	case opts.MaxRetries < 0 && opts.MaxRetries != RetryForever:
		return bad("MaxRetries", fmt.Sprintf("%d is negative (RetryForever is %d; set NoRetries to never retry)", opts.MaxRetries, RetryForever))
	case opts.NoRetries && opts.MaxRetries != 0:
		return bad("MaxRetries", fmt.Sprintf("%d conflicts with NoRetries", opts.MaxRetries))
	case opts.Exhausted != SlowRetry && opts.Exhausted != GiveUp:
		return bad("Exhausted", fmt.Sprintf("unknown %v; use SlowRetry or GiveUp", opts.Exhausted))
	case opts.Exhausted == GiveUp && (opts.NoRetries || opts.MaxRetries == RetryForever):
		return bad("Exhausted", "GiveUp set with NoRetries or RetryForever, which never exhaust a key's retries")
	case opts.SlowRetryInterval < 0:
		return bad("SlowRetryInterval", fmt.Sprintf("%v is negative", opts.SlowRetryInterval))
	case opts.SlowRetryInterval > 0 && (opts.Exhausted == GiveUp || opts.NoRetries || opts.MaxRetries == RetryForever):
		return bad("SlowRetryInterval", fmt.Sprintf("%v set with GiveUp, NoRetries or RetryForever, which never retry a key slowly", opts.SlowRetryInterval))
	case opts.ReconcileTimeout < 0:
		return bad("ReconcileTimeout", fmt.Sprintf("%v is negative", opts.ReconcileTimeout))
	case opts.CacheSyncTimeout < 0:
		return bad("CacheSyncTimeout", fmt.Sprintf("%v is negative", opts.CacheSyncTimeout))
	case opts.Queue != nil && opts.RateLimiter != nil:
		return bad("RateLimiter", "set together with Queue; a prebuilt queue brings its own rate limiter")
	case opts.Fences != nil && opts.Fences.TTL < 0:
		return bad("Fences.TTL", fmt.Sprintf("%v is negative", opts.Fences.TTL))
	case opts.Provenance != nil && opts.Queue != nil && !isReasonsQueue[K](opts.Queue):
		return bad("Provenance", fmt.Sprintf("set with a Queue (%T) that keeps no reasons; use a ctrlkit workqueue built WithProvenance", opts.Queue))
	}
	c := &Controller[K]{
		name:       name,
		r:          r,
		workers:    max(opts.Workers, 1),
		maxRetries: opts.MaxRetries,
		exhausted:  opts.Exhausted,
		slowRetry:  opts.SlowRetryInterval,
		timeout:    opts.ReconcileTimeout,
		syncWait:   opts.CacheSyncTimeout,
		needLeader: opts.NeedLeaderElection == nil || *opts.NeedLeaderElection,
		feature:    opts.Feature,
		rePanic:    opts.RePanic,
		logger:     opts.Logger,
		clock:      opts.Clock,
		limiter:    opts.RateLimiter,
		metrics:    opts.Metrics,
		prebuilt:   opts.Queue,
		provenance: opts.Provenance != nil,
		tracing:    newTracing[K](opts.TracerProvider),
		fenceOpts:  opts.Fences,
	}
	if c.provenance {
		c.provLevel = opts.Provenance.LogLevel
		if c.provLevel == 0 {
			c.provLevel = DefaultProvenanceLogLevel
		}
	}
	switch {
	case opts.NoRetries:
		c.maxRetries, c.exhausted = 0, GiveUp
	case c.maxRetries == 0:
		c.maxRetries = DefaultMaxRetries
	}
	if c.slowRetry == 0 {
		c.slowRetry = DefaultSlowRetryInterval
	}
	if c.clock == nil {
		c.clock = clock.RealClock{}
	}
	if c.limiter == nil {
		c.limiter = workqueue.DefaultTypedControllerRateLimiter[K]()
	}
	return c, nil
}

// isNil reports whether r is nil or a nil func, map or pointer inside the
// interface (a nil ReconcilerFunc would otherwise panic on the first key).
func isNil[K comparable](r Reconciler[K]) bool {
	if r == nil {
		return true
	}
	switch v := reflect.ValueOf(r); v.Kind() {
	case reflect.Func, reflect.Pointer, reflect.Map, reflect.Interface, reflect.Slice, reflect.Chan:
		return v.IsNil()
	}
	return false
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

func (c *Controller[K]) enqueue(key K, t Trigger) {
	if q := c.q.Load(); q != nil {
		q.addTrigger(key, t)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	// Run may have published the queue since the lock-free look.
	if q := c.q.Load(); q != nil {
		q.addTrigger(key, t)
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
	// counts in SlowRetrying, unless Options.Exhausted is GiveUp).
	Retrying int
	// SlowRetrying is how many keys failed after their last retry
	// (Options.MaxRetries) and are tried again every
	// Options.SlowRetryInterval until they succeed. Like keys waiting out a
	// RequeueAfter, they are not work to wait for (testkit.WaitForQuiet
	// does not): nothing is due for them before the interval. Both retry
	// counts are 0 once Run returned: nothing is retried any more.
	SlowRetrying int
	// Fenced is how many keys were due but are held back until the informer
	// shows their last Reconcile's writes (Options.Fences).
	Fenced int
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
		s.Queued = q.Len()
	} else {
		c.mu.Lock()
		s.Queued = len(c.pending)
		c.mu.Unlock()
	}
	s.Retrying, s.SlowRetrying = c.retries.counts()
	if ft := c.fences.Load(); ft != nil {
		s.Fenced = ft.heldKeys()
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
	if ft := c.startFences(logger, q); ft != nil {
		defer ft.unregister()
		sweepCtx, stopSweep := context.WithCancel(ctx)
		defer bg.Wait()
		defer stopSweep()
		bg.Go(func() { ft.sweep(sweepCtx, c.clock) })
	}

	regs, err := c.register(q)
	defer c.unregister(logger, regs)
	if err != nil {
		q.ShutDown()
		return err
	}
	if err := c.waitForSync(ctx); err != nil {
		q.ShutDown()
		if ctx.Err() != nil {
			return nil
		}
		return err
	}

	logger.V(2).Info("Starting workers", "workers", c.workers)
	var wg sync.WaitGroup
	for range c.workers {
		wg.Go(func() { c.worker(ctx, q, logger) })
	}
	<-ctx.Done()
	logger.V(2).Info("Shutting down: draining in-flight reconciles")
	q.ShutDownWithDrain()
	// A client-go queue given as Options.Queue stops its delay goroutine only
	// on ShutDown, not on ShutDownWithDrain; nothing is in flight any more,
	// so this is only that cleanup.
	q.ShutDown()
	wg.Wait()
	logger.V(2).Info("Stopped")
	return nil
}

// start builds the queue, hands it the keys enqueued so far and publishes it.
func (c *Controller[K]) start(m *Metrics) *runQueue[K] {
	var q workqueue.TypedRateLimitingInterface[K] = c.prebuilt
	if q == nil {
		q = newDefaultQueue(c.name, c.limiter, c.clock, m, c.provenance)
	}
	rq := &runQueue[K]{TypedRateLimitingInterface: q}
	if p, ok := q.(priorityAdder[K]); ok {
		rq.prio = p
	}
	if r, ok := q.(*ckqueue.Queue[K]); ok {
		rq.ck = r
		if c.provenance {
			rq.why = r
		}
	}
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
		rq.addTrigger(p.key, p.t)
	}
	c.pending = nil
	c.q.Store(rq)
	return rq
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
func (c *Controller[K]) register(q *runQueue[K]) ([]registration, error) {
	c.mu.Lock()
	watches := c.watches
	c.mu.Unlock()
	var regs []registration
	for _, w := range watches {
		reg, err := w.register(q)
		if err != nil {
			return regs, fmt.Errorf("controller %q: watching %s: %w", c.name, w.name, err)
		}
		regs = append(regs, reg)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sources = c.sources[:0]
	for _, r := range regs {
		c.sources = append(c.sources, r)
	}
	c.sources = append(c.sources, c.waits...)
	c.registered = true
	return regs, nil
}

// unregister removes the handlers, so a stopped controller's informers (which
// outlive it in a shared factory) stop mapping events for nothing.
func (c *Controller[K]) unregister(logger klog.Logger, regs []registration) {
	for _, r := range regs {
		if err := r.remove(); err != nil {
			logger.V(2).Info("Removing event handler failed", "informer", r.name, "err", err)
		}
	}
}

func (c *Controller[K]) waitForSync(ctx context.Context) error {
	c.mu.Lock()
	srcs := append([]source(nil), c.sources...)
	c.mu.Unlock()
	if len(srcs) == 0 {
		return nil
	}
	waitCtx := ctx
	if c.syncWait > 0 {
		var cancel context.CancelFunc
		waitCtx, cancel = context.WithTimeout(ctx, c.syncWait)
		defer cancel()
	}
	infs := make([]interface{ HasSynced() bool }, len(srcs))
	for i, s := range srcs {
		infs[i] = s
	}
	if err := informer.WaitForCacheSync(waitCtx, infs...); err != nil {
		return fmt.Errorf("controller %q: %w", c.name, err)
	}
	return nil
}

// worker is one worker's loop: it waits for a key, handles it and, while
// keys are ready, hands each back and takes the next in one step of the
// queue (DoneAndTryGet: one lock hand-off instead of two). It returns once
// the queue is shut down and empty.
func (c *Controller[K]) worker(ctx context.Context, q *runQueue[K], logger klog.Logger) {
	for {
		key, why, shutdown := q.get()
		if shutdown {
			return
		}
		c.inFlight.Add(1)
		for c.processChained(ctx, q, logger, &key, &why) {
		}
	}
}

// get waits for the next key, with its reasons on a queue with provenance.
func (q *runQueue[K]) get() (key K, why Reasons, shutdown bool) {
	if q.why != nil {
		return getWithReasons(q.why)
	}
	key, shutdown = q.Get()
	return key, why, shutdown
}

// processChained handles *key, counted in flight by the caller, and then
// hands it back. When another key is ready it takes it in the same step,
// still counted in flight, and returns true with *key and *why replaced;
// otherwise it leaves the in-flight count and returns false.
func (c *Controller[K]) processChained(ctx context.Context, q *runQueue[K], logger klog.Logger, key *K, why *Reasons) bool {
	handedBack := false
	defer func() {
		if !handedBack { // a panic passing through (RePanic)
			q.Done(*key)
			c.inFlight.Add(-1)
		}
	}()
	c.processKey(ctx, q, logger, *key, *why)
	handedBack = true
	// Done before leaving the in-flight count, so Idle never sees a key that
	// Done is about to put back as "nothing to do".
	switch {
	case q.why != nil:
		if next, nextWhy, ok := doneAndTryGetWithReasons(q.why, *key); ok {
			*key, *why = next, nextWhy
			return true
		}
	case q.ck != nil:
		if next, ok := q.ck.DoneAndTryGet(*key); ok {
			*key = next
			return true
		}
	default:
		q.Done(*key)
	}
	c.inFlight.Add(-1)
	return false
}

// processKey handles key, handed out by the queue with the reasons why;
// the caller hands it back (Done) afterwards, also when it panics.
func (c *Controller[K]) processKey(ctx context.Context, q *runQueue[K], logger klog.Logger, key K, why Reasons) {
	if ctx.Err() != nil {
		// Shutting down: keys not yet started are not started now; the next
		// run relists and enqueues them again.
		return
	}
	if c.gate != nil {
		if !c.gate.Admit(key) {
			q.Forget(key)
			c.retries.clear(key)
			return
		}
		// Deferred last, so it runs before q.Done can hand key to another worker.
		defer c.gate.Release(key)
	}
	ft := c.fences.Load()
	if ft != nil {
		if c.provenance {
			why = ft.takeCarry(key, why)
		}
		if ft.hold(key, why) {
			// Its last Reconcile's writes are not in the cache yet: the release
			// (an informer event, or the TTL) queues it again.
			logger.V(4).Info("Holding the key until the informer shows its last writes", "key", key)
			return
		}
	}
	id := uuid.NewUUID()
	klogger := logger.WithValues("key", key, "reconcileID", id)
	var whyp *Reasons // points into the context, so the reasons are copied once
	rctx := klog.NewContext(ctx, klogger)
	if c.provenance {
		rctx = withReconcile(rctx, id, &why)
		whyp = rctx.Value(reconcileKey{}).(*reconcileInfo).why
		if l := klogger.V(c.provLevel); c.provLevel >= 0 && l.Enabled() {
			l.Info("Reconciling", "reasons", *whyp)
		}
	} else {
		rctx = withReconcile(rctx, id, nil)
	}
	if ft != nil {
		var reconciled func()
		rctx, reconciled = ft.recorder(rctx, key)
		defer reconciled()
	}
	var span trace.Span
	if c.tracing != nil {
		rctx, span = c.tracing.start(rctx, c.name, key, string(id), whyp)
	}
	if c.timeout > 0 {
		var cancel context.CancelFunc
		rctx, cancel = context.WithTimeout(rctx, c.timeout)
		defer cancel()
	}

	res, err := c.reconcile(rctx, key)
	if c.timeout > 0 && ctx.Err() == nil && errors.Is(rctx.Err(), context.DeadlineExceeded) {
		c.cm.timedOut()
	}
	requeued := c.handle(klogger, q, key, res, err)
	if span != nil {
		c.tracing.end(span, key, res, err, requeued)
	}
}

// reconcile calls the Reconciler, turning a panic into a *PanicError (or
// letting it through with RePanic, after the deferred Done of the caller).
func (c *Controller[K]) reconcile(ctx context.Context, key K) (res Result, err error) {
	start := c.clock.Now()
	c.cm.activeDelta(1)
	defer func() {
		c.cm.activeDelta(-1)
		c.cm.observe(c.clock.Since(start).Seconds())
	}()
	defer func() {
		if v := recover(); v != nil {
			c.cm.panicked()
			if c.rePanic {
				panic(v)
			}
			err = &PanicError{Value: v, Stack: debug.Stack()}
		}
	}()
	return c.r.Reconcile(ctx, key)
}

// handle is the error policy: the one place that decides what happens to a
// key after Reconcile. It reports whether it put the key back.
func (c *Controller[K]) handle(logger klog.Logger, q *runQueue[K], key K, res Result, err error) (requeued bool) {
	switch {
	case err == nil:
		// Success clears the failure history whatever comes next.
		q.Forget(key)
		c.retries.clear(key)
		switch {
		case res.RequeueAfter > 0:
			c.cm.result(ResultRequeueAfter)
			q.add(key, res.Priority, res.RequeueAfter, false, requeueTrigger(res.RequeueAfter))
			return true
		case res.Requeue:
			c.cm.result(ResultRequeue)
			q.add(key, res.Priority, 0, true, requeueTrigger(0))
			return true
		default:
			c.cm.result(ResultSuccess)
		}
	case IsTerminal(err):
		c.cm.failed(true)
		q.Forget(key)
		c.retries.clear(key)
		logger.Error(err, "Reconcile failed with a terminal error; not retrying")
	default:
		c.cm.failed(false)
		if res.RequeueAfter > 0 {
			logger.Info("Reconcile returned an error and a RequeueAfter; the RequeueAfter was ignored and the error backoff applies",
				"requeueAfter", res.RequeueAfter)
		}
		var pe *PanicError
		if errors.As(err, &pe) {
			logger.Error(err, "Observed a panic in Reconcile", "stack", string(pe.Stack))
		}
		return c.retry(logger, q, key, res.Priority, err)
	}
	return false
}
