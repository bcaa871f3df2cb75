package controller

import (
	"time"

	kworkqueue "k8s.io/client-go/util/workqueue"

	"github.com/ctrlkit/ctrlkit/provenance"
	"github.com/ctrlkit/ctrlkit/workqueue"
)

// queue is the one view a running controller has of its queue, whatever queue
// the user passed: Run adapts it once (adaptQueue), so no step of the worker
// pipeline asks which kind of queue it has.
type queue[K comparable] interface {
	// get waits for the next key, with why it was queued (zero provenance.Reasons
	// without provenance); shutdown is true once the queue is shut down and
	// empty.
	get() (key K, why provenance.Reasons, shutdown bool)
	// doneAndNext hands key back and, when another key is ready, takes it in
	// the same step (ok true).
	doneAndNext(key K) (next K, why provenance.Reasons, ok bool)
	// done hands key back.
	done(key K)
	// add puts key in: at once, after a delay, or through the rate limiter.
	add(key K, a addSpec)
	// forget clears key's rate-limiter history; numRequeues reads it.
	forget(key K)
	numRequeues(key K) int
	// len is how many keys are ready.
	len() int
	shutDown()
	shutDownWithDrain()
}

// addSpec is how a key is put in the queue.
type addSpec struct {
	trigger     provenance.Trigger // recorded with provenance; trigger.After delays the add
	priority    *int               // Result.Priority; nil keeps the default
	rateLimited bool               // delay through the rate limiter (a retry)
	// hold keeps the key out until the delay ends: adds meanwhile join it
	// (workqueue.AddOpts.Hold). Only ctrlkit's queue can.
	hold bool
	// wake lets the first add that joins the hold end it this long after
	// the held add (workqueue.AddOpts.WakeAfter); 0: never.
	wake time.Duration
	// backoff delays a retry whose delay the controller took from the rate
	// limiter itself; a backoff retry's trigger never shows its delay.
	backoff time.Duration
}

// adaptQueue returns the queue view of q: ctrlkit's queue is used through its
// own methods (priorities, reasons, DoneAndTryGet), any other client-go queue
// through client-go's interface.
func adaptQueue[K comparable](q kworkqueue.TypedRateLimitingInterface[K], provenance bool) queue[K] {
	if ck, ok := q.(*workqueue.Queue[K]); ok {
		return ckQueue[K]{q: ck, provenance: provenance}
	}
	return clientGoQueue[K]{q}
}

// newDefaultQueue builds the queue a controller uses when Options.Queue is
// nil: a ctrlkit queue named after the controller, so its metrics carry the
// name, with the controller's flows and aging.
func (c *Controller[K]) newDefaultQueue(m *Metrics) *workqueue.Queue[K] {
	opts := []workqueue.Option[K]{
		workqueue.WithName[K](c.name),
		workqueue.WithClock[K](c.clock),
		workqueue.WithRateLimiter(c.limiter),
		workqueue.WithFlows(c.flows),
		workqueue.WithFlowWeights[K](c.flowWeights),
		workqueue.WithAging[K](c.aging),
	}
	if c.provenance {
		opts = append(opts, workqueue.WithProvenance[K]())
	}
	if m != nil {
		opts = append(opts, workqueue.WithMetricsProvider[K](m.QueueMetrics()))
	}
	return workqueue.New(opts...)
}

// ckQueue is ctrlkit's queue. Its reasons are zero when it keeps none.
type ckQueue[K comparable] struct {
	q          *workqueue.Queue[K]
	provenance bool // Options.Provenance: every add says why
}

func (c ckQueue[K]) get() (K, provenance.Reasons, bool) { return getWithReasons(c.q) }

func (c ckQueue[K]) doneAndNext(key K) (K, provenance.Reasons, bool) {
	return doneAndTryGetWithReasons(c.q, key)
}

func (c ckQueue[K]) done(key K) { c.q.Done(key) }

func (c ckQueue[K]) add(key K, a addSpec) {
	if !c.provenance && a.priority == nil && !a.hold {
		addPlain(c.q, key, a)
		return
	}
	o := workqueue.AddOpts{After: max(a.trigger.After, a.backoff), RateLimited: a.rateLimited, Hold: a.hold, WakeAfter: a.wake, Cause: a.trigger.Cause()}
	if a.priority != nil {
		o.Priority = *a.priority
	}
	c.q.AddWithOpts(o, key)
}

func (c ckQueue[K]) forget(key K)          { c.q.Forget(key) }
func (c ckQueue[K]) numRequeues(key K) int { return c.q.NumRequeues(key) }
func (c ckQueue[K]) len() int              { return c.q.Len() }
func (c ckQueue[K]) shutDown()             { c.q.ShutDown() }
func (c ckQueue[K]) shutDownWithDrain()    { c.q.ShutDownWithDrain() }

// clientGoQueue is any other queue, given as Options.Queue: no reasons, no
// priorities.
type clientGoQueue[K comparable] struct {
	q kworkqueue.TypedRateLimitingInterface[K]
}

func (c clientGoQueue[K]) get() (K, provenance.Reasons, bool) {
	key, shutdown := c.q.Get()
	return key, provenance.Reasons{}, shutdown
}

func (c clientGoQueue[K]) doneAndNext(key K) (next K, why provenance.Reasons, ok bool) {
	c.q.Done(key)
	return next, why, false
}

func (c clientGoQueue[K]) done(key K) { c.q.Done(key) }

func (c clientGoQueue[K]) add(key K, a addSpec) { addPlain(c.q, key, a) }

// addPlain adds key through client-go's interface: no priority, no reasons.
func addPlain[K comparable](q kworkqueue.TypedRateLimitingInterface[K], key K, a addSpec) {
	switch {
	case max(a.trigger.After, a.backoff) > 0:
		q.AddAfter(key, max(a.trigger.After, a.backoff))
	case a.rateLimited:
		q.AddRateLimited(key)
	default:
		q.Add(key)
	}
}

func (c clientGoQueue[K]) forget(key K)          { c.q.Forget(key) }
func (c clientGoQueue[K]) numRequeues(key K) int { return c.q.NumRequeues(key) }
func (c clientGoQueue[K]) len() int              { return c.q.Len() }
func (c clientGoQueue[K]) shutDown()             { c.q.ShutDown() }
func (c clientGoQueue[K]) shutDownWithDrain()    { c.q.ShutDownWithDrain() }

// addTrigger adds key for the reason t, delayed by t.After.
func addTrigger[K comparable](q queue[K], key K, t provenance.Trigger) {
	q.add(key, addSpec{trigger: t})
}
