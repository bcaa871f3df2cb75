package sharding

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
)

// Dispatcher is a member's admission step for one controller, in either
// mode: give it to the controller (controller.Controller's SetAdmission), so
// that a worker asks Admit before each Reconcile and calls Release after,
// and Run it for as long as the controller runs. NewDispatcher builds one
// for a ring in label mode, NewSlotDispatcher for one in server-side mode.
type Dispatcher[K Key] struct {
	impl admission[K]
}

// admission is what each mode's dispatcher does.
type admission[K Key] interface {
	Admit(key K) bool
	Release(key K)
	Run(ctx context.Context) error
}

// Admit reports whether key may be reconciled by this member now. A key
// refused because its turn has not come yet (a barrier, a slot not yet
// admitted) is enqueued again by the Dispatcher when it has.
func (d *Dispatcher[K]) Admit(key K) bool { return d.impl.Admit(key) }

// Release ends the reconcile Admit started.
func (d *Dispatcher[K]) Release(key K) { d.impl.Release(key) }

// Run registers the Dispatcher's handlers and does its background work
// until ctx ends; it removes its handlers and waits for its goroutines
// before returning.
func (d *Dispatcher[K]) Run(ctx context.Context) error { return d.impl.Run(ctx) }

// Source is what a Dispatcher needs of a child informer; every
// informer.Informer[T] is one.
type Source interface {
	Name() string
	GVR() schema.GroupVersionResource
	Informer() cache.SharedIndexInformer
}

// Key is what a Dispatcher needs of a controller's key: comparable, with
// String giving the informer's cache key ("namespace/name", or "name"), as
// controller.Key does.
type Key interface {
	comparable
	String() string
}
