// Package workqueue is the work queue a controller's workers pull keys from: deduplicating,
// delaying, rate-limiting and prioritised, in one generic type.
//
// It has the semantics of client-go's k8s.io/client-go/util/workqueue and implements its
// TypedRateLimitingInterface, so an existing controller switches with one line:
//
//	queue := workqueue.New(workqueue.WithName[string]("foo"))
//
// Options carry the item type, so a rate limiter for another item type is a compile error:
// workqueue.WithRateLimiter(limiter) with a TypedRateLimiter[int] cannot configure a
// Queue[string]. New infers the item type from its options; with none, name it: New[string]().
//
// # The rules
//
//   - Dedup: an item added many times before a worker gets it is handed out once.
//   - Exclusive processing: Get hands an item to one worker; while that worker has it (until
//     Done), adding it again only marks it, and it is handed out again after Done. Two workers
//     never process the same item at the same time.
//   - Get blocks until an item is ready or the queue shuts down. After ShutDown, adds are
//     ignored, Get hands out what is still ready and then reports shutdown. ShutDownWithDrain
//     also waits until every ready item has been handed out and every handed-out item is Done.
//   - Delays: AddAfter(item, d) adds item once d has passed (d <= 0 adds at once); an item that
//     is already waiting keeps the earlier ready time. One goroutine with one timer serves all
//     delays, whatever their number.
//   - Rate limits: AddRateLimited asks a client-go TypedRateLimiter for the delay (by default
//     client-go's controller default: per-item exponential backoff from 5 ms to 1000 s, and an
//     overall 10 qps bucket with burst 100); Forget resets an item's backoff, NumRequeues reports
//     it.
//   - Holds: a delayed add with AddOpts.Hold keeps the item out until the delay ends; adds
//     meanwhile, and an add while it is being processed, join it instead of handing it out
//     early. A retry added so is a backoff that events cannot inflate (kubernetes#132805);
//     client-go has no such add. With AddOpts.WakeAfter, the first add that joins ends the
//     hold that long after the held add: an event waits a bounded time, once per hold.
//   - Priorities: AddWithOpts(AddOpts{Priority: p}, items...) hands out higher priorities
//     first, FIFO within a priority. An item added again keeps the higher of its priorities.
//     Delayed and rate-limited adds keep their priority through the delay.
//   - Flows: with WithFlows, each item belongs to a flow (a namespace, a tenant) and, inside a
//     priority, the flows with ready items take turns (one item each, or WithFlowWeights' weight),
//     FIFO within a flow: one flow's burst does not delay another flow's items behind it.
//   - Aging: with WithAging(bound), an item that waited the bound below the highest priority
//     with ready items moves to the back of that priority, so no priority starves.
//   - Metrics: with WithName and WithMetricsProvider, the queue reports client-go's seven
//     workqueue metrics through a client-go MetricsProvider.
//   - Provenance: with WithProvenance, every add's Cause (AddOpts.Cause) is merged into a
//     bounded per-item Record (counts per kind, the first and the last cause), which
//     GetWithRecord hands out with the item. A delayed add's cause joins when the delay ends.
//     A Cause is the caller's description: the queue stores and counts it, and gives it no
//     meaning (ctrlkit's controller turns its triggers into causes and records back into
//     reasons). Off by default, and then it costs no allocation.
//
// # Limits
//
// A queue holds at most 2^31 distinct items at once (ready, being processed or waiting for a
// delay): its entries are addressed by 32-bit indices. An add of an item the queue does not
// hold is dropped while it is full; items it holds are added, delayed and handed out as usual.
// Memory follows the queue down after a burst once the items added last have been handed out
// and are Done.
//
// The queue keeps no item reachable once it is Done and not added again (nor waiting for a
// delay), as client-go's does.
//
// # The worker loop
//
// Every worker runs the same loop; Done must be called for every item Get returned:
//
//	for {
//		key, shutdown := queue.Get()
//		if shutdown {
//			return
//		}
//		err := reconcile(key)
//		switch {
//		case err == nil:
//			queue.Forget(key) // success: reset the key's backoff
//		case queue.NumRequeues(key) < 15:
//			queue.AddRateLimited(key) // retry later, backing off
//		default:
//			queue.Forget(key) // give up
//		}
//		queue.Done(key)
//	}
//
// # When to use it
//
// Use it wherever client-go's rate-limiting queue is used, and where priorities are wanted (for
// example to let user-triggered changes overtake a resync of every object) without
// controller-runtime's priority queue, which is slower. docs/design/workqueue.md explains the
// data structure and docs/performance.md has the measurements.
//
// # Differences from client-go
//
//   - Done of an item that is not being processed does nothing (client-go may queue a second
//     copy of an item that is already queued).
//   - ShutDownWithDrain waits for ready items too, not only for processing ones.
//   - Metrics need an explicit provider: client-go's global SetProvider is not visible here.
//   - Delayed items that are due are counted by Len, and handed out by a Get that would
//     otherwise wait, even before the delay goroutine wakes up: a fake clock step takes effect
//     at once.
package workqueue
