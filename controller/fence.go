package controller

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/internal/fencehook"
	"github.com/ctrlkit/ctrlkit/provenance"
)

// defaultFenceTTL is how long a key waits for its write fences at most, by default. An
// informer shows a controller's own write within milliseconds to a few seconds even on a
// loaded API server; a fence still open after this long is waiting for something that will not
// come (the object left the informer's scope, the watch is down), and the key is reconciled
// anyway.
const defaultFenceTTL = 30 * time.Second

// Fences configures write fences (Options.Fences): after a Reconcile writes an object, the
// next Reconcile of the same key waits until the informer's cache shows that write (or a newer
// version of the object, or its deletion), so it never acts on the state its own write
// replaced. See Fence.
type Fences struct {
	// TTL bounds how long a key is held back by its fences: once it passes, the fences are
	// dropped, the key is reconciled, and the timeout is logged and counted in
	// ctrlkit_controller_fence_timeouts_total. 0 means 30 s; negative is an error.
	TTL time.Duration

	// Auto makes every successful write through ctrlkit's clients (client.Client[T] and the
	// customresource clients: create, update, update status, patch, apply, delete) made with a
	// Reconcile's context record its fence, on the informer of the written resource (group
	// and resource, whatever the version or the informer's view: typed, unstructured or
	// metadata-only) that the controller watches (Watch, Owns) or names with FenceOn. Writes
	// of resources without such an informer are not fenced. Without Auto, only Fence and
	// FenceGone record fences. A multicluster controller fences each write on the informer
	// of its resource in the key's cluster (multicluster.NewController).
	Auto bool
}

// FenceOn names inf as the informer whose cache shows the writes of its resource, for
// Fences.Auto (the informers of Watch and Owns are named already) and so that the fence
// handler is registered when Run starts rather than at the first fence. Call it before Run;
// with a second informer of the same resource, the last one named wins for Auto.
func FenceOn[T informer.Object, K comparable](c *Controller[K], inf informer.Informer[T]) error {
	if c == nil || inf == nil {
		return &OptionsError{Field: "FenceOn", Reason: "nil controller or informer"}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ran {
		return fmt.Errorf("controller %q: fencing on %s: %w", c.name, inf.Name(), ErrAlreadyStarted)
	}
	c.fenceOn = append(c.fenceOn, fenceDecl{mk: func() *fenceTarget { return newFenceTarget(inf) }})
	c.freshOn = append(c.freshOn, versionerOf(inf))
	return nil
}

// fenceDecl is an informer named for fences before Run: by FenceOn, or by
// a Watch (watched), whose handler then also releases the fences.
type fenceDecl struct {
	mk      func() *fenceTarget
	watched bool
}

// Fence records, from inside a Reconcile, that the key being reconciled must not be handed to
// Reconcile again until inf's cache shows written (the object a write returned) at its
// resourceVersion or newer, or shows it deleted. The informer's event releases the key; no
// one polls. A key that is queued meanwhile stays queued and is reconciled once released
// (its provenance.Reasons then include a "fence" trigger), or when Options.Fences.TTL passes.
//
// A written object that shows the write removed it (a deletionTimestamp, no finalizers left and
// no grace period: the API server deleted it) is waited for until the cache no longer has it.
//
// inf may be any informer that holds the object: typed, custom resource or metadata-only
// (written need not be a T). Fence reports whether a fence was recorded: false outside a
// Reconcile of a controller with Options.Fences, when the cache already shows the write or
// no longer has the object (the informer showed it deleted after the write, or the write
// removed it), and when written's resourceVersion is not an integer as etcd-backed API servers
// write them (then nothing can be compared; this is logged once).
func Fence[T informer.Object](ctx context.Context, inf informer.Informer[T], written metav1.Object) bool {
	return fenceFrom(ctx, inf, written, false)
}

// FenceGone is Fence for a delete: the key waits until inf's cache no longer has obj (or shows
// it being deleted: a deletionTimestamp, while finalizers run).
func FenceGone[T informer.Object](ctx context.Context, inf informer.Informer[T], obj metav1.Object) bool {
	return fenceFrom(ctx, inf, obj, true)
}

func fenceFrom[T informer.Object](ctx context.Context, inf informer.Informer[T], obj metav1.Object, gone bool) bool {
	f, ok := fencehook.From(ctx).(fencer)
	if !ok || inf == nil || obj == nil || (reflect.ValueOf(obj).Kind() == reflect.Pointer && reflect.ValueOf(obj).IsNil()) {
		return false
	}
	t := f.target(informerID(inf), func() *fenceTarget { return newFenceTarget(inf) })
	kind := writtenKind(obj)
	if gone {
		kind = goneFence
	}
	return f.fence(t, obj.GetNamespace(), obj.GetName(), obj.GetResourceVersion(), kind)
}

// writtenKind is the fence of a write that returned obj: a removedFence when the write removed
// the object, else a versionFence.
func writtenKind(obj metav1.Object) fenceKind {
	if removedBy(obj) {
		return removedFence
	}
	return versionFence
}

// removedBy reports whether obj, the answer to an update or patch, shows that the write removed
// the object: an API server deletes an object left with a deletionTimestamp, no finalizers and
// no grace period (apiserver's ShouldDeleteDuringUpdate, e.g. when its last finalizer is
// removed) and answers with that last state. A Pod in graceful termination has a grace period
// left and stays until the kubelet deletes it.
func removedBy(obj metav1.Object) bool {
	g := obj.GetDeletionGracePeriodSeconds()
	return obj.GetDeletionTimestamp() != nil && len(obj.GetFinalizers()) == 0 && (g == nil || *g == 0)
}

// fencer is the fence recorder a Reconcile's context carries (a *keyFencer[K]).
type fencer interface {
	target(id any, mk func() *fenceTarget) *fenceTarget
	fence(t *fenceTarget, namespace, name, rv string, kind fenceKind) bool
}

// fenceTarget is one informer fences wait on, with its type erased.
type fenceTarget struct {
	name string
	id   any
	gr   schema.GroupResource // the informer's resource, for Auto
	// declared: a Watch or Owns named it (startFences), so the end of a WatchUntil of the
	// same informer does not forget it.
	declared bool
	// lookup reads the cache: the object's resourceVersion and whether it is being deleted.
	lookup func(namespace, name string) (rv string, deleting, found bool)
	// register adds the release handler; it returns the function that removes it.
	register func(observe func(namespace, name, rv string, deleting, deleted bool)) (func() error, error)

	// fed: a Watch of this informer shows the table its events from its own
	// handler registration; register is not used.
	fed bool

	once   sync.Once
	remove func() error // set by once; nil when registering failed
	err    error
}

func newFenceTarget[T informer.Object](inf informer.Informer[T]) *fenceTarget {
	return &fenceTarget{
		name: inf.Name(),
		id:   informerID(inf),
		gr:   inf.GVR().GroupResource(),
		lookup: func(namespace, name string) (string, bool, bool) {
			obj, err := inf.Lister().Get(namespace, name)
			if err != nil {
				return "", false, false
			}
			return obj.GetResourceVersion(), obj.GetDeletionTimestamp() != nil, true
		},
		register: func(observe func(namespace, name, rv string, deleting, deleted bool)) (func() error, error) {
			reg, err := inf.AddHandler(fenceRelease[T](observe))
			if err != nil {
				return nil, err
			}
			return func() error { return inf.RemoveHandler(reg) }, nil
		},
	}
}

// fenceRelease is the handler that shows fences each event of an informer
// of T: the watched informer's fan-out has it, other fenced informers
// register it alone.
func fenceRelease[T informer.Object](observe func(namespace, name, rv string, deleting, deleted bool)) informer.Handler[T] {
	return informer.HandlerFuncs[T]{
		OnAdd: func(obj T, _ bool) {
			observe(obj.GetNamespace(), obj.GetName(), obj.GetResourceVersion(), obj.GetDeletionTimestamp() != nil, false)
		},
		OnUpdate: func(_, obj T) {
			observe(obj.GetNamespace(), obj.GetName(), obj.GetResourceVersion(), obj.GetDeletionTimestamp() != nil, false)
		},
		// A watched delete carries the version the object was deleted at; a delete
		// inferred on a relist carries the last version the cache had, which says
		// nothing of when the object went: "" (unknown).
		OnDelete: func(obj T) {
			observe(obj.GetNamespace(), obj.GetName(), obj.GetResourceVersion(), true, true)
		},
		OnDeleteFinalStateUnknown: func(_ string, obj T) {
			observe(obj.GetNamespace(), obj.GetName(), "", true, true)
		},
	}
}

// informerID identifies the shared informer behind inf, so that two typed views of one
// informer share one release handler.
func informerID[T informer.Object](inf informer.Informer[T]) any {
	if u := inf.Informer(); u != nil && reflect.TypeOf(u).Comparable() {
		return u
	}
	return inf.Name()
}

// keyFencer is the fencehook.Recorder of one Reconcile: fences it records are the key's.
type keyFencer[K comparable] struct {
	ft  *fenceTable[K]
	key K
}

func (f *keyFencer[K]) target(id any, mk func() *fenceTarget) *fenceTarget {
	return f.ft.target(id, mk)
}

func (f *keyFencer[K]) fence(t *fenceTarget, namespace, name, rv string, kind fenceKind) bool {
	return f.ft.add(f.key, t, namespace, name, rv, kind)
}

// Written implements fencehook.Recorder for Fences.Auto.
func (f *keyFencer[K]) Written(gr schema.GroupResource, obj metav1.Object) {
	if t := f.ft.autoTarget(gr); t != nil {
		f.ft.add(f.key, t, obj.GetNamespace(), obj.GetName(), obj.GetResourceVersion(), writtenKind(obj))
	}
}

// Deleted implements fencehook.Recorder for Fences.Auto.
func (f *keyFencer[K]) Deleted(gr schema.GroupResource, namespace, name string) {
	if t := f.ft.autoTarget(gr); t != nil {
		f.ft.add(f.key, t, namespace, name, "", goneFence)
	}
}

func (ft *fenceTable[K]) autoTarget(gr schema.GroupResource) *fenceTarget {
	if !ft.auto {
		return nil
	}
	ft.regMu.Lock()
	defer ft.regMu.Unlock()
	return ft.byResource[gr]
}

// startFences builds the fence table when Options.Fences is set, registers the release
// handlers of the informers known now that no Watch feeds, and publishes the table.
func (c *Controller[K]) startFences(logger klog.Logger, q queue[K]) *fenceTable[K] {
	if c.fenceOpts == nil {
		return nil
	}
	requeue := func(k K, t provenance.Trigger) { addTrigger(q, k, t) }
	if ft := c.fences.Load(); ft != nil { // kept from an earlier Run
		ft.nextTerm(logger, c.cm, requeue)
		return ft
	}
	ft := newFenceTable[K](c.fenceOpts, c.clock)
	ft.logger = logger
	ft.cm = c.cm
	ft.requeue = requeue
	c.mu.Lock()
	decls := c.fenceOn
	c.mu.Unlock()
	targets := make([]*fenceTarget, len(decls))
	fed := make(map[any]bool)
	for i, d := range decls {
		targets[i] = d.mk()
		if d.watched {
			fed[targets[i].id] = true
		}
	}
	for _, t := range targets {
		ft.declare(t, fed[t.id])
	}
	c.fences.Store(ft)
	return ft
}
