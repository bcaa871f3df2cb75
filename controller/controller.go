package controller

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/ctrlkit/ctrlkit/featuregate"
	"github.com/ctrlkit/ctrlkit/informer"
)

// DefaultMaxRetries is how many times a failing key is retried (with
// exponential backoff) before the loop gives up on it, as in
// kube-controller-manager's controllers.
const DefaultMaxRetries = 15

// Options configure a Controller. The zero value is valid: one worker, 15
// retries, client-go's default controller rate limiter, a ctrlkit queue,
// the logger from Run's context, no metrics unless a Manager supplies them,
// no reconcile deadline, leader election required, no feature gate.
type Options[K comparable] struct {
	// Workers is how many keys are reconciled in parallel (never the same
	// key twice at once). 0 means 1; negative is an error.
	Workers int

	// MaxRetries is how many times a key whose Reconcile failed is added back
	// with backoff before the loop logs the error and forgets it. 0 means
	// DefaultMaxRetries (15): the first call plus 15 retries is 16 calls.
	// Negative is an error. To never retry, set NoRetries (or return
	// Terminal errors, which are never retried whatever MaxRetries says).
	// The count is the queue's NumRequeues, that is the rate limiter's
	// per-item count: a limiter without per-item state (a bare bucket)
	// reports 0 and retries forever.
	MaxRetries int

	// NoRetries makes a failed key be logged and forgotten at once (the
	// effective MaxRetries is 0). It cannot be combined with MaxRetries.
	NoRetries bool

	// RateLimiter paces retries and Result.Requeue. nil means client-go's
	// DefaultTypedControllerRateLimiter (per-item exponential 5 ms..1000 s,
	// overall 10 qps / burst 100). Ignored (an error) when Queue is set.
	RateLimiter workqueue.TypedRateLimiter[K]

	// Queue is a prebuilt queue to use instead of building one; the
	// controller owns it from New on and shuts it down when Run returns.
	// RateLimiter, Clock and queue metrics are then the queue's own
	// business. A queue that also has
	// AddWithOpts(ctrlkit workqueue.AddOpts, ...K) gets Result.Priority.
	Queue workqueue.TypedRateLimitingInterface[K]

	// Logger overrides the logger taken from Run's context. Either way every
	// Reconcile gets a logger in its ctx (klog.FromContext) with the values
	// controller=<name> and key=<key>.
	Logger klog.Logger

	// Metrics receives this controller's reconcile and queue metrics. nil
	// means none, or the Manager's when the controller is added to a
	// Manager before its queue was first used.
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

	// Feature, when set, is the feature gate a Manager consults: the
	// controller is started only when ManagerOptions.FeatureGate says the
	// feature is enabled, and the log says so when it is not.
	Feature featuregate.Feature

	// RePanic makes a panic in Reconcile propagate (after the key is marked
	// Done and the panic counted) instead of being recovered and handled as
	// an error. For tests that want a crash to fail loudly.
	RePanic bool

	// Clock drives the queue's delays and the reconcile duration metric.
	// nil means the real clock; tests use k8s.io/utils/clock/testing.
	Clock clock.WithTicker
}

// Controller runs a Reconciler over the keys in its queue with a fixed number
// of workers. Build it with New, connect informers with Watch, and start it
// with Run (or add it to a Manager).
type Controller[K comparable] struct {
	name       string
	r          Reconciler[K]
	workers    int
	maxRetries int
	timeout    time.Duration
	syncWait   time.Duration
	needLeader bool
	feature    featuregate.Feature
	rePanic    bool
	logger     klog.Logger
	clock      clock.WithTicker
	limiter    workqueue.TypedRateLimiter[K]

	// metrics may be set by a Manager until the queue is built; it is read
	// only after that (queueOnce orders the accesses).
	metrics *Metrics
	cm      *controllerMetrics

	queueOnce sync.Once
	qmu       sync.Mutex // orders setDefaultMetrics and buildQueue
	built     bool
	queue     workqueue.TypedRateLimitingInterface[K]
	prio      priorityAdder[K]

	mu      sync.Mutex
	sources []source

	started  atomic.Bool
	inFlight atomic.Int64

	// retrying holds the keys whose last Reconcile failed and that wait out a
	// backoff: the queue does not count them (client-go's Len counts only
	// ready keys), yet a test kit waiting for a settled world must.
	retryMu  sync.Mutex
	retrying map[K]struct{}
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
	case r == nil:
		return bad("Reconciler", "nil")
	case opts.Workers < 0:
		return bad("Workers", fmt.Sprintf("%d is negative", opts.Workers))
	case opts.MaxRetries < 0:
		return bad("MaxRetries", fmt.Sprintf("%d is negative (set NoRetries to never retry)", opts.MaxRetries))
	case opts.NoRetries && opts.MaxRetries != 0:
		return bad("MaxRetries", fmt.Sprintf("%d conflicts with NoRetries", opts.MaxRetries))
	case opts.ReconcileTimeout < 0:
		return bad("ReconcileTimeout", fmt.Sprintf("%v is negative", opts.ReconcileTimeout))
	case opts.CacheSyncTimeout < 0:
		return bad("CacheSyncTimeout", fmt.Sprintf("%v is negative", opts.CacheSyncTimeout))
	case opts.Queue != nil && opts.RateLimiter != nil:
		return bad("RateLimiter", "set together with Queue; a prebuilt queue brings its own rate limiter")
	}
	c := &Controller[K]{
		name:       name,
		r:          r,
		workers:    max(opts.Workers, 1),
		maxRetries: opts.MaxRetries,
		timeout:    opts.ReconcileTimeout,
		syncWait:   opts.CacheSyncTimeout,
		needLeader: opts.NeedLeaderElection == nil || *opts.NeedLeaderElection,
		feature:    opts.Feature,
		rePanic:    opts.RePanic,
		logger:     opts.Logger,
		clock:      opts.Clock,
		limiter:    opts.RateLimiter,
		metrics:    opts.Metrics,
		queue:      opts.Queue,
	}
	switch {
	case opts.NoRetries:
		c.maxRetries = 0
	case c.maxRetries == 0:
		c.maxRetries = DefaultMaxRetries
	}
	if c.clock == nil {
		c.clock = clock.RealClock{}
	}
	if c.limiter == nil {
		c.limiter = workqueue.DefaultTypedControllerRateLimiter[K]()
	}
	return c, nil
}

// Name returns the controller's name.
func (c *Controller[K]) Name() string { return c.name }

// NeedLeaderElection reports whether the controller runs only on the leader
// (Options.NeedLeaderElection, default true).
func (c *Controller[K]) NeedLeaderElection() bool { return c.needLeader }

// Feature returns the feature gate the controller is behind ("" for none).
func (c *Controller[K]) Feature() featuregate.Feature { return c.feature }

// Workers returns the number of workers Run starts.
func (c *Controller[K]) Workers() int { return c.workers }

// Queue returns the controller's queue, built on first use.
func (c *Controller[K]) Queue() workqueue.TypedRateLimitingInterface[K] {
	c.queueOnce.Do(c.buildQueue)
	return c.queue
}

func (c *Controller[K]) buildQueue() {
	c.qmu.Lock()
	defer c.qmu.Unlock()
	c.built = true
	if c.queue == nil {
		c.queue = newDefaultQueue(c.name, c.limiter, c.clock, c.metrics)
	}
	if p, ok := c.queue.(priorityAdder[K]); ok {
		c.prio = p
	}
	c.cm = c.metrics.forController(c.name, c.workers)
}

// setDefaultMetrics gives the controller m unless it has metrics already or
// its queue was built (then it is too late for queue metrics, and partial
// metrics would mislead). It reports whether m was taken.
func (c *Controller[K]) setDefaultMetrics(m *Metrics) bool {
	c.qmu.Lock()
	defer c.qmu.Unlock()
	if c.built || c.metrics != nil {
		return false
	}
	c.metrics = m
	return true
}

// shutdownQueue frees the queue's goroutines; the Manager calls it for
// controllers it never ran. Nothing is lost that a Run could still process:
// a controller runs once.
func (c *Controller[K]) shutdownQueue() {
	c.Queue().ShutDown()
}

// Enqueue adds key to the queue. A key already waiting is not added twice;
// a key being reconciled now is reconciled again after the current call.
// After Run returned, Enqueue does nothing.
func (c *Controller[K]) Enqueue(key K) { c.Queue().Add(key) }

// EnqueueAfter adds key after d (at once when d <= 0).
func (c *Controller[K]) EnqueueAfter(key K, d time.Duration) { c.Queue().AddAfter(key, d) }

// Len returns how many keys are ready in the queue (not counting keys being
// reconciled or waiting for a delay). With InFlight it tells test kits when
// the controller is quiet; both names are stable API.
func (c *Controller[K]) Len() int { return c.Queue().Len() }

// InFlight returns how many Reconcile calls are running now.
func (c *Controller[K]) InFlight() int { return int(c.inFlight.Load()) }

// Retrying returns how many keys failed their last Reconcile and wait out a
// backoff before their next try. A key leaves the count when a Reconcile of
// it succeeds, fails terminally or runs out of retries.
func (c *Controller[K]) Retrying() int {
	c.retryMu.Lock()
	defer c.retryMu.Unlock()
	return len(c.retrying)
}

func (c *Controller[K]) markRetrying(key K, retrying bool) {
	c.retryMu.Lock()
	defer c.retryMu.Unlock()
	if !retrying {
		delete(c.retrying, key)
		return
	}
	if c.retrying == nil {
		c.retrying = make(map[K]struct{})
	}
	c.retrying[key] = struct{}{}
}

// Idle reports whether no key is ready in the queue and no Reconcile is
// running (keys waiting for a RequeueAfter or a backoff do not count). A key
// handed out by the queue is counted in flight a few instructions after it
// leaves the queue, so poll Idle until it holds twice in a row (as
// controllertest.WaitForQuiet does) rather than trusting one reading.
func (c *Controller[K]) Idle() bool {
	// Read in-flight first: a worker finishing marks the key Done (which may
	// put it back in the queue) before it leaves the in-flight count.
	return c.inFlight.Load() == 0 && c.Queue().Len() == 0
}

// Run waits for every watched informer to sync, starts the workers and blocks
// until ctx ends; then it stops taking new keys, lets in-flight Reconciles
// finish (they see ctx cancelled) and returns nil. It returns a
// *CacheSyncError when the caches did not sync within CacheSyncTimeout, and
// ErrAlreadyStarted when called twice: a Controller runs once.
func (c *Controller[K]) Run(ctx context.Context) error {
	if !c.started.CompareAndSwap(false, true) {
		return fmt.Errorf("controller %q: %w", c.name, ErrAlreadyStarted)
	}
	q := c.Queue()
	logger := c.logger
	if logger.GetSink() == nil {
		logger = klog.FromContext(ctx)
	}
	logger = logger.WithValues("controller", c.name)
	ctx = klog.NewContext(ctx, logger)

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
		wg.Go(func() {
			for c.processNext(ctx, logger) {
			}
		})
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
		return &CacheSyncError{Controller: c.name, Err: err}
	}
	return nil
}

// processNext handles one key; it returns false once the queue is shut down
// and empty.
func (c *Controller[K]) processNext(ctx context.Context, logger klog.Logger) bool {
	key, shutdown := c.queue.Get()
	if shutdown {
		return false
	}
	c.inFlight.Add(1)
	// Done before leaving the in-flight count, so Idle never sees a key that
	// Done is about to put back as "nothing to do".
	defer c.inFlight.Add(-1)
	defer c.queue.Done(key)

	if ctx.Err() != nil {
		// Shutting down: keys not yet started are not started now; the next
		// run relists and enqueues them again.
		return true
	}
	klogger := logger.WithValues("key", key)
	rctx := klog.NewContext(ctx, klogger)
	if c.timeout > 0 {
		var cancel context.CancelFunc
		rctx, cancel = context.WithTimeout(rctx, c.timeout)
		defer cancel()
	}

	res, err := c.reconcile(rctx, key)
	c.handle(klogger, key, res, err)
	return true
}

// reconcile calls the Reconciler, turning a panic into a *PanicError (or
// letting it through with RePanic, after the deferred Done in processNext).
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
// key after Reconcile.
func (c *Controller[K]) handle(logger klog.Logger, key K, res Result, err error) {
	switch {
	case err == nil:
		// Success clears the failure history whatever comes next.
		c.queue.Forget(key)
		c.markRetrying(key, false)
		switch {
		case res.RequeueAfter > 0:
			c.cm.result(ResultRequeueAfter)
			c.add(key, res.Priority, res.RequeueAfter, false)
		case res.Requeue:
			c.cm.result(ResultRequeue)
			c.add(key, res.Priority, 0, true)
		default:
			c.cm.result(ResultSuccess)
		}
	case IsTerminal(err):
		c.cm.result(ResultTerminal)
		c.queue.Forget(key)
		c.markRetrying(key, false)
		logger.Error(err, "Reconcile failed with a terminal error; not retrying")
	default:
		c.cm.result(ResultError)
		if res.RequeueAfter > 0 {
			logger.Info("Reconcile returned an error and a RequeueAfter; the RequeueAfter was ignored and the error backoff applies",
				"requeueAfter", res.RequeueAfter)
		}
		var pe *PanicError
		if errors.As(err, &pe) {
			logger.Error(err, "Observed a panic in Reconcile", "stack", string(pe.Stack))
		}
		if n := c.queue.NumRequeues(key); n < c.maxRetries {
			logger.Error(err, "Reconcile failed; retrying with backoff", "retries", n, "maxRetries", c.maxRetries)
			c.markRetrying(key, true)
			c.add(key, res.Priority, 0, true)
			return
		}
		logger.Error(err, "Reconcile failed too many times; dropping the key until its next event", "maxRetries", c.maxRetries)
		c.queue.Forget(key)
		c.markRetrying(key, false)
	}
}
