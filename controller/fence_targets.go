package controller

import (
	"maps"
	"slices"
	"sync"

	"k8s.io/klog/v2"

	"github.com/ctrlkit/ctrlkit/provenance"
)

// The fence table's informers: which release handlers it registers itself,
// which a Watch's registration feeds, and how they are handed from one Run to
// the next.

// target returns the table's target for id, registering mk's on first use.
func (ft *fenceTable[K]) target(id any, mk func() *fenceTarget) *fenceTarget {
	ft.regMu.Lock()
	t, ok := ft.targets[id]
	if !ok {
		t = mk()
		ft.targets[id] = t
	}
	ft.regMu.Unlock()
	ft.registerTarget(t)
	return t
}

// declare makes t known before Run's workers start: it serves Auto for its resource, and its
// handler is registered now unless fed, in which case a Watch's handler registration shows
// it the informer's events (feed).
func (ft *fenceTable[K]) declare(t *fenceTarget, fed bool) {
	t.fed = fed // before target registers it; a target already known keeps its own
	t = ft.target(t.id, func() *fenceTarget { return t })
	ft.regMu.Lock()
	t.declared = true
	ft.byResource[t.gr] = t
	ft.regMu.Unlock()
}

// feed returns the target of the informer id when a Watch's handler feeds it, else nil.
func (ft *fenceTable[K]) feed(id any) *fenceTarget {
	ft.regMu.Lock()
	defer ft.regMu.Unlock()
	if t := ft.targets[id]; t != nil && t.fed {
		return t
	}
	return nil
}

// observer is how the events of t's informer reach the table.
func (ft *fenceTable[K]) observer(t *fenceTarget) func(namespace, name, rv string, deleting, deleted bool) {
	return func(namespace, name, rv string, deleting, deleted bool) {
		ft.observe(objRef{t: t, namespace: namespace, name: name}, rv, deleting, deleted)
	}
}

func (ft *fenceTable[K]) registerTarget(t *fenceTarget) {
	if t.fed {
		return // a Watch's registration shows it the events
	}
	t.once.Do(func() {
		remove, err := t.register(ft.observer(t))
		ft.regMu.Lock()
		t.remove, t.err = remove, err
		ft.regMu.Unlock()
		if err != nil {
			ft.logger.Error(err, "Cannot watch for write fences; fences on this informer wait for their TTL", "informer", t.name)
		}
	})
}

// forget drops the target of informer id once its watch ended (WatchUntil's context: a
// cluster disengaged, a resource gone), unless a Watch declared it: its release handler is
// removed and the fences on its objects are dropped, queuing the keys they held (an Admission
// step drops those that mean nothing any more), so that neither the informer nor its cache
// stays reachable from the table, which outlives each Run.
func (ft *fenceTable[K]) forget(id any) {
	ft.regMu.Lock()
	t := ft.targets[id]
	if t == nil || t.declared {
		ft.regMu.Unlock()
		return
	}
	delete(ft.targets, id)
	if ft.byResource[t.gr] == t {
		delete(ft.byResource, t.gr)
	}
	remove := t.remove
	t.remove = nil
	ft.regMu.Unlock()
	if remove != nil {
		if err := remove(); err != nil {
			ft.logger.V(2).Info("Removing the fence handler failed", "informer", t.name, "err", err)
		}
	}
	var released []objRef
	var keys []K
	ft.mu.Lock()
	for ref, ks := range ft.objs {
		if ref.t != t {
			continue
		}
		for _, k := range slices.Clone(ks) {
			if ft.dropLocked(k, ref) {
				released, keys = append(released, ref), append(keys, k)
			}
		}
	}
	for ref := range ft.deletes {
		if ref.t == t {
			delete(ft.deletes, ref)
		}
	}
	ft.remembered.Store(int64(len(ft.deletes)))
	ft.mu.Unlock()
	for i, k := range keys {
		ft.requeue(k, provenance.Trigger{Kind: provenance.TriggerFence, Source: t.name, Namespace: released[i].namespace, Name: released[i].name})
	}
}

// unregister removes the release handlers (Run is returning). The open fences stay for the
// next Run; the keys held for this Run's queue are not held any more: the next Run's watches
// queue every key again.
func (ft *fenceTable[K]) unregister() {
	ft.regMu.Lock()
	var removes []func() error
	for _, t := range ft.targets {
		if t.remove != nil {
			removes = append(removes, t.remove)
			t.remove = nil
		}
	}
	ft.regMu.Unlock()
	for _, rm := range removes {
		if err := rm(); err != nil {
			ft.logger.V(2).Info("Removing the fence handler failed", "err", err)
		}
	}
	ft.mu.Lock()
	defer ft.mu.Unlock()
	for _, kf := range ft.keys {
		kf.held, kf.why = false, provenance.Reasons{}
	}
	ft.held = 0
	ft.carry.reset()
	ft.deletes = nil
	ft.remembered.Store(0)
}

// nextTerm readies a table kept from an earlier Run for the next one, before its workers
// start: the release handlers are registered again, and each open fence is judged against the
// cache, which may have shown the write while no handler watched. A fence the cache cannot
// release waits for an event or its TTL as before, so the new term does not act on a cache
// that lacks the last term's writes (the same process often wins a lost Lease right back).
func (ft *fenceTable[K]) nextTerm(logger klog.Logger, cm *controllerMetrics, requeue func(K, provenance.Trigger)) {
	// No handler, worker or sweeper runs between two Runs: these need no lock.
	ft.logger, ft.cm, ft.requeue = logger, cm, requeue
	ft.regMu.Lock()
	targets := slices.Collect(maps.Values(ft.targets))
	ft.regMu.Unlock()
	for _, t := range targets {
		ft.regMu.Lock() // a WatchUntil ending may forget t meanwhile
		t.once, t.remove, t.err = sync.Once{}, nil, nil
		ft.regMu.Unlock()
		ft.registerTarget(t)
	}
	ft.mu.Lock()
	refs := slices.Collect(maps.Keys(ft.objs))
	ft.mu.Unlock()
	for _, ref := range refs {
		if rv, deleting, found := ref.t.lookup(ref.namespace, ref.name); found {
			ft.observe(ref, rv, deleting, false)
			continue
		}
		// Gone from the cache: what a gone or removed fence waits for.
		ft.mu.Lock()
		for _, k := range slices.Clone(ft.objs[ref]) {
			kf := ft.keys[k]
			if i := slices.IndexFunc(kf.fences, func(f fenceRec) bool { return f.ref == ref }); i >= 0 && kf.fences[i].kind != versionFence {
				ft.dropLocked(k, ref) // nothing is held: nothing to queue
			}
		}
		ft.mu.Unlock()
	}
}
