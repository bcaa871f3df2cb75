package controller

import (
	"context"
	"errors"
	"runtime/debug"
	"time"

	"go.opentelemetry.io/otel/trace"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/provenance"
)

// work is one key on its way through the worker pipeline: what the queue
// handed out, the context the steps decorate, and what Reconcile returned.
// Each worker reuses one.
type work[K comparable] struct {
	q      queue[K]
	key    K
	why    provenance.Reasons // why the key was queued (with provenance)
	run    context.Context    // Run's: once it ends, no key starts
	ctx    context.Context    // the Reconcile's (Run's until a drain ends), decorated by the steps
	logger klog.Logger        // the worker's
	rlog   klog.Logger        // the Reconcile's: with key and reconcileID (contextStep)
	id     types.UID

	span   trace.Span         // tracingStep's
	cancel context.CancelFunc // timeoutStep's

	res      Result
	err      error
	handled  bool // Reconcile returned and handle ran (not a panic passing through)
	requeued bool // handle put the key back
}

// step is one optional stage of the worker pipeline, built once when Run
// starts (see pipeline). enter runs before Reconcile, in pipeline order;
// false ends the key's way there (the step took care of it: dropped it, held
// it back). exit runs after the result was handled, in reverse order, for
// every step whose enter returned true, also when a panic passes through.
type step[K comparable] interface {
	enter(w *work[K]) bool
	exit(w *work[K])
}

// worker is one worker's loop: it waits for a key, runs it through the
// pipeline and, while keys are ready, hands each back and takes the next in
// one step of the queue (one lock hand-off instead of two). It returns once
// the queue is shut down and empty.
// Keys start while ctx lives and reconcile with rctx.
func (c *Controller[K]) worker(ctx, rctx context.Context, q queue[K], steps []step[K], logger klog.Logger) {
	w := &work[K]{q: q, logger: logger}
	for {
		key, why, shutdown := q.get()
		if shutdown {
			return
		}
		c.inFlight.Add(1)
		w.key, w.why = key, why
		for c.processChained(ctx, rctx, w, steps) {
		}
	}
}

// processChained runs w's key, counted in flight by the caller, through the
// pipeline and hands it back. When another key is ready it takes it in the
// same step, still counted in flight, and returns true with w holding it;
// otherwise it leaves the in-flight count and returns false.
func (c *Controller[K]) processChained(ctx, rctx context.Context, w *work[K], steps []step[K]) bool {
	handedBack := false
	defer func() {
		if !handedBack { // a panic passing through (RePanic)
			w.q.done(w.key)
			c.inFlight.Add(-1)
		}
	}()
	c.process(ctx, rctx, w, steps)
	handedBack = true
	// Done before leaving the in-flight count, so Idle never sees a key that
	// Done is about to put back as "nothing to do".
	if next, why, ok := w.q.doneAndNext(w.key); ok {
		w.key, w.why = next, why
		return true
	}
	c.inFlight.Add(-1)
	return false
}

// process is the pipeline for one key: admit, hold, decorate the context,
// reconcile, handle the result, release. The steps are the optional parts;
// the caller hands the key back (Done) afterwards, also when it panics.
func (c *Controller[K]) process(ctx, rctx context.Context, w *work[K], steps []step[K]) {
	if ctx.Err() != nil {
		// Shutting down: keys not yet started are not started now; the next
		// run relists and enqueues them again.
		return
	}
	w.run, w.ctx, w.id, w.handled, w.requeued = ctx, rctx, "", false, false
	entered := 0
	defer func() {
		for i := entered - 1; i >= 0; i-- {
			steps[i].exit(w)
		}
	}()
	for _, s := range steps {
		if !s.enter(w) {
			return
		}
		entered++
	}
	w.res, w.err = c.reconcile(w.ctx, w.key)
	w.requeued = c.handle(w)
	w.handled = true
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
func (c *Controller[K]) handle(w *work[K]) (requeued bool) {
	q, key, res, err, logger := w.q, w.key, w.res, w.err, w.rlog
	switch {
	case err == nil:
		// Success clears the failure history whatever comes next.
		q.forget(key)
		c.retries.clear(key)
		switch {
		case res.RequeueAfter > 0:
			c.cm.result(resultRequeueAfter)
			after := res.RequeueAfter
			if c.jitter > 0 {
				after += time.Duration(c.jitter * c.random() * float64(after))
			}
			q.add(key, addSpec{trigger: requeueTrigger(after), priority: res.Priority})
			return true
		case res.Requeue:
			c.cm.result(resultRequeue)
			q.add(key, addSpec{trigger: requeueTrigger(0), priority: res.Priority, rateLimited: true})
			return true
		default:
			c.cm.result(resultSuccess)
		}
	case errors.Is(w.ctx.Err(), context.Canceled) && (errors.Is(err, context.Canceled) || errors.Is(err, context.Cause(w.ctx))):
		// The controller is stopping and the Reconcile's context ended under it (net/http
		// reports the context's cause, ErrShutdown for one, rather than context.Canceled): not a
		// failure of the key. It goes back to the queue untouched by the error policy (no
		// backoff, no failure counted) and is logged quietly, so a clean shutdown logs no error.
		logger.V(2).Info("Reconcile interrupted by shutdown; the key stays queued", "err", err)
		q.add(key, addSpec{trigger: retryTrigger(q.numRequeues(key)), priority: res.Priority})
		return true
	case errors.Is(err, informer.ErrNamespaceNotWatched):
		// The key was queued before its namespace left the scope of an informer Reconcile reads
		// (informer.InNamespaceSet). Not a failure: retrying cannot help, and should the
		// namespace come back, its informer replays its objects and enqueues the key again. So
		// it is forgotten, counted as a success (nothing was left to do) and logged quietly.
		q.forget(key)
		c.retries.clear(key)
		c.cm.result(resultSuccess)
		logger.V(2).Info("Reconcile read a namespace no longer watched; forgetting the key", "err", err)
	case IsTerminal(err):
		c.cm.failed(true)
		q.forget(key)
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
