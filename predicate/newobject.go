package predicate

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/ctrlkit/ctrlkit/informer"
)

// MatchingNewObject is Matching judging an update by its new object only, as
// controller-runtime's NewPredicateFuncs does: a create or a delete passes
// when match(Object), an update when match(ObjectNew).
//
// Which to choose: Matching, unless the controller must not hear of an object
// once it stops matching. With Matching the update that takes an object out
// of the selection still passes (its old object matches), so the controller
// can undo what it did for it; with MatchingNewObject that update is dropped
// and the controller never learns the object left, until a resync or another
// watch brings its key. Port NewPredicateFuncs to MatchingNewObject to keep
// its behaviour exactly, then consider Matching.
//
// What cannot be judged passes, as with Matching: a delete whose object is
// missing (DeleteInfo.ObjectMissing), an event with a nil object (for an
// update, a nil ObjectNew), and every event when match is nil (Validate
// reports it).
func MatchingNewObject[T informer.Object](match func(T) bool) Predicate[T] {
	return matching[T]{match: match, newOnly: true}
}

// LabelSelectorNewObject is LabelSelector judging an update by its new
// object only, as controller-runtime's LabelSelectorPredicate does: a create
// or a delete passes when sel matches the object's labels, an update when it
// matches the new object's.
//
// Which to choose: LabelSelector, unless relabelling an object out of the
// selection must stay unseen. LabelSelector passes that update (the old
// object matched), so the controller can let go of the object;
// LabelSelectorNewObject drops it. A nil sel matches nothing (Validate
// reports it); what cannot be judged passes, as with MatchingNewObject.
func LabelSelectorNewObject[T informer.Object](sel labels.Selector) Predicate[T] {
	return labelSelector[T]{sel: sel, matching: matching[T]{newOnly: true, match: func(obj T) bool {
		return sel != nil && sel.Matches(labels.Set(obj.GetLabels()))
	}}}
}

// FromLabelSelectorNewObject is LabelSelectorNewObject for an API label
// selector, controller-runtime's LabelSelectorPredicate(s) as
// FromLabelSelectorNewObject[T](&s). A nil selector matches nothing and an
// empty one everything; an invalid selector is an error matching
// ErrInvalidPredicate that wraps the parse error.
func FromLabelSelectorNewObject[T informer.Object](s *metav1.LabelSelector) (Predicate[T], error) {
	sel, err := metav1.LabelSelectorAsSelector(s)
	if err != nil {
		return nil, fmt.Errorf("%w: label selector: %w", ErrInvalidPredicate, err)
	}
	return LabelSelectorNewObject[T](sel), nil
}
