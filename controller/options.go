package controller

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"go.opentelemetry.io/otel/trace"
	kworkqueue "k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/ctrlkit/ctrlkit/featuregate"
	"github.com/ctrlkit/ctrlkit/internal/object"
)

// DefaultDrainTimeout is Options.DrainTimeout's default: long enough for a
// Reconcile's last few requests to a healthy API server, short enough that
// a shutdown stays well inside a Pod's 30 s grace period.
const DefaultDrainTimeout = 3 * time.Second

// defaultBackoffEventWait is Options.BackoffEventWait's default.
const defaultBackoffEventWait = 5 * time.Second

// Options configure a Controller. The zero value is valid: one worker, 15
// retries with backoff and then one every 5 minutes until the key succeeds,
// client-go's default controller rate limiter, a ctrlkit queue,
// the logger from Run's context, no metrics unless a Manager supplies them,
// no reconcile deadline, leader election required, no feature gate.
type Options[K comparable] struct {
	// Workers is how many keys are reconciled in parallel (never the same
	// key twice at once). 0 means 1; negative is an error.
	Workers int

	// Retry is what happens to a key whose Reconcile failed. The zero value
	// retries 15 times with backoff (RateLimiter), then every 5 minutes until
	// the key succeeds: Backoff(15, Every(5*time.Minute)). Others are built
	// from Backoff, Every, BackoffForever and GiveUp (see Retry).
	Retry Retry

	// EventsBypassBackoff restores client-go's rule for events on a key that
	// is backing off after a failure: the key is reconciled at once, and if it
	// fails again its retry count grows, so a stream of events during a fault
	// drives the backoff to the limiter's cap in seconds (kubernetes#132805:
	// ReplicaSets stalled 16 minutes after the fault cleared). By default
	// (false) a backing-off key waits for its retry: events for it, Enqueue
	// and a Reconcile's own re-add join that retry (provenance lists them),
	// so the count and the delay grow only when a retry runs at its due time
	// and fails, and a fault costs the backoff its own length, whatever the
	// events, except for the one early Reconcile BackoffEventWait allows.
	// Keys past their retries (slow retries) are reconciled at once on an
	// event either way: their interval never grows. A Queue not built by
	// this package (client-go's) always bypasses.
	EventsBypassBackoff bool

	// BackoffEventWait is the longest an event waits for a key that is
	// backing off: the first event (or Enqueue) after a failure reconciles
	// the key BackoffEventWait after that failure, or at its retry if that
	// comes sooner, and the events after it wait for the retry. If that
	// early Reconcile fails too, it is not counted: the retry stays due when
	// it was, and the next event may wake the key BackoffEventWait later. A
	// stream of events during a fault so costs at most one Reconcile per
	// BackoffEventWait beyond the backoff's own, never inflates the backoff,
	// and the fix an event brings (a corrected spec, or the fault's end
	// while the object keeps changing) is acted on within BackoffEventWait
	// instead of waiting out a delay that grew with the fault. 0 means 5 s;
	// negative makes events wait for the retry. With a prebuilt Queue, whose
	// rate limiter picks the delay, events wait for the retry and a positive
	// value is an error, as it is with EventsBypassBackoff.
	BackoffEventWait time.Duration

	// MinInterval is the least time between the starts of two Reconciles of
	// one key: a key due sooner waits in the queue (holding no worker) until
	// then, its reasons kept, and the wait shows in provenance
	// (provenance.TriggerPaced) and in ctrlkit_controller_paced_total{pace=
	// "min-interval"}. For objects whose every change would otherwise cost
	// a call to a slow system. 0, the default, means none.
	MinInterval time.Duration

	// Debounce, when > 0, lets a key's events settle before its Reconcile:
	// the Reconcile starts once no event for the key came for Debounce, or
	// DebounceMaxWait after the first event since its last Reconcile,
	// whichever is sooner, so an object that never stops changing is still
	// reconciled every DebounceMaxWait (a debounce without that cap can hide
	// updates forever). It applies to events from watches (the initial list
	// and resyncs too), not to Enqueue, retries or requeues, though a key
	// queued by those while its events are settling waits with them. A held
	// key waits in the queue, holding no worker; the wait shows in provenance
	// (provenance.TriggerPaced) and in ctrlkit_controller_paced_total{pace="debounce"}.
	// 0, the default, means none.
	Debounce time.Duration

	// DebounceMaxWait caps Debounce's wait, counted from the first event
	// not yet reconciled; it must be at least Debounce. 0 means 10 x
	// Debounce. Set without Debounce it is an error.
	DebounceMaxWait time.Duration

	// Flows names the flow of a key, typically its namespace or its tenant
	// (FlowByNamespace for Key). Inside a priority the flows with queued keys
	// take turns (workqueue.WithFlows), so one namespace's burst (10^4
	// objects listed at start-up, a bulk update) does not delay another
	// namespace's first Reconcile behind it. nil, the default, queues keys
	// first come, first served within a priority. It must be cheap: it runs
	// on every enqueue, under the queue's lock.
	Flows func(key K) string

	// FlowWeights gives a flow more keys a turn (workqueue.WithFlowWeights);
	// nil gives every flow one. Set without Flows it is an error.
	FlowWeights func(flow string) int

	// Aging bounds how long a queued key waits below the highest priority
	// with keys (workqueue.WithAging): after between Aging and 5/4 of it, it
	// moves up to that priority, so a low priority (WithInitialListPriority,
	// WithResyncPriority, Result.Priority) delays keys but never starves
	// them. 0, the default, keeps priorities strict.
	Aging time.Duration

	// Limiters pace the Reconciles: each start takes a token of every one
	// (see Limiter); a key without one waits in the queue. A Limiter given
	// to several controllers paces them together. nil means none.
	Limiters []*Limiter

	// RequeueJitter stretches each Result.RequeueAfter by a random share of
	// itself, up to this fraction (0.1: up to 10% later, never sooner), so
	// that keys requeued alike (a periodic check of every object) spread
	// out instead of coming back in one burst. 0, the default, means none;
	// it must be within [0, 1].
	RequeueJitter float64

	// RateLimiter paces retries and Result.Requeue. nil means client-go's
	// DefaultTypedControllerRateLimiter (per-item exponential 5 ms..1000 s,
	// overall 10 qps / burst 100). Ignored (an error) when Queue is set.
	RateLimiter kworkqueue.TypedRateLimiter[K]

	// Queue is a prebuilt queue to use instead of building one at Run; the
	// controller shuts it down when Run returns (if Run is never called, that
	// is the caller's job). RateLimiter, Clock, Flows, Aging and queue metrics
	// are then the queue's own business. A queue that also has
	// AddWithOpts(ctrlkit workqueue.AddOpts, ...K) gets Result.Priority.
	Queue kworkqueue.TypedRateLimitingInterface[K]

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

	// DrainTimeout is how long the Reconciles in flight when a graceful
	// shutdown begins (Run's context cancelled with cause ErrShutdown, as a
	// manager.Manager does when its own context ends) keep their context,
	// so that the writes they are making land instead of failing with
	// "context canceled" and leaving, say, a status half written. No key
	// starts once the shutdown began, and Run returns as soon as the last
	// one in flight did. 0 means DefaultDrainTimeout; a negative value
	// cancels them at once, as controller-runtime does. Any other end of
	// Run's context (a lost Lease, Manager.Remove) cancels them at once:
	// another replica may be acting on the same keys.
	DrainTimeout time.Duration

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
	// ("Reconcile <name>", instrumentation scope
	// "github.com/ctrlkit/ctrlkit/controller") in its context, with a link to
	// the span of the reconcile that put the key back (retry, Requeue,
	// RequeueAfter), and the attributes ctrlkit.controller, ctrlkit.key,
	// ctrlkit.reconcile_id, ctrlkit.result ("success", "requeue",
	// "requeue_after", "error" or "terminal_error") and, with Provenance,
	// ctrlkit.reasons.total, ctrlkit.reasons.first, ctrlkit.reasons.last and
	// ctrlkit.reasons.count.<kind> ("event", "retry", ...). API requests made
	// with the reconcile's context through an instrumented transport are its
	// children. nil means no spans.
	TracerProvider trace.TracerProvider

	// Fences, when non-nil, turns on write fences: a key whose Reconcile
	// wrote an object is not reconciled again until the informer shows the
	// write (see Fence, FenceGone, FenceOn and Fences.Auto). nil means Fence
	// records nothing and the worker loop checks for no fence.
	Fences *Fences

	// Freshness holds work while the caches the controller reads are behind the API server:
	// a gate before the workers start, and a bound on lag (see Freshness). The zero value
	// turns both off.
	Freshness Freshness
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
	case object.IsNil(r):
		return bad("Reconciler", "nil")
	case opts.Workers < 0:
		return bad("Workers", fmt.Sprintf("%d is negative", opts.Workers))
	case opts.Retry.err != "":
		return bad("Retry", opts.Retry.err)
	case opts.RequeueJitter < 0 || opts.RequeueJitter > 1 || opts.RequeueJitter != opts.RequeueJitter:
		return bad("RequeueJitter", fmt.Sprintf("%v is not within [0, 1]", opts.RequeueJitter))
	case opts.MinInterval < 0:
		return bad("MinInterval", fmt.Sprintf("%v is negative", opts.MinInterval))
	case opts.Debounce < 0:
		return bad("Debounce", fmt.Sprintf("%v is negative", opts.Debounce))
	case opts.DebounceMaxWait != 0 && opts.Debounce == 0:
		return bad("DebounceMaxWait", "set without Debounce")
	case opts.DebounceMaxWait != 0 && opts.DebounceMaxWait < opts.Debounce:
		return bad("DebounceMaxWait", fmt.Sprintf("%v is shorter than Debounce (%v)", opts.DebounceMaxWait, opts.Debounce))
	case opts.FlowWeights != nil && opts.Flows == nil:
		return bad("FlowWeights", "set without Flows")
	case opts.Aging < 0:
		return bad("Aging", fmt.Sprintf("%v is negative", opts.Aging))
	case opts.Queue != nil && (opts.Flows != nil || opts.Aging > 0):
		return bad("Flows", "Flows or Aging set together with Queue; build the queue with workqueue.WithFlows and workqueue.WithAging")
	case slices.Contains(opts.Limiters, nil):
		return bad("Limiters", "holds a nil Limiter")
	case opts.ReconcileTimeout < 0:
		return bad("ReconcileTimeout", fmt.Sprintf("%v is negative", opts.ReconcileTimeout))
	case opts.CacheSyncTimeout < 0:
		return bad("CacheSyncTimeout", fmt.Sprintf("%v is negative", opts.CacheSyncTimeout))
	case opts.EventsBypassBackoff && opts.BackoffEventWait != 0:
		return bad("BackoffEventWait", "set with EventsBypassBackoff, which reconciles every event at once")
	case opts.Queue != nil && opts.BackoffEventWait > 0:
		return bad("BackoffEventWait", "set with Queue: a prebuilt queue's rate limiter picks the retry's delay, so events wait for the retry")
	case opts.Queue != nil && opts.RateLimiter != nil:
		return bad("RateLimiter", "set together with Queue; a prebuilt queue brings its own rate limiter")
	case opts.Fences != nil && opts.Fences.TTL < 0:
		return bad("Fences.TTL", fmt.Sprintf("%v is negative", opts.Fences.TTL))
	case opts.Freshness.validate() != nil:
		err := opts.Freshness.validate().(*OptionsError)
		err.Controller = name
		return nil, err
	case opts.Provenance != nil && opts.Queue != nil && !isReasonsQueue[K](opts.Queue):
		return bad("Provenance", fmt.Sprintf("set with a Queue (%T) that keeps no reasons; use a ctrlkit workqueue built WithProvenance", opts.Queue))
	}
	c := &Controller[K]{
		name:        name,
		r:           r,
		workers:     max(opts.Workers, 1),
		maxRetries:  opts.Retry.resolved().backoff,
		slowRetry:   opts.Retry.resolved().every,
		bypass:      opts.EventsBypassBackoff,
		jitter:      opts.RequeueJitter,
		minInterval: opts.MinInterval,
		debounce:    opts.Debounce,
		debounceMax: opts.DebounceMaxWait,
		flows:       opts.Flows,
		flowWeights: opts.FlowWeights,
		aging:       opts.Aging,
		limiters:    slices.Clone(opts.Limiters),
		random:      rand.Float64,
		timeout:     opts.ReconcileTimeout,
		drain:       opts.DrainTimeout,
		syncWait:    opts.CacheSyncTimeout,
		needLeader:  opts.NeedLeaderElection == nil || *opts.NeedLeaderElection,
		feature:     opts.Feature,
		rePanic:     opts.RePanic,
		logger:      opts.Logger,
		clock:       opts.Clock,
		limiter:     opts.RateLimiter,
		metrics:     opts.Metrics,
		prebuilt:    opts.Queue,
		provenance:  opts.Provenance != nil,
		tracing:     newTracing[K](opts.TracerProvider),
		fenceOpts:   opts.Fences,
		freshness:   opts.Freshness,
	}
	if c.provenance {
		c.provLevel = opts.Provenance.LogLevel
		if c.provLevel == 0 {
			c.provLevel = defaultProvenanceLogLevel
		}
	}
	if c.debounce > 0 && c.debounceMax == 0 {
		c.debounceMax = 10 * c.debounce
	}
	if c.drain == 0 {
		c.drain = DefaultDrainTimeout
	}
	if c.clock == nil {
		c.clock = clock.RealClock{}
	}
	if c.limiter == nil {
		c.limiter = kworkqueue.DefaultTypedControllerRateLimiter[K]()
	}
	if !c.bypass && c.prebuilt == nil {
		switch {
		case opts.BackoffEventWait == 0:
			c.wake = defaultBackoffEventWait
		case opts.BackoffEventWait > 0:
			c.wake = opts.BackoffEventWait
		}
	}
	c.dynamic.forget = func(id any) {
		if ft := c.fences.Load(); ft != nil {
			ft.forget(id)
		}
	}
	return c, nil
}
