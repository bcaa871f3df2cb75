package controller

import "fmt"

// Admission decides, for each key a worker takes from the queue, whether
// it is reconciled now: the first step of the worker pipeline. It is the hook
// through which something outside the controller (sharding's Dispatcher,
// which hands keys between replicas) learns which keys are in flight and
// keeps some from being reconciled here.
type Admission[K comparable] interface {
	// Admit is called by a worker with a key it took from the queue, before
	// Reconcile. false drops the key: it is forgotten (not retried) and not
	// reconciled, and the admission step enqueues it again itself if it should run
	// later. true starts a Reconcile that ends with Release.
	Admit(key K) bool
	// Release is called once the Reconcile of an admitted key has returned
	// and its result was handled, before the key can be handed to another
	// worker.
	Release(key K)
}

// SetAdmission makes every worker ask a before reconciling a key (see
// Admission). Call it before Run; after, it returns an error matching
// ErrAlreadyStarted. A nil a removes the step.
func (c *Controller[K]) SetAdmission(a Admission[K]) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ran {
		return fmt.Errorf("controller %q: setting an admission step: %w", c.name, ErrAlreadyStarted)
	}
	c.admission = a
	return nil
}
