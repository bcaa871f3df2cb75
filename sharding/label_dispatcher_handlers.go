package sharding

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/informer"
)

// watch registers the owner handler and the children's version trackers.
// The function it returns removes whatever was registered, and takes the
// member's owned keys off the gauge; call it even when watch fails.
func (d *labelDispatcher[K]) watch() (unwatch func(), err error) {
	var removes []func()
	unwatch = func() {
		for _, remove := range removes {
			remove()
		}
		d.mu.Lock()
		d.metrics.ownedDelta(d.cfg.Ring, d.cfg.Identity, -float64(d.owned))
		d.owned = 0
		d.mu.Unlock()
	}
	remove, err := d.watchOwners()
	if err != nil {
		return unwatch, fmt.Errorf("sharding: dispatcher of ring %q: watching %s: %w", d.cfg.Ring, d.owners.Name(), err)
	}
	removes = append(removes, remove)
	for i, c := range d.children {
		// A child informer's type is not the owners': Source cannot register a
		// typed handler, so the tracker takes client-go's events and unwraps
		// tombstones itself (it reads only resourceVersions).
		inf := c.Informer()
		r, err := inf.AddEventHandler(d.trackers[i].handler())
		if err != nil {
			return unwatch, fmt.Errorf("sharding: dispatcher of ring %q: watching %s: %w", d.cfg.Ring, c.Name(), err)
		}
		removes = append(removes, func() { _ = inf.RemoveEventHandler(r) })
	}
	return unwatch, nil
}

// ownerHandler is the dispatcher's handler of the owners informer: a typed
// handler like every other, so tombstones arrive unwrapped with their key
// and objects of the wrong type are reported by the informer, not here.
type ownerHandler[K Key, T informer.Object] struct{ d *labelDispatcher[K] }

func (h ownerHandler[K, T]) HandleAdd(obj T, _ bool) { h.d.ownerEvent(obj, 1) }
func (h ownerHandler[K, T]) HandleUpdate(_, obj T)   { h.d.ownerEvent(obj, 0) }
func (h ownerHandler[K, T]) HandleDelete(obj T, info informer.DeleteInfo) {
	// An owner whose last state failed conversion (a custom resource) was
	// most likely never shown as added: it is forgotten, not counted.
	shown := !info.ObjectMissing || info.FinalStateUnknown
	h.d.ownerDeleted(info.Key, obj, shown)
}

// ownerEvent counts the owned keys and starts drains; delta is +1 for an
// add, 0 for an update.
func (d *labelDispatcher[K]) ownerEvent(m metav1.Object, delta int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.owned += delta
	d.metrics.ownedDelta(d.cfg.Ring, d.cfg.Identity, float64(delta))
	if !d.assignedHere(m) {
		return
	}
	if m.GetLabels()[DrainLabel(d.cfg.Ring)] != "" {
		d.requestAck(cache.MetaObjectToName(m).String())
	}
}

// ownerDeleted counts an owner leaving the cache (when it was counted in)
// and forgets its state. It remembers the key as deleted when the owner's
// last state was assigned here and not draining: an owner handed over
// leaves the cache draining (the API server's watch gives the state before
// the acknowledgement) or without this member's label (a fake's may give
// the state after).
func (d *labelDispatcher[K]) ownerDeleted(k string, m metav1.Object, counted bool) {
	d.mu.Lock()
	r, again := d.recordDeletion(k, m, counted)
	d.mu.Unlock()
	if again {
		d.enqueue(r.key)
	}
}

// recordDeletion is ownerDeleted's part under d.mu; it returns the refusal
// of the key to enqueue again, if any.
func (d *labelDispatcher[K]) recordDeletion(k string, m metav1.Object, counted bool) (r refusal[K], again bool) {
	if counted {
		d.owned--
		d.metrics.ownedDelta(d.cfg.Ring, d.cfg.Identity, -1)
	}
	delete(d.acked, k)
	delete(d.waiting, k)
	if !d.assignedHere(m) || m.GetLabels()[DrainLabel(d.cfg.Ring)] != "" {
		return r, false
	}
	d.deleted[k] = deletion{at: d.clock.Now()}
	r, again = d.refused[k]
	delete(d.refused, k)
	return r, again
}
