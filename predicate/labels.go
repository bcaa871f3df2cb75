package predicate

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/ctrlkit/ctrlkit/informer"
)

// LabelSelector passes the events of objects whose labels sel matches, with
// Matching's rules: a create or delete when the object matches, an update
// when the old or the new object matches (so an object relabelled out of the
// selection is seen once more, and the controller can let go of it), a
// delete whose object is missing always.
//
// This differs from controller-runtime's LabelSelectorPredicate, which
// judges an update by the new object only (LabelSelectorNewObject does). Note that the cache still holds
// every object; to cache only the selected ones, scope the informer
// instead. A nil sel matches nothing (and Validate reports it).
func LabelSelector[T informer.Object](sel labels.Selector) Predicate[T] {
	return labelSelector[T]{sel: sel, matching: matching[T]{match: func(obj T) bool {
		return sel != nil && sel.Matches(labels.Set(obj.GetLabels()))
	}}}
}

// labelSelector is Matching with its selector kept for Validate.
type labelSelector[T informer.Object] struct {
	matching[T]
	sel labels.Selector
}

// name is the constructor's name, for Validate's messages.
func (l labelSelector[T]) name() string {
	if l.newOnly {
		return "LabelSelectorNewObject"
	}
	return "LabelSelector"
}

// FromLabelSelector is LabelSelector for an API label selector, such as a
// spec.selector field. As everywhere in the API, a nil selector matches
// nothing and an empty one matches everything. An invalid selector is an
// error matching ErrInvalidPredicate that wraps the parse error.
func FromLabelSelector[T informer.Object](s *metav1.LabelSelector) (Predicate[T], error) {
	sel, err := metav1.LabelSelectorAsSelector(s)
	if err != nil {
		return nil, fmt.Errorf("%w: label selector: %w", ErrInvalidPredicate, err)
	}
	return LabelSelector[T](sel), nil
}
