package sharding

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// deletion is an owner this member saw deleted while it was assigned here:
// the one kind of key the dispatcher admits without caching it. The entry
// lives until a Reconcile of the key was admitted and the ring's
// LeaseDuration has passed (for the events its children's deletions bring),
// or until the key is cached here again; so the set holds recent deletions
// only.
type deletion struct {
	at       time.Time
	admitted bool
}

// refusal is a key refused because it was not cached and not known deleted.
// The controller's handler of an owner's deletion may run before the
// dispatcher's (each listener of an informer has its own goroutine): when the
// dispatcher's then records the deletion, it enqueues the key again. Kept
// for the ring's LeaseDuration.
type refusal[K Key] struct {
	key K
	at  time.Time
}

// waiting is a key held back by its children barrier.
type waiting[K Key] struct {
	key   K // to enqueue when the barrier passes
	since time.Time
}

// ownerState reads the cached owner of key.
func (d *labelDispatcher[K]) ownerState(key string) (obj metav1.Object, mine, draining bool) {
	o, ok, err := d.owners.Informer().GetStore().GetByKey(key)
	if err != nil || !ok {
		return nil, false, false
	}
	m, err := meta.Accessor(o)
	if err != nil {
		return nil, false, false
	}
	return m, d.assignedHere(m), m.GetLabels()[DrainLabel(d.cfg.Ring)] != ""
}

// assignedHere reports whether m is assigned to this member's process: its
// label and the holder the sharder stamped it for. A key stamped for an
// earlier process of the same identity is not this one's: the sharder
// assigns it again once it sees the Lease's new holder.
func (d *labelDispatcher[K]) assignedHere(m metav1.Object) bool {
	return m.GetLabels()[Label(d.cfg.Ring)] == d.cfg.Identity && m.GetAnnotations()[HolderAnnotation(d.cfg.Ring)] == d.holder
}

// Admit reports whether a worker may reconcile key now; see Dispatcher. An
// admitted key must be Released after its Reconcile.
func (d *labelDispatcher[K]) Admit(key K) bool {
	k := key.String()
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.acking[k] {
		// The acknowledgement's reply may come after the owner was given
		// back to this member: look again once it has.
		d.afterAck[k] = key
		return false
	}
	obj, mine, draining := d.ownerState(k)
	switch {
	case obj == nil:
		// Not cached: admitted only as a deletion this member saw. Anything
		// else is a key handed over (its owner left the label selector, and
		// a retry, requeue or child event may still bring it here), or one
		// whose owner is not here yet (its add event enqueues it).
		del, ok := d.deleted[k]
		if !ok {
			d.refused[k] = refusal[K]{key: key, at: d.clock.Now()}
			return false
		}
		del.admitted = true
		d.deleted[k] = del
	case !mine:
		return false
	case draining:
		d.requestAck(k)
		return false
	default:
		delete(d.deleted, k)
		delete(d.acked, k)
		if !d.barrierPassed(k, key, obj) {
			return false
		}
	}
	d.inFlight[k] = true
	return true
}

// barrierPassed reports whether obj's children barrier has been delivered, or
// timed out; otherwise it remembers key to enqueue later. d.mu is held.
func (d *labelDispatcher[K]) barrierPassed(k string, key K, obj metav1.Object) bool {
	f := parseBarrier(obj.GetAnnotations()[barrierAnnotation(d.cfg.Ring)])
	if len(f) == 0 || passed(f, d.trackers) {
		delete(d.waiting, k)
		return true
	}
	p, ok := d.waiting[k]
	if !ok {
		p = waiting[K]{key: key, since: d.clock.Now()}
		d.waiting[k] = p
	}
	if d.clock.Since(p.since) < d.timeout {
		return false
	}
	delete(d.waiting, k)
	d.metrics.barrierTimedOut(d.cfg.Ring, d.cfg.Identity)
	d.logger.Info("Children barrier not reached in time; reconciling anyway",
		"key", k, "waitingFor", describe(f, d.trackers), "timeout", d.timeout)
	return true
}

// Release ends an admitted key's Reconcile; a drain that waited for it is
// acknowledged now.
func (d *labelDispatcher[K]) Release(key K) {
	k := key.String()
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.inFlight, k)
	if obj, mine, draining := d.ownerState(k); obj != nil && mine && draining {
		d.requestAck(k)
	}
}

// releaseWaiting enqueues the held-back keys whose barrier has passed or
// timed out, and forgets the deletions whose time is over.
func (d *labelDispatcher[K]) releaseWaiting() {
	d.mu.Lock()
	for k, del := range d.deleted {
		if del.admitted && d.clock.Since(del.at) >= d.cfg.LeaseDuration {
			delete(d.deleted, k)
		}
	}
	for k, r := range d.refused {
		if d.clock.Since(r.at) >= d.cfg.LeaseDuration {
			delete(d.refused, k)
		}
	}
	var ready []K
	for k, p := range d.waiting {
		obj, mine, draining := d.ownerState(k)
		if obj == nil || !mine || draining {
			// Deleted or leaving: its own events take it from here.
			delete(d.waiting, k)
			continue
		}
		// Kept until Admit lets the key through, so the time-out runs
		// from the first refusal.
		if passed(parseBarrier(obj.GetAnnotations()[barrierAnnotation(d.cfg.Ring)]), d.trackers) ||
			d.clock.Since(p.since) >= d.timeout {
			ready = append(ready, p.key)
		}
	}
	d.mu.Unlock()
	for _, k := range ready {
		d.enqueue(k)
	}
}
