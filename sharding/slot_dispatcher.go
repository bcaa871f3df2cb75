package sharding

import (
	"context"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/informer"
)

// slotDispatcher is a Dispatcher in server-side mode (see NewSlotDispatcher).
type slotDispatcher[K Key] struct {
	keeper  *SlotKeeper
	field   HashField
	owners  Source
	enqueue func(K)
	// watchOwners registers the owners handler; it returns the function
	// that removes it.
	watchOwners func() (func(), error)

	mu       sync.Mutex
	inFlight map[K]int      // admitted key -> its slot
	deleted  map[string]int // keys seen deleted while their slot was admitted here -> the slot
	// refused are the cached keys refused because their slot was not
	// admitted yet -> the slot: enqueued when it is.
	refused map[K]int
}

// NewSlotDispatcher returns the server-side Dispatcher of a controller over
// owners (the sharded resource, from the member's ShardSet factory, which
// follows the keeper's slots); enqueue is the controller's Enqueue. A key is
// reconciled only while its slot is admitted by the member's SlotKeeper, and
// a key refused because its slot was not admitted yet is enqueued again
// once it is.
func NewSlotDispatcher[K Key, T informer.Object](keeper *SlotKeeper, owners informer.Informer[T], enqueue func(K)) (*Dispatcher[K], error) {
	switch {
	case keeper == nil:
		return nil, &ConfigError{Field: "keeper", Rule: "slot keeper must not be nil"}
	case owners == nil:
		return nil, &ConfigError{Field: "owners", Rule: "owners informer must not be nil"}
	case enqueue == nil:
		return nil, &ConfigError{Field: "enqueue", Rule: "enqueue function must not be nil"}
	}
	d := &slotDispatcher[K]{keeper: keeper, field: keeper.cfg.HashField, owners: owners, enqueue: enqueue,
		inFlight: map[K]int{}, deleted: map[string]int{}, refused: map[K]int{}}
	d.watchOwners = func() (func(), error) {
		reg, err := owners.AddHandler(informer.HandlerFuncs[T]{
			OnAdd: func(obj T, _ bool) {
				d.mu.Lock()
				delete(d.deleted, cacheKey(obj))
				d.mu.Unlock()
			},
			// A real deletion of a key admitted here is reconciled once
			// more (the controller cleans up), here and only here; an
			// object that left the scope (its slot dropped) was not
			// deleted, and OnDelete does not see it.
			OnDelete: func(obj T) {
				slot := d.slotOf(obj)
				if keeper.admittedSlot(slot) {
					d.mu.Lock()
					d.deleted[cacheKey(obj)] = slot
					d.mu.Unlock()
				}
			},
		})
		if err != nil {
			return nil, err
		}
		return func() { _ = owners.RemoveHandler(reg) }, nil
	}
	return &Dispatcher[K]{impl: d}, nil
}

// cacheKey is obj's informer key, "namespace/name" or "name".
func cacheKey(obj any) string {
	k, _ := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	return k
}

// slotOf is the slot of an owner object, -1 when it has no metadata.
func (d *slotDispatcher[K]) slotOf(obj any) int {
	m, err := meta.Accessor(obj)
	if err != nil {
		return -1
	}
	if d.field == HashNamespace {
		return slotOf(m.GetNamespace())
	}
	return slotOf(string(m.GetUID()))
}

// Admit admits key when its owner is cached (or was seen deleted here) and
// its slot is admitted.
func (d *slotDispatcher[K]) Admit(key K) bool {
	slot := -1
	obj, cached, err := d.owners.Informer().GetIndexer().GetByKey(key.String())
	if err == nil && cached {
		slot = d.slotOf(obj)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if !cached {
		s, ok := d.deleted[key.String()]
		if !ok {
			return false // another member's: its owner is not in this member's slots
		}
		delete(d.deleted, key.String())
		slot = s
	}
	if !d.keeper.enter(slot) {
		if cached {
			d.refused[key] = slot
		}
		return false
	}
	delete(d.refused, key)
	d.inFlight[key] = slot
	return true
}

// Release ends the reconcile Admit started.
func (d *slotDispatcher[K]) Release(key K) {
	d.mu.Lock()
	slot, ok := d.inFlight[key]
	delete(d.inFlight, key)
	d.mu.Unlock()
	if ok {
		d.keeper.exit(slot)
	}
}

// Run registers the dispatcher's handler and, each time the keeper admits
// slots, enqueues the keys refused in them, until ctx ends.
func (d *slotDispatcher[K]) Run(ctx context.Context) error {
	unwatch, err := d.watchOwners()
	if err != nil {
		return fmt.Errorf("sharding: slot dispatcher over %s: %w", d.owners.Name(), err)
	}
	defer unwatch()
	gained := make(chan slotSet, 1)
	unsubscribe := d.keeper.onGained(func(s slotSet) {
		for {
			select {
			case gained <- s:
				return
			case prev := <-gained:
				s |= prev
			}
		}
	})
	defer unsubscribe()
	// Slots admitted before Run started.
	d.enqueueRefused(d.keeper.admittedSlots())
	for {
		select {
		case <-ctx.Done():
			return nil
		case s := <-gained:
			d.enqueueRefused(s)
		}
	}
}

// enqueueRefused enqueues the keys refused in slots and forgets them, and
// forgets those no longer cached (their slot left the member).
func (d *slotDispatcher[K]) enqueueRefused(slots slotSet) {
	d.mu.Lock()
	var keys []K
	for k, slot := range d.refused {
		switch {
		case slots.has(slot):
			keys = append(keys, k)
			delete(d.refused, k)
		default:
			if _, ok, _ := d.owners.Informer().GetIndexer().GetByKey(k.String()); !ok {
				delete(d.refused, k)
			}
		}
	}
	d.mu.Unlock()
	for _, k := range keys {
		d.enqueue(k)
	}
}
