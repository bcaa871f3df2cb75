package controller

import (
	"context"
	"time"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/workqueue"
)

// Trigger is one cause of a key being queued: an informer event (with the informer, the event
// type and the object that mapped to the key), a resync, a retry, a Requeue or RequeueAfter,
// an Enqueue call, a released fence. It is workqueue.Trigger; its kinds are the
// workqueue.Trigger* constants.
type Trigger = workqueue.Trigger

// Reasons is the bounded record of why a key was queued: per-kind counts of the triggers
// merged while it waited, with the first and the last in full. It is workqueue.Reasons.
type Reasons = workqueue.Reasons

// DefaultProvenanceLogLevel is the klog verbosity of the "Reconciling" line that carries a
// reconcile's reasons: kube's level for routine per-object lines (-v=2).
const DefaultProvenanceLogLevel = 2

// Provenance configures reconcile provenance (Options.Provenance): every queued key carries
// the record of why it is queued, merged on dedup, handed to Reconcile in its context
// (ReasonsFrom), logged and, with a TracerProvider, put on the reconcile's span.
type Provenance struct {
	// LogLevel is the klog verbosity at which each Reconcile is announced by a "Reconciling"
	// line with its reasons. 0 means DefaultProvenanceLogLevel (2); negative means no line
	// (ReasonsFrom and spans still have the record).
	LogLevel int
}

// ReasonsFrom returns why the Reconcile call ctx belongs to was started: the triggers merged
// into its key while it waited in the queue (and while it was held behind a fence). It is the
// zero Reasons when the controller has no Options.Provenance, and outside a Reconcile.
func ReasonsFrom(ctx context.Context) Reasons {
	info, _ := ctx.Value(reconcileKey{}).(*reconcileInfo)
	if info == nil || info.why == nil {
		return Reasons{}
	}
	return *info.why
}

// EventTrigger describes an informer event on obj, for EnqueueWithTrigger from hand-written
// handlers: source is the informer's name (Informer.Name), ev the event type.
func EventTrigger[T informer.Object](source string, ev workqueue.EventType, obj T) Trigger {
	return Trigger{Kind: workqueue.TriggerEvent, Event: ev, Source: source, Namespace: obj.GetNamespace(), Name: obj.GetName()}
}

// EnqueueWithTrigger is Enqueue that names why: t joins the key's Reasons when the controller
// has provenance (and is ignored otherwise). t.After > 0 delays the add as EnqueueAfter does.
// Use it from hand-written event handlers, with EventTrigger; Watch records its triggers
// itself.
func (c *Controller[K]) EnqueueWithTrigger(key K, t Trigger) {
	c.enqueue(key, t)
}

// retryTrigger, requeueTrigger: the triggers the error policy adds a key back with.
func retryTrigger(n int) Trigger { return Trigger{Kind: workqueue.TriggerRetry, Retry: n} }

func requeueTrigger(after time.Duration) Trigger {
	if after > 0 {
		return Trigger{Kind: workqueue.TriggerRequeueAfter, After: after}
	}
	return Trigger{Kind: workqueue.TriggerRequeue}
}

func isReasonsQueue[K comparable](q any) bool {
	// The concrete type, not an interface: calls through an interface would make every
	// add's variadic argument escape to the heap.
	_, ok := q.(*workqueue.Queue[K])
	return ok
}

func manualTrigger(after time.Duration) Trigger {
	return Trigger{Kind: workqueue.TriggerManual, After: max(after, 0)}
}
