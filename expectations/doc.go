// Package expectations keeps a controller from acting on a stale informer cache.
//
// A controller that creates three Pods sees them in its cache only when the watch events
// arrive. If it reconciles again before that, the cache still shows too few Pods and it
// creates three more. kube-controller-manager's ReplicaSet, Job and DaemonSet controllers
// avoid that with "expectations": before writing they record how many creations and deletions
// they expect to observe; the informer handlers count the events down; and a sync only acts
// when the key is Satisfied. This package is that mechanism, generic over the key type and
// importable.
//
// # When to use it
//
// Use it in any controller that creates or deletes several children per sync from cached
// state (replica-style controllers). A controller that only updates its own object does not
// need it.
//
// # The rules
//
// Satisfied(key) is true when the key has no record, when every expected event was observed
// (both counts <= 0; counts may go negative when more events arrive than expected), or when
// the record is older than the TTL (DefaultTTL, 5 minutes): a lost watch event then only
// delays the controller, which resyncs from its cache, instead of blocking it forever.
// SetExpectations (and ExpectCreations, ExpectDeletions) replaces the record and restamps it,
// so an over-observed previous round never eats into the next. Lower and Raise adjust an
// existing record and do nothing without one. Expired records are kept until set again or
// deleted; call DeleteExpectations when the controller object goes away.
//
// UIDTracking counts deletions by UID: a deletion can be seen twice (an update that sets
// deletionTimestamp and then the delete event, or a DeletedFinalStateUnknown tombstone), and
// only the first sighting of an expected UID lowers the count.
//
// # Concurrency and cost
//
// Every method is safe for concurrent use. The key space is split over 64 shards, each with
// its own lock, and the counters are atomics, so observing an event on an existing key takes
// only a shard read lock and does not allocate: workers on unrelated keys do not serialize.
// Transitions are logged at V(4) with the key (see WithLogger); the verbosity is checked
// before any log argument is built.
//
// # Example
//
//	exp := expectations.New[string]()
//
//	// In the sync, before creating:
//	if !exp.Satisfied(key) {
//		return nil // the cache is behind; the informer events will requeue the key
//	}
//	exp.ExpectCreations(key, diff)
//	for range diff {
//		if err := createPod(ctx); err != nil {
//			exp.CreationObserved(key) // this one will never be seen
//		}
//	}
//
//	// In the Pod informer's add handler:
//	exp.CreationObserved(ownerKey)
package expectations
