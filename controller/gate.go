package controller

import "fmt"

// DispatchGate decides, for each key a worker takes from the queue, whether
// it is reconciled now. It is the hook through which something outside the
// controller (a sharding.Gate, which hands keys between replicas) learns
// which keys are in flight and keeps some from being dispatched.
type DispatchGate[K comparable] interface {
	// Admit is called by a worker with a key it took from the queue, before
	// Reconcile. false drops the key: it is forgotten (not retried) and not
	// reconciled, and the gate enqueues it again itself if it should run
	// later. true starts a Reconcile that ends with Release.
	Admit(key K) bool
	// Release is called once the Reconcile of an admitted key has returned
	// and its result was handled, before the key can be handed to another
	// worker.
	Release(key K)
}

// SetDispatchGate makes every worker ask g before reconciling a key (see
// DispatchGate). Call it before Run; after, it returns an error matching
// ErrAlreadyStarted. A nil g removes the gate.
func (c *Controller[K]) SetDispatchGate(g DispatchGate[K]) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ran {
		return fmt.Errorf("controller %q: setting a dispatch gate: %w", c.name, ErrAlreadyStarted)
	}
	c.gate = g
	return nil
}
