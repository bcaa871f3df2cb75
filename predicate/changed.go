package predicate

import (
	"maps"

	"github.com/ctrlkit/ctrlkit/informer"
)

// The *Changed predicates filter updates only: creates and deletes always
// pass, as in controller-runtime, because a new or a vanished object is
// always news to a controller. An update with a nil object on either side
// (never from an informer; only from hand-made events) passes too.

// GenerationChanged passes updates that changed metadata.generation, which
// the API server bumps on writes to an object's spec but not on writes to
// its status subresource, its labels or its annotations. On a controller's
// primary type it is the standard way not to reconcile the controller's own
// status writes (controller-runtime's GenerationChangedPredicate).
//
// Beware what it also drops: a status or metadata change made by someone
// else is not reconciled (a wiped status is not rewritten until the next
// spec change or resync), and resyncs, which carry an unchanged generation,
// are dropped too. Not every API bumps generation only for spec: a
// Deployment bumps it on annotation changes as well, and a custom resource
// without a status subresource bumps it on status writes. Combine with Or
// (LabelsChanged, AnnotationsChanged) when metadata carries intent.
func GenerationChanged[T informer.Object]() Predicate[T] {
	return Funcs[T]{UpdateFunc: func(e UpdateEvent[T]) bool {
		if anyNil(e) {
			return true
		}
		return e.ObjectOld.GetGeneration() != e.ObjectNew.GetGeneration()
	}}
}

// ResourceVersionChanged passes updates that changed metadata.resourceVersion,
// that is every real change, and drops resyncs (informer.IsResync): the
// periodic or relist updates that re-deliver an unchanged object. Use it on
// watches whose resyncs would only repeat work another watch resyncs anyway
// (controller.Owns uses it for the owned objects, as kube-controller-manager's
// controllers ignore same-resourceVersion updates of their Pods).
// controller-runtime's ResourceVersionChangedPredicate.
//
// Beware in tests on client-go's plain fake clientset, which keeps whatever
// resourceVersion the test gave (usually ""): every update there looks like
// a resync. ctrlkit's fake cluster (testkit.NewFake) stamps a new
// resourceVersion on every write, as an API server does.
func ResourceVersionChanged[T informer.Object]() Predicate[T] {
	return Funcs[T]{UpdateFunc: func(e UpdateEvent[T]) bool {
		return anyNil(e) || !informer.IsResync(e.ObjectOld, e.ObjectNew)
	}}
}

// LabelsChanged passes updates whose labels differ (a label added, removed or
// given another value). A nil and an empty label map are equal.
// controller-runtime's LabelChangedPredicate.
func LabelsChanged[T informer.Object]() Predicate[T] {
	return Funcs[T]{UpdateFunc: func(e UpdateEvent[T]) bool {
		return anyNil(e) || !maps.Equal(e.ObjectOld.GetLabels(), e.ObjectNew.GetLabels())
	}}
}

// AnnotationsChanged passes updates whose annotations differ. A nil and an
// empty annotation map are equal. controller-runtime's
// AnnotationChangedPredicate.
func AnnotationsChanged[T informer.Object]() Predicate[T] {
	return Funcs[T]{UpdateFunc: func(e UpdateEvent[T]) bool {
		return anyNil(e) || !maps.Equal(e.ObjectOld.GetAnnotations(), e.ObjectNew.GetAnnotations())
	}}
}

// anyNil reports whether an update lacks an object: the change predicates
// cannot compare, so they let it through rather than call a method on nil.
func anyNil[T informer.Object](e UpdateEvent[T]) bool {
	var zero T
	return e.ObjectOld == zero || e.ObjectNew == zero
}
