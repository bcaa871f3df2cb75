// Package provenance is the vocabulary of reconcile provenance: why a key is
// queued. A Trigger is one cause (an informer event, a resync, a retry, a
// Requeue or RequeueAfter, an Enqueue call, a released write fence, pacing);
// Reasons is the bounded record of every trigger merged into a key while it
// waited, handed to its Reconcile. A controller built with
// controller.Options.Provenance records them; controller.ReasonsFrom(ctx)
// returns a Reconcile's Reasons, and Controller.EnqueueWithTrigger adds a key
// with a Trigger of the caller's (EventTrigger, from hand-written handlers).
//
//	why := controller.ReasonsFrom(ctx)
//	if why.Count(provenance.TriggerRetry) > 0 { ... }
//	logger.V(2).Info("Reconciling", "reasons", why) // "2 triggers (event=1 retry=1); first: ..."
//
// The record is held by the queue as opaque causes (workqueue.Cause); this
// package gives them their meaning.
package provenance
