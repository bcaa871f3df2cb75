// Package propagator is a complete, minimal controller: it copies every ConfigMap of a source
// namespace labelled ctrlkit.dev/propagate=true into each namespace its target selector
// matches, and keeps the copies in sync.
//
// It is the smallest controller that still shows the whole pattern:
//
//   - one Reconciler over the key of the source ConfigMap; every event that can change what a
//     source's copies should be maps to that key: the source itself, any copy (through its
//     ctrlkit.dev/propagated-from annotation, so a deleted or edited copy is repaired), and any
//     namespace (its labels may have changed which namespaces are targets);
//   - level-triggered: Reconcile does not care which event woke it; it compares the desired
//     copies with the cached ones and creates, updates or deletes the difference;
//   - controller.Terminal for bad input: an unparsable ctrlkit.dev/target-namespaces selector
//     is logged once and not retried (retrying cannot fix a typo; editing the ConfigMap brings
//     the key back);
//   - Result.RequeueAfter for what no event announces: a target namespace whose ConfigMap of
//     that name belongs to someone else is never overwritten, and looked at again later;
//   - an index (informer AddIndex) to find a source's copies without listing every ConfigMap.
//
// Copies are found by annotation rather than owner references because owner references cannot
// cross namespaces. Deletes carry a UID precondition so they never remove a newcomer of the same
// name, and are made only when the API server, not the cache alone, says the copy is unwanted. A copy is deleted when its source is deleted or unlabelled, or when its namespace stops
// matching.
//
// # Use
//
//	c, err := propagator.New(mgr.Factory(), client, propagator.Options{SourceNamespace: "platform"})
//	if err != nil { ... }
//	_ = mgr.Add(c)
package propagator
