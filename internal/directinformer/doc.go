// Package directinformer is a client-go SharedIndexInformer without a queue between
// the reflector and the handlers.
//
// client-go's informer queues each change in a FIFO, pops it on a goroutine of
// its own, and hands it to a processor that buffers it again per handler, with
// two goroutines and a ring buffer per handler. Here client-go's Reflector
// writes straight into the indexer, and each change is handed to the handlers
// on the goroutine that applied it, so an informer costs the reflector's own
// goroutines and nothing per handler (docs/performance.md, many clusters).
//
// What a handler sees is what client-go's informer gives it: events in the
// order they were applied, never two calls of one handler at once, an add per
// cached object (isInInitialList true) for a handler added after the start, a
// tombstone (cache.DeletedFinalStateUnknown) for an object a relist found
// gone, resync updates to handlers that asked for them, and HasSynced once it
// has seen the initial list. The difference: handlers run on the reflector's
// goroutine, so a slow handler holds up the watch. Handlers should do what
// controllers' handlers do, map the object to keys and enqueue them.
package directinformer
