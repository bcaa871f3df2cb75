package controller

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/ctrlkit/ctrlkit/internal/versions"
	"github.com/ctrlkit/ctrlkit/provenance"
)

// objRef names one object of one informer.
type objRef struct {
	t               *fenceTarget
	namespace, name string
}

// fenceKind is what releases a fence.
type fenceKind uint8

const (
	// versionFence waits for the object at the written version or newer, or its deletion: a
	// create, update, patch or apply (Fence).
	versionFence fenceKind = iota
	// goneFence waits for the object's deletion or its deletionTimestamp: a delete (FenceGone).
	goneFence
	// removedFence waits for the object to leave the cache: a write whose answer shows that it
	// removed the object (see removedBy). A version newer than the written one (a new object
	// of that name) releases it too.
	removedFence
)

// fenceRec is one open fence of a key.
type fenceRec struct {
	ref   objRef
	rv    string // the version the write returned; "" for goneFence
	kind  fenceKind
	since time.Time // when it was (last) recorded: its TTL runs from here
}

// satisfiedBy reports whether an informer event releases f: the object at rv, being deleted
// (deleting), or gone from the cache (deleted, a delete is newer than any write).
func (f *fenceRec) satisfiedBy(rv string, deleting, deleted bool) bool {
	switch {
	case deleted:
		return true
	case f.kind == goneFence:
		return deleting
	case f.kind == removedFence:
		return versions.Newer(rv, f.rv)
	default:
		return versions.AtLeast(rv, f.rv)
	}
}

// keyFences is what one key waits for.
type keyFences struct {
	fences []fenceRec
	held   bool               // the key was taken from the queue while fenced and waits here
	why    provenance.Reasons // the reasons it was queued with, handed on when released
}

// fenceTable is a controller's fence bookkeeping. Its lock is taken by Fence (per write), by
// the release handlers (per event of an object while any fence is open) and by the workers
// (per key, to check for fences).
type fenceTable[K comparable] struct {
	ttl     time.Duration
	auto    bool
	clock   clock.Clock
	logger  klog.Logger
	cm      *controllerMetrics
	requeue func(key K, t provenance.Trigger) // re-adds a released key that was held

	regMu   sync.Mutex
	targets map[any]*fenceTarget
	// byResource: the informer that shows a resource's writes for Auto; a later
	// declaration of the same resource replaces an earlier one.
	byResource map[schema.GroupResource]*fenceTarget

	mu    sync.Mutex
	keys  map[K]*keyFences
	objs  map[objRef][]K
	held  int
	carry carried[K] // reasons of released keys, until the worker takes the key

	open  atomic.Int64 // len(objs): events skip the lock when no fence is open
	badRV sync.Once

	// reconciling counts the Reconciles running with a recorder; while there are any, deletes
	// remembers the deletes the informers show (fence_deletes.go).
	reconciling atomic.Int64
	deletes     map[objRef]deletion
	remembered  atomic.Int64 // len(deletes)
}

func newFenceTable[K comparable](opts *Fences, clk clock.Clock) *fenceTable[K] {
	ttl := opts.TTL
	if ttl == 0 {
		ttl = defaultFenceTTL
	}
	return &fenceTable[K]{
		ttl:        ttl,
		auto:       opts.Auto,
		clock:      clk,
		targets:    make(map[any]*fenceTarget),
		byResource: make(map[schema.GroupResource]*fenceTarget),
		keys:       make(map[K]*keyFences),
		objs:       make(map[objRef][]K),
	}
}

// add records a fence of kind on t's object namespace/name for key, written at rv, then looks
// at the cache: an event that came before the fence was recorded has updated the cache
// already. It reports whether the fence is open.
func (ft *fenceTable[K]) add(key K, t *fenceTarget, namespace, name, rv string, kind fenceKind) bool {
	if kind != goneFence {
		if !versions.Comparable(rv) {
			ft.badRV.Do(func() {
				ft.logger.Info("Not fencing: the resourceVersion is not an integer, so the cache cannot be compared with it (logged once)",
					"informer", t.name, "object", klog.KRef(namespace, name), "resourceVersion", rv)
			})
			return false
		}
	}
	ref := objRef{t: t, namespace: namespace, name: name}
	now := ft.clock.Now()
	ft.mu.Lock()
	if kind == versionFence && ft.deletedSinceLocked(ref, rv) {
		// The informer showed the object deleted, at or after this write, before the fence was
		// recorded: no event will show the write any more, and the cache is newer than it.
		ft.mu.Unlock()
		return false
	}
	kf := ft.keys[key]
	if kf == nil {
		kf = &keyFences{}
		ft.keys[key] = kf
	}
	i := slices.IndexFunc(kf.fences, func(f fenceRec) bool { return f.ref == ref })
	switch {
	case i < 0:
		kf.fences = append(kf.fences, fenceRec{ref: ref, rv: rv, kind: kind, since: now})
		if len(ft.objs[ref]) == 0 {
			ft.open.Add(1)
		}
		ft.objs[ref] = append(ft.objs[ref], key)
	default:
		// The later write decides, except that a version write only raises a version fence:
		// after a delete or a removal, the object's deletion is what the cache must show.
		f := &kf.fences[i]
		f.since = now
		switch {
		case kind != versionFence:
			f.kind, f.rv = kind, rv
		case f.kind == versionFence && !versions.AtLeast(f.rv, rv):
			f.rv = rv
		}
	}
	ft.mu.Unlock()

	cur, deleting, found := t.lookup(namespace, name)
	switch {
	case found:
		ft.observe(ref, cur, deleting, false)
	case kind != versionFence:
		// Not in the cache: what a gone or removed fence waits for. (A version fence cannot
		// tell: the object may be one the informer has not seen created yet.)
		ft.mu.Lock()
		requeue := ft.dropLocked(key, ref)
		ft.mu.Unlock()
		if requeue {
			ft.requeue(key, provenance.Trigger{Kind: provenance.TriggerFence, Source: t.name, Namespace: namespace, Name: name})
		}
	}
	ft.mu.Lock()
	kf, still := ft.keys[key]
	still = still && slices.ContainsFunc(kf.fences, func(f fenceRec) bool { return f.ref == ref })
	ft.mu.Unlock()
	return still
}

// dropLocked removes k's fence on ref, if any, and reports whether k was held and has no
// fence left (then it must be queued again).
func (ft *fenceTable[K]) dropLocked(k K, ref objRef) bool {
	kf := ft.keys[k]
	if kf == nil {
		return false
	}
	i := slices.IndexFunc(kf.fences, func(f fenceRec) bool { return f.ref == ref })
	if i < 0 {
		return false
	}
	kf.fences = slices.Delete(kf.fences, i, i+1)
	ft.setObjLocked(ref, slices.DeleteFunc(ft.objs[ref], func(x K) bool { return x == k }))
	return ft.releaseLocked(k, kf)
}

// observe is every event (and the cache look after a fence is recorded): it releases the
// fences the object's new state satisfies. A delete (deleted) is remembered while Reconciles
// run, for the fences their writes record after it (rememberLocked).
func (ft *fenceTable[K]) observe(ref objRef, rv string, deleting, deleted bool) {
	remember := deleted && ft.reconciling.Load() > 0
	if !remember && ft.open.Load() == 0 {
		return
	}
	var released []K
	ft.mu.Lock()
	if remember {
		ft.rememberLocked(ref, rv)
	}
	keys := ft.objs[ref]
	if len(keys) == 0 {
		ft.mu.Unlock()
		return
	}
	kept := keys[:0]
	for _, k := range keys {
		kf := ft.keys[k]
		i := slices.IndexFunc(kf.fences, func(f fenceRec) bool { return f.ref == ref })
		if !kf.fences[i].satisfiedBy(rv, deleting, deleted) {
			kept = append(kept, k)
			continue
		}
		kf.fences = slices.Delete(kf.fences, i, i+1)
		if ft.releaseLocked(k, kf) {
			released = append(released, k)
		}
	}
	ft.setObjLocked(ref, kept)
	ft.mu.Unlock()
	for _, k := range released {
		ft.requeue(k, provenance.Trigger{Kind: provenance.TriggerFence, Source: ref.t.name, Namespace: ref.namespace, Name: ref.name})
	}
}

func (ft *fenceTable[K]) setObjLocked(ref objRef, keys []K) {
	if len(keys) == 0 {
		delete(ft.objs, ref)
		ft.open.Add(-1)
		return
	}
	ft.objs[ref] = keys
}

// releaseLocked forgets kf when it has no fence left; it reports whether the key was held
// and must be queued again (its reasons then wait in carry).
func (ft *fenceTable[K]) releaseLocked(k K, kf *keyFences) bool {
	if len(kf.fences) > 0 {
		return false
	}
	delete(ft.keys, k)
	if !kf.held {
		return false
	}
	ft.held--
	ft.carry.put(k, kf.why)
	return true
}

// hold keeps key back when it has open fences, merging why into what it waits with. The
// worker then marks the key Done without reconciling it; the release queues it again.
func (ft *fenceTable[K]) hold(key K, why provenance.Reasons) bool {
	if ft.open.Load() == 0 {
		return false // a key with fences has objects in objs
	}
	ft.mu.Lock()
	defer ft.mu.Unlock()
	kf := ft.keys[key]
	if kf == nil {
		return false
	}
	if !kf.held {
		kf.held = true
		ft.held++
	}
	kf.why.Merge(why)
	return true
}

// takeCarry returns the reasons a released key was held with, merged before why.
func (ft *fenceTable[K]) takeCarry(key K, why provenance.Reasons) provenance.Reasons {
	return ft.carry.take(key, why)
}

// heldKeys is how many keys wait for their fences now.
func (ft *fenceTable[K]) heldKeys() int {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	return ft.held
}

// expire drops the fences whose TTL passed by now, logging and counting each, and queues the
// held keys that have no fence left.
func (ft *fenceTable[K]) expire(now time.Time) {
	ft.forgetDeletes(now)
	if ft.open.Load() == 0 {
		return
	}
	type timeout struct {
		key K
		f   fenceRec
	}
	var expired []timeout
	var released []K
	ft.mu.Lock()
	for k, kf := range ft.keys {
		n := len(kf.fences)
		kf.fences = slices.DeleteFunc(kf.fences, func(f fenceRec) bool {
			if f.since.Add(ft.ttl).After(now) {
				return false
			}
			expired = append(expired, timeout{key: k, f: f})
			return true
		})
		if len(kf.fences) < n && ft.releaseLocked(k, kf) {
			released = append(released, k)
		}
	}
	for _, e := range expired {
		keys := slices.DeleteFunc(ft.objs[e.f.ref], func(k K) bool { return k == e.key })
		ft.setObjLocked(e.f.ref, keys)
	}
	ft.mu.Unlock()
	for _, e := range expired {
		ft.cm.fenceTimedOut()
		ft.logger.Info("Write fence timed out: the informer did not show the write within the TTL; reconciling anyway",
			"key", e.key, "informer", e.f.ref.t.name, "object", klog.KRef(e.f.ref.namespace, e.f.ref.name),
			"resourceVersion", e.f.rv, "gone", e.f.kind != versionFence, "ttl", ft.ttl)
	}
	for _, k := range released {
		ft.requeue(k, provenance.Trigger{Kind: provenance.TriggerFence, Source: "timeout"})
	}
}

// sweep runs expire until ctx ends. Releases come from events; this only enforces the TTL, so
// it ticks at a tenth of it.
func (ft *fenceTable[K]) sweep(ctx context.Context, clk clock.WithTicker) {
	period := min(max(ft.ttl/10, 10*time.Millisecond), time.Second)
	t := clk.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
			// The clock's time, not the tick's: a fake clock stepped past several periods
			// delivers one tick stamped with the first.
			ft.expire(ft.clock.Now())
		}
	}
}
