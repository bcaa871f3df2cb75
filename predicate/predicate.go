package predicate

import (
	"github.com/ctrlkit/ctrlkit/informer"
)

// Predicate decides which informer events reach a controller's mapping and
// queue. Each method returns true to let the event through. Predicates run on
// the informer's notification goroutine, once per event, so they must be
// fast, must not block and must not mutate the objects, which are the
// cache's.
//
// There is no Generic method, unlike controller-runtime's Predicate: ctrlkit
// has no generic (channel) events; every event comes from an informer and is
// a create, an update or a delete.
type Predicate[T informer.Object] interface {
	// Create reports whether an object new to the cache is processed.
	Create(CreateEvent[T]) bool
	// Update reports whether a change (or a resync) is processed.
	Update(UpdateEvent[T]) bool
	// Delete reports whether a deletion is processed.
	Delete(DeleteEvent[T]) bool
}

// CreateEvent is an object added to the informer's cache.
type CreateEvent[T informer.Object] struct {
	// Object is the new object.
	Object T
	// IsInInitialList is true for objects of the informer's first list (or,
	// for a handler added late, of the cache when it was added).
	IsInInitialList bool
}

// UpdateEvent is a change of a cached object. When ObjectOld and ObjectNew
// have the same resourceVersion it is a resync (informer.IsResync): nothing
// changed on the server.
type UpdateEvent[T informer.Object] struct {
	// ObjectOld is the object as the cache held it before.
	ObjectOld T
	// ObjectNew is the object as the cache holds it now.
	ObjectNew T
}

// DeleteEvent is an object leaving the informer's cache. The embedded
// informer.DeleteInfo says how the deletion was seen: FinalStateUnknown when
// the informer missed the delete and inferred it on relist (Object is then
// the last state the cache held, possibly stale), and ObjectMissing in the
// rare case that no state at all was known (Object is a skeleton carrying only
// the namespace and name). Key is always set. FinalStateUnknown is
// controller-runtime's DeleteStateUnknown.
type DeleteEvent[T informer.Object] struct {
	// Object is the deleted object (see DeleteInfo for how much it is
	// worth); never a nil T when the event comes from an informer.
	Object T
	informer.DeleteInfo
}

// Funcs is a Predicate built from optional functions, controller-runtime's
// predicate.Funcs: a nil function lets its events through, so
// Funcs[T]{UpdateFunc: f} filters updates only.
type Funcs[T informer.Object] struct {
	// CreateFunc filters creates; nil passes them all.
	CreateFunc func(CreateEvent[T]) bool
	// UpdateFunc filters updates; nil passes them all.
	UpdateFunc func(UpdateEvent[T]) bool
	// DeleteFunc filters deletes; nil passes them all.
	DeleteFunc func(DeleteEvent[T]) bool
}

// Create calls CreateFunc, or returns true when it is nil.
func (f Funcs[T]) Create(e CreateEvent[T]) bool { return f.CreateFunc == nil || f.CreateFunc(e) }

// Update calls UpdateFunc, or returns true when it is nil.
func (f Funcs[T]) Update(e UpdateEvent[T]) bool { return f.UpdateFunc == nil || f.UpdateFunc(e) }

// Delete calls DeleteFunc, or returns true when it is nil.
func (f Funcs[T]) Delete(e DeleteEvent[T]) bool { return f.DeleteFunc == nil || f.DeleteFunc(e) }

// Matching returns a Predicate that lets through the events of objects for
// which match returns true: a create or a delete when match(Object), an
// update when match(ObjectOld) or match(ObjectNew).
//
// Judging both sides of an update is a deliberate difference from
// controller-runtime's NewPredicateFuncs, which looks only at the new
// object: an object that stops matching (its label removed, its phase left
// Running) is then still seen once, so the controller can undo what it did
// for it, as a selector-scoped watch would report it deleted. To look only
// at the new object, write Funcs with an UpdateFunc.
//
// A delete whose object is missing (DeleteInfo.ObjectMissing: a skeleton with
// only namespace and name) passes without calling match, as does any event
// with a nil object: a predicate that cannot judge lets the event through,
// because an extra reconcile is harmless and a lost delete is not. A nil
// match lets every event through (Validate reports it).
func Matching[T informer.Object](match func(T) bool) Predicate[T] {
	return matching[T]{match: match}
}

type matching[T informer.Object] struct {
	match func(T) bool
	// newOnly judges an update by its new object alone (MatchingNewObject).
	newOnly bool
}

// name is the constructor's name, for Validate's messages.
func (m matching[T]) name() string {
	if m.newOnly {
		return "MatchingNewObject"
	}
	return "Matching"
}

func (m matching[T]) test(obj T) bool {
	var zero T
	return m.match == nil || obj == zero || m.match(obj)
}

func (m matching[T]) Create(e CreateEvent[T]) bool { return m.test(e.Object) }

func (m matching[T]) Update(e UpdateEvent[T]) bool {
	if m.newOnly {
		return m.test(e.ObjectNew)
	}
	return m.test(e.ObjectOld) || m.test(e.ObjectNew)
}

func (m matching[T]) Delete(e DeleteEvent[T]) bool {
	return e.ObjectMissing || m.test(e.Object)
}
