package controller

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/informer"
)

// Source is an informer a controller can Watch. Every informer.Informer[T]
// is one, whatever its T, which is what lets Watch be a method.
type Source interface {
	// Name identifies the informer in logs and sync errors.
	Name() string
	// Informer is the shared client-go informer underneath.
	Informer() cache.SharedIndexInformer
}

// MapFunc maps the object of an informer event to the keys to reconcile
// (none, one, or several). It must not mutate obj, which is the cache's.
type MapFunc[K comparable] func(obj metav1.Object) []K

// EnqueueObject maps an object to its own Key: the usual mapping for the
// controller's primary resource.
func EnqueueObject(obj metav1.Object) []Key {
	return []Key{KeyFromObject(obj)}
}

// EnqueueControllerOf maps an object to the Key of its controlling owner
// when that owner is of owner's group and kind (any version), and to nothing
// otherwise: the usual mapping for the children a controller creates
// (Pods of a ReplicaSet). The owner is looked up in the child's namespace, as
// owner references require; for cluster-scoped owners of namespaced children
// write a MapFunc.
func EnqueueControllerOf(owner schema.GroupVersionKind) MapFunc[Key] {
	return func(obj metav1.Object) []Key {
		name, ok := informer.ControllerOf(obj, owner)
		if !ok {
			return nil
		}
		return []Key{{Namespace: name.Namespace, Name: name.Name}}
	}
}

// Watch connects src's events to the controller's queue: every add, update
// (both the old and the new object, so a changed mapping reaches the former
// and the current key) and delete is mapped by fn and the keys enqueued.
// Deletes seen only on relist arrive with the last known object, or a
// skeleton carrying just the namespace and name when the tombstone held
// none. Run waits until this handler has seen src's initial list.
//
// Call Watch before Run: a source added later is delivered to but not waited
// for. To map typed objects (func(*appsv1.ReplicaSet) []K) use WatchTyped.
func (c *Controller[K]) Watch(src Source, fn MapFunc[K]) error {
	if src == nil || fn == nil {
		return &OptionsError{Controller: c.name, Field: "Watch", Reason: "nil source or mapping function"}
	}
	h := &mapHandler[K]{c: c, fn: fn}
	reg, err := src.Informer().AddEventHandler(h)
	if err != nil {
		return fmt.Errorf("controller %q: watching %s: %w", c.name, src.Name(), err)
	}
	c.addSource(registration{name: src.Name(), reg: reg})
	return nil
}

// WatchTyped is Watch for a mapping of typed objects, through the informer
// package's typed handlers (tombstones unwrapped and wrong types reported
// there). It is a function because Go methods cannot have type parameters.
func WatchTyped[T informer.Object, K comparable](c *Controller[K], inf informer.Informer[T], fn func(T) []K) error {
	if inf == nil || fn == nil {
		return &OptionsError{Controller: c.name, Field: "WatchTyped", Reason: "nil informer or mapping function"}
	}
	reg, err := inf.AddHandler(informer.EnqueueMapped[T, K](enqueuer[K]{c}, fn))
	if err != nil {
		return fmt.Errorf("controller %q: watching %s: %w", c.name, inf.Name(), err)
	}
	c.addSource(registration{name: inf.Name(), reg: reg})
	return nil
}

// WaitFor makes Run wait until hasSynced reports true before starting the
// workers, as for a watched informer; use it for caches the controller reads
// but does not watch (a lister of another resource).
func (c *Controller[K]) WaitFor(name string, hasSynced func() bool) {
	c.addSource(syncFunc{name: name, fn: hasSynced})
}

func (c *Controller[K]) addSource(s source) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sources = append(c.sources, s)
}

// source is something Run waits for: a handler registration or a WaitFor
// function, named for the sync error.
type source interface {
	Name() string
	HasSynced() bool
}

// registration waits on a handler registration: synced once the handler has
// seen the informer's initial list, which is later than the informer itself.
type registration struct {
	name string
	reg  cache.ResourceEventHandlerRegistration
}

func (r registration) Name() string    { return r.name }
func (r registration) HasSynced() bool { return r.reg.HasSynced() }

// HasSyncedChecker lets informer.WaitForCacheSync wait without polling.
func (r registration) HasSyncedChecker() cache.DoneChecker { return r.reg.HasSyncedChecker() }

type syncFunc struct {
	name string
	fn   func() bool
}

func (s syncFunc) Name() string    { return s.name }
func (s syncFunc) HasSynced() bool { return s.fn() }

// HasSynced reports whether every watched source has delivered its initial
// list to this controller.
func (c *Controller[K]) HasSynced() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.sources {
		if !s.HasSynced() {
			return false
		}
	}
	return true
}

// enqueuer adds through Enqueue, so that wiring a watch does not build the
// queue (a Manager may still hand the controller its metrics).
type enqueuer[K comparable] struct{ c *Controller[K] }

func (e enqueuer[K]) Add(key K) { e.c.Enqueue(key) }

// mapHandler is the client-go handler behind Watch.
type mapHandler[K comparable] struct {
	c  *Controller[K]
	fn MapFunc[K]
}

func (h *mapHandler[K]) enqueue(obj any) []K {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil // not an API object: nothing to map (client-go never sends one)
	}
	keys := h.fn(m)
	for _, k := range keys {
		h.c.Enqueue(k)
	}
	return keys
}

func (h *mapHandler[K]) OnAdd(obj any, _ bool) { h.enqueue(obj) }

func (h *mapHandler[K]) OnUpdate(oldObj, newObj any) {
	keys := h.enqueue(newObj)
	m, err := meta.Accessor(oldObj)
	if err != nil {
		return
	}
	for _, k := range h.fn(m) {
		if !slices.Contains(keys, k) {
			h.c.Enqueue(k)
		}
	}
}

func (h *mapHandler[K]) OnDelete(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		if d.Obj != nil {
			if _, err := meta.Accessor(d.Obj); err == nil {
				h.enqueue(d.Obj)
				return
			}
		}
		// No usable object: map a skeleton with the tombstone's name.
		ns, name, err := cache.SplitMetaNamespaceKey(d.Key)
		if err != nil {
			return
		}
		h.enqueue(&metav1.ObjectMeta{Namespace: ns, Name: name})
		return
	}
	h.enqueue(obj)
}
