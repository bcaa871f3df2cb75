package controller

import (
	"context"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/ctrlkit/ctrlkit/workqueue"
)

// objRef names one object of one informer.
type objRef struct {
	t               *fenceTarget
	namespace, name string
}

// fenceRec is one open fence of a key.
type fenceRec struct {
	ref      objRef
	rv       string // the version the cache must reach; "" for gone
	gone     bool
	deadline time.Time
}

// keyFences is what one key waits for.
type keyFences struct {
	fences []fenceRec
	held   bool    // the key was taken from the queue while fenced and waits here
	why    Reasons // the reasons it was queued with, handed on when released
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
	requeue func(key K, t Trigger) // re-adds a released key that was held

	regMu   sync.Mutex
	targets map[any]*fenceTarget
	byType  map[reflect.Type]*fenceTarget
	removes []func() error

	mu    sync.Mutex
	keys  map[K]*keyFences
	objs  map[objRef][]K
	carry map[K]Reasons // reasons of released keys, until the worker takes the key
	held  int

	open     atomic.Int64 // len(objs): events skip the lock when no fence is open
	carrying atomic.Int64 // len(carry)
	badRV    sync.Once
}

func newFenceTable[K comparable](opts *Fences, clk clock.Clock) *fenceTable[K] {
	ttl := opts.TTL
	if ttl == 0 {
		ttl = DefaultFenceTTL
	}
	return &fenceTable[K]{
		ttl:     ttl,
		auto:    opts.Auto,
		clock:   clk,
		targets: make(map[any]*fenceTarget),
		byType:  make(map[reflect.Type]*fenceTarget),
		keys:    make(map[K]*keyFences),
		objs:    make(map[objRef][]K),
		carry:   make(map[K]Reasons),
	}
}

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

// declare makes t known before Run's workers start: its handler is registered now, and it
// serves Auto for its type.
func (ft *fenceTable[K]) declare(t *fenceTarget) {
	t = ft.target(t.id, func() *fenceTarget { return t })
	ft.regMu.Lock()
	ft.byType[t.typ] = t
	ft.regMu.Unlock()
}

func (ft *fenceTable[K]) registerTarget(t *fenceTarget) {
	t.once.Do(func() {
		t.remove, t.err = t.register(func(namespace, name, rv string, deleting, deleted bool) {
			ft.observe(objRef{t: t, namespace: namespace, name: name}, rv, deleting, deleted)
		})
		if t.err != nil {
			ft.logger.Error(t.err, "Cannot watch for write fences; fences on this informer wait for their TTL", "informer", t.name)
			return
		}
		ft.regMu.Lock()
		ft.removes = append(ft.removes, t.remove)
		ft.regMu.Unlock()
	})
}

// unregister removes the release handlers (Run is returning).
func (ft *fenceTable[K]) unregister() {
	ft.regMu.Lock()
	removes := ft.removes
	ft.removes = nil
	ft.regMu.Unlock()
	for _, rm := range removes {
		if err := rm(); err != nil {
			ft.logger.V(2).Info("Removing the fence handler failed", "err", err)
		}
	}
}

// add records a fence of key on t's object namespace/name, then looks at the cache: an event
// that came before the fence was recorded has updated the cache already.
func (ft *fenceTable[K]) add(key K, t *fenceTarget, namespace, name, rv string, gone bool) bool {
	if !gone {
		if _, err := resourceversion.CompareResourceVersion(rv, rv); err != nil {
			ft.badRV.Do(func() {
				ft.logger.Info("Not fencing: the resourceVersion is not an integer, so the cache cannot be compared with it (logged once)",
					"informer", t.name, "object", klog.KRef(namespace, name), "resourceVersion", rv)
			})
			return false
		}
	}
	ref := objRef{t: t, namespace: namespace, name: name}
	deadline := ft.clock.Now().Add(ft.ttl)
	ft.mu.Lock()
	kf := ft.keys[key]
	if kf == nil {
		kf = &keyFences{}
		ft.keys[key] = kf
	}
	i := slices.IndexFunc(kf.fences, func(f fenceRec) bool { return f.ref == ref })
	switch {
	case i < 0:
		kf.fences = append(kf.fences, fenceRec{ref: ref, rv: rv, gone: gone, deadline: deadline})
		if len(ft.objs[ref]) == 0 {
			ft.open.Add(1)
		}
		ft.objs[ref] = append(ft.objs[ref], key)
	default:
		f := &kf.fences[i]
		f.deadline = deadline
		if gone {
			f.gone, f.rv = true, ""
		} else if !f.gone && !rvAtLeast(f.rv, rv) {
			f.rv = rv
		}
	}
	ft.mu.Unlock()

	cur, deleting, found := t.lookup(namespace, name)
	switch {
	case found:
		ft.observe(ref, cur, deleting, false)
	case gone:
		ft.observe(ref, "", true, true)
	}
	ft.mu.Lock()
	kf, still := ft.keys[key]
	still = still && slices.ContainsFunc(kf.fences, func(f fenceRec) bool { return f.ref == ref })
	ft.mu.Unlock()
	return still
}

// rvAtLeast reports whether have is want or newer. A version that is not an integer cannot
// be compared, and then nothing waits: a fence never blocks on what it cannot judge.
func rvAtLeast(have, want string) bool {
	c, err := resourceversion.CompareResourceVersion(have, want)
	return err != nil || c >= 0
}

// observe is every event (and the cache look after a fence is recorded): it releases the
// fences the object's new state satisfies.
func (ft *fenceTable[K]) observe(ref objRef, rv string, deleting, deleted bool) {
	if ft.open.Load() == 0 {
		return
	}
	var released []K
	ft.mu.Lock()
	keys := ft.objs[ref]
	if len(keys) == 0 {
		ft.mu.Unlock()
		return
	}
	kept := keys[:0]
	for _, k := range keys {
		kf := ft.keys[k]
		i := slices.IndexFunc(kf.fences, func(f fenceRec) bool { return f.ref == ref })
		f := kf.fences[i]
		if !(deleted || f.gone && deleting || !f.gone && rvAtLeast(rv, f.rv)) {
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
		ft.requeue(k, Trigger{Kind: workqueue.TriggerFence, Source: ref.t.name, Namespace: ref.namespace, Name: ref.name})
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
	if !kf.why.IsZero() {
		r := ft.carry[k]
		r.Merge(kf.why)
		ft.carry[k] = r
		ft.carrying.Store(int64(len(ft.carry)))
	}
	return true
}

// hold keeps key back when it has open fences, merging why into what it waits with. The
// worker then marks the key Done without reconciling it; the release queues it again.
func (ft *fenceTable[K]) hold(key K, why Reasons) bool {
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
func (ft *fenceTable[K]) takeCarry(key K, why Reasons) Reasons {
	if ft.carrying.Load() == 0 {
		return why
	}
	ft.mu.Lock()
	r, ok := ft.carry[key]
	if ok {
		delete(ft.carry, key)
		ft.carrying.Store(int64(len(ft.carry)))
	}
	ft.mu.Unlock()
	if !ok {
		return why
	}
	r.Merge(why)
	return r
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
			if f.deadline.After(now) {
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
			"resourceVersion", e.f.rv, "gone", e.f.gone, "ttl", ft.ttl)
	}
	for _, k := range released {
		ft.requeue(k, Trigger{Kind: workqueue.TriggerFence, Source: "timeout"})
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
