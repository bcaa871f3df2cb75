package informer

import (
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/internal/object"
)

// Handler receives an informer's events as typed objects. Implement it, or
// use HandlerFuncs for the common case. A handler is called one event at a
// time, in the order the cache applied them, and must not mutate the objects
// it receives. The informers of built-in types call handlers on the
// goroutine that applies each change, as it applies it (no queue, no
// goroutine per handler): a handler should do what controllers' handlers do,
// map the object to keys and enqueue them, since a slow one holds up the
// watch.
//
// The methods are named Handle* (not OnAdd...) so that HandlerFuncs can have
// fields named OnAdd, OnUpdate and OnDelete.
type Handler[T Object] interface {
	// HandleAdd is called for an object new to the cache. isInitialList is
	// true for objects of the informer's first list (or, for a handler
	// added late, of the cache when it was added).
	HandleAdd(obj T, isInitialList bool)
	// HandleUpdate is called when an object changed, and on resync with an
	// unchanged object (see IsResync).
	HandleUpdate(oldObj, newObj T)
	// HandleDelete is called when an object left the cache, whether the
	// informer saw the delete or inferred it from a relist (a
	// cache.DeletedFinalStateUnknown tombstone, already unwrapped): info
	// says which.
	HandleDelete(obj T, info DeleteInfo)
}

// DeleteInfo describes how a deletion was observed.
type DeleteInfo struct {
	// Key is the cache key of the deleted object: "namespace/name", or
	// "name" for a cluster-scoped object. Always set.
	Key string
	// FinalStateUnknown is true when the informer missed the delete event
	// (its watch broke) and noticed the deletion on relist: the object is
	// the last state the cache held and may be stale.
	FinalStateUnknown bool
	// ObjectMissing is true in the rare case that the tombstone held no
	// object at all. The handler then receives a skeleton T carrying only
	// the namespace and name from Key, never a nil T.
	ObjectMissing bool
	// OutOfScope is true when the object was not deleted: it left the
	// informer's scope, e.g. its namespace was removed from a NamespaceSet
	// (InNamespaceSet). The object is the last state the cache held.
	// Controllers must not treat it as gone: nothing happened to it on the
	// server, and a Reconcile would only find it missing from the cache.
	OutOfScope bool
}

// HandlerFuncs is a Handler built from optional functions; nil fields ignore
// their event.
type HandlerFuncs[T Object] struct {
	OnAdd    func(obj T, isInitialList bool)
	OnUpdate func(oldObj, newObj T)
	// OnDelete receives the deleted object, unwrapped from a tombstone when
	// the delete was inferred on relist (then possibly stale, or a skeleton
	// with only namespace and name, see DeleteInfo).
	OnDelete func(obj T)
	// OnDeleteFinalStateUnknown, when set, is called instead of OnDelete
	// for deletions inferred from a tombstone, with the cache key and the
	// last known (stale, or skeleton) object.
	OnDeleteFinalStateUnknown func(key string, obj T)
	// OnOutOfScope, when set, receives the objects that left the informer's
	// scope without being deleted (DeleteInfo.OutOfScope: their namespace
	// was removed from a NamespaceSet). They never reach OnDelete, which is
	// for real deletes only.
	OnOutOfScope func(obj T)
	// SkipResync drops resync updates: updates whose old and new objects
	// have the same resourceVersion (see IsResync).
	SkipResync bool
}

var _ Handler[*metav1.PartialObjectMetadata] = HandlerFuncs[*metav1.PartialObjectMetadata]{}

// HandleAdd calls OnAdd.
func (h HandlerFuncs[T]) HandleAdd(obj T, isInitialList bool) {
	if h.OnAdd != nil {
		h.OnAdd(obj, isInitialList)
	}
}

// HandleUpdate calls OnUpdate, unless SkipResync is set and this is a resync.
func (h HandlerFuncs[T]) HandleUpdate(oldObj, newObj T) {
	if h.OnUpdate == nil || (h.SkipResync && IsResync(oldObj, newObj)) {
		return
	}
	h.OnUpdate(oldObj, newObj)
}

// HandleDelete calls OnOutOfScope for objects that left the scope (and
// nothing else for them), OnDeleteFinalStateUnknown for tombstones when it is
// set, else OnDelete.
func (h HandlerFuncs[T]) HandleDelete(obj T, info DeleteInfo) {
	if info.OutOfScope {
		if h.OnOutOfScope != nil {
			h.OnOutOfScope(obj)
		}
		return
	}
	if info.FinalStateUnknown && h.OnDeleteFinalStateUnknown != nil {
		h.OnDeleteFinalStateUnknown(info.Key, obj)
		return
	}
	if h.OnDelete != nil {
		h.OnDelete(obj)
	}
}

// IsResync reports whether an update is a resync: old and new have the same
// resourceVersion, so nothing changed on the server. This is client-go's own
// test: its informers deliver such updates (from a periodic resync, or from a
// relist that found the object unchanged) only to handlers that asked for
// resyncs, i.e. when the factory has a resync period (Options.Resync).
//
// Beware in tests: the fake clientset stores objects with the
// resourceVersion the test gave them (usually ""), so an update through it
// looks like a resync unless the test sets resourceVersion.
func IsResync[T Object](oldObj, newObj T) bool {
	return oldObj.GetResourceVersion() == newObj.GetResourceVersion()
}

// adapter turns a Handler[T] into client-go's untyped handler. It is where
// tombstones are unwrapped and foreign objects are caught: anything that is
// not a T (or a tombstone of a T) is reported, never asserted.
type adapter[T Object] struct {
	h      Handler[T]
	name   string
	report func(error)
	// forget, when set, is the informer's memory accounting, told of every
	// deletion (and object out of scope) before the handler is.
	forget func(any)
	// mute silences the handler of a registration kept only to forget
	// (meter.leave).
	mute mutable
}

var _ cache.ResourceEventHandler = (*adapter[*metav1.PartialObjectMetadata])(nil)

func (a *adapter[T]) OnAdd(obj any, isInitialList bool) {
	if a.mute.muted.Load() {
		return
	}
	typed, ok := obj.(T)
	if !ok {
		if !unconverted(obj) { // those were reported once, on entry
			a.wrongType(obj, false)
		}
		return
	}
	a.h.HandleAdd(typed, isInitialList)
}

func (a *adapter[T]) OnUpdate(oldObj, newObj any) {
	if a.mute.muted.Load() {
		return
	}
	newTyped, ok := newObj.(T)
	if !ok {
		// A version that failed conversion was reported once on entry; the
		// handler keeps the last version it could read.
		if !unconverted(newObj) {
			a.wrongType(newObj, false)
		}
		return
	}
	oldTyped, ok := oldObj.(T)
	if !ok {
		if unconverted(oldObj) {
			// A custom resource that failed conversion was never shown to the
			// handler; now that it converts, this is its first appearance.
			a.h.HandleAdd(newTyped, false)
			return
		}
		a.wrongType(oldObj, false)
		return
	}
	a.h.HandleUpdate(oldTyped, newTyped)
}

func (a *adapter[T]) OnDelete(obj any) {
	if a.forget != nil {
		a.forget(obj)
	}
	if a.mute.muted.Load() {
		return
	}
	switch o := obj.(type) {
	case T:
		a.h.HandleDelete(o, DeleteInfo{Key: objectKey(o)})
	case cache.DeletedFinalStateUnknown:
		a.tombstone(o)
	case *cache.DeletedFinalStateUnknown:
		// client-go delivers values; a pointer only comes from hand-written
		// code, but it means the same.
		if o == nil {
			a.wrongType(obj, true)
			return
		}
		a.tombstone(*o)
	default:
		if unconverted(obj) {
			// The last state failed conversion, yet the handler may have seen
			// an earlier one: hand it the key, as for a tombstone without an
			// object, so it can clean up.
			if key, err := cache.MetaNamespaceKeyFunc(obj); err == nil {
				if skeleton, ok := skeletonFor[T](key); ok {
					a.h.HandleDelete(skeleton, DeleteInfo{Key: key, ObjectMissing: true})
					return
				}
			}
		}
		a.wrongType(obj, false)
	}
}

// onOutOfScope is how a NamespaceSet informer hands this adapter an object
// whose namespace left its scope (see outOfScopeHandler).
func (a *adapter[T]) onOutOfScope(key string, obj any) {
	if a.forget != nil {
		a.forget(obj)
	}
	if a.mute.muted.Load() {
		return
	}
	typed, ok := obj.(T)
	if !ok {
		if !unconverted(obj) {
			a.wrongType(obj, false)
			return
		}
		// Never shown to the handler as a T; its key is all there is.
		skeleton, ok := skeletonFor[T](key)
		if !ok {
			return
		}
		a.h.HandleDelete(skeleton, DeleteInfo{Key: key, ObjectMissing: true, OutOfScope: true})
		return
	}
	a.h.HandleDelete(typed, DeleteInfo{Key: key, OutOfScope: true})
}

// unconverted reports whether obj is a custom resource that ForResource left
// in the cache unconverted (its conversion failed and was reported on entry).
func unconverted(obj any) bool {
	_, ok := obj.(*unstructured.Unstructured)
	return ok
}

func (a *adapter[T]) tombstone(d cache.DeletedFinalStateUnknown) {
	info := DeleteInfo{Key: d.Key, FinalStateUnknown: true}
	if d.Obj == nil {
		skeleton, ok := skeletonFor[T](d.Key)
		if !ok {
			a.wrongType(d, true)
			return
		}
		info.ObjectMissing = true
		a.h.HandleDelete(skeleton, info)
		return
	}
	typed, ok := d.Obj.(T)
	if !ok {
		a.report(&UnexpectedTypeError{Informer: a.name, Want: object.TypeName(reflect.TypeFor[T]()), Got: typeOf(d.Obj), Tombstone: true, Key: d.Key})
		return
	}
	a.h.HandleDelete(typed, info)
}

func (a *adapter[T]) wrongType(obj any, tombstone bool) {
	e := &UnexpectedTypeError{Informer: a.name, Want: object.TypeName(reflect.TypeFor[T]()), Got: typeOf(obj), Tombstone: tombstone}
	if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
		e.Key = key
	}
	a.report(e)
}

// skeletonFor builds a new T carrying only the namespace and name of key, so
// that a handler is never handed a nil T.
func skeletonFor[T Object](key string) (T, bool) {
	var zero T
	t := reflect.TypeFor[T]()
	if t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return zero, false
	}
	obj, ok := reflect.New(t.Elem()).Interface().(T)
	if !ok {
		return zero, false
	}
	name, err := cache.ParseObjectName(key)
	if err != nil {
		// A key with extra slashes: keep it whole as the name.
		name = cache.ObjectName{Name: key}
	}
	obj.SetNamespace(name.Namespace)
	obj.SetName(name.Name)
	return obj, true
}
