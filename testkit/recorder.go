package testkit

import (
	"context"
	"maps"
	"sync"

	"github.com/ctrlkit/ctrlkit/controller"
)

// Recorder is a Reconciler that only records the keys it is called with: for tests of the
// wiring around a controller (watches, predicates, a Manager's gates and election) rather than
// of its logic. The zero value is ready to use and safe for concurrent use.
type Recorder[K comparable] struct {
	mu   sync.Mutex
	seen map[K]int
}

var _ controller.Reconciler[controller.Key] = (*Recorder[controller.Key])(nil)

// Reconcile records key and succeeds.
func (r *Recorder[K]) Reconcile(_ context.Context, key K) (controller.Result, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.seen == nil {
		r.seen = map[K]int{}
	}
	r.seen[key]++
	return controller.Result{}, nil
}

// Count returns how many times key was reconciled.
func (r *Recorder[K]) Count(key K) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.seen[key]
}

// Keys returns every key reconciled, with its count.
func (r *Recorder[K]) Keys() map[K]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.seen)
}
