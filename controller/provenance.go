package controller

import (
	"context"
	"time"

	"github.com/ctrlkit/ctrlkit/provenance"
	"github.com/ctrlkit/ctrlkit/workqueue"
)

// getWithReasons is q's GetWithRecord in the controller's words.
func getWithReasons[K comparable](q *workqueue.Queue[K]) (key K, why provenance.Reasons, shutdown bool) {
	key, rec, shutdown := q.GetWithRecord()
	return key, provenance.FromRecord(&rec), shutdown
}

// doneAndTryGetWithReasons is q's DoneAndTryGetWithRecord in the controller's words.
func doneAndTryGetWithReasons[K comparable](q *workqueue.Queue[K], key K) (next K, why provenance.Reasons, ok bool) {
	next, rec, ok := q.DoneAndTryGetWithRecord(key)
	if !ok {
		return next, why, false
	}
	return next, provenance.FromRecord(&rec), true
}

// defaultProvenanceLogLevel is the klog verbosity of the "Reconciling" line that carries a
// reconcile's reasons: kube's level for routine per-object lines (-v=2).
const defaultProvenanceLogLevel = 2

// Provenance configures reconcile provenance (Options.Provenance): every queued key carries
// the record of why it is queued, merged on dedup, handed to Reconcile in its context
// (ReasonsFrom), logged and, with a TracerProvider, put on the reconcile's span.
type Provenance struct {
	// LogLevel is the klog verbosity at which each Reconcile is announced by a "Reconciling"
	// line with its reasons. 0 means 2; negative means no line
	// (ReasonsFrom and spans still have the record).
	LogLevel int
}

// ReasonsFrom returns why the Reconcile call ctx belongs to was started: the triggers merged
// into its key while it waited in the queue (and while it was held behind a fence). It is the
// zero provenance.Reasons when the controller has no Options.Provenance, and outside a Reconcile.
func ReasonsFrom(ctx context.Context) provenance.Reasons {
	info, _ := ctx.Value(reconcileKey{}).(*reconcileInfo)
	if info == nil || info.why == nil {
		return provenance.Reasons{}
	}
	return *info.why
}

// EnqueueWithTrigger is Enqueue that names why: t joins the key's provenance.Reasons when the controller
// has provenance (and is ignored otherwise). t.After > 0 delays the add as EnqueueAfter does.
// Use it from hand-written event handlers, with provenance.EventTrigger; Watch records its triggers
// itself.
func (c *Controller[K]) EnqueueWithTrigger(key K, t provenance.Trigger) {
	c.enqueue(key, t)
}

// retryTrigger, requeueTrigger: the triggers the error policy adds a key back with.
func retryTrigger(n int) provenance.Trigger {
	return provenance.Trigger{Kind: provenance.TriggerRetry, Retry: n}
}

func requeueTrigger(after time.Duration) provenance.Trigger {
	if after > 0 {
		return provenance.Trigger{Kind: provenance.TriggerRequeueAfter, After: after}
	}
	return provenance.Trigger{Kind: provenance.TriggerRequeue}
}

func isReasonsQueue[K comparable](q any) bool {
	// The concrete type, not an interface: calls through an interface would make every
	// add's variadic argument escape to the heap.
	_, ok := q.(*workqueue.Queue[K])
	return ok
}

func manualTrigger(after time.Duration) provenance.Trigger {
	return provenance.Trigger{Kind: provenance.TriggerManual, After: max(after, 0)}
}
