package predicate

import (
	"errors"
	"fmt"
	"reflect"

	"github.com/ctrlkit/ctrlkit/informer"
)

// ErrInvalidPredicate is matched (errors.Is) by the errors of Validate and
// FromLabelSelector.
var ErrInvalidPredicate = errors.New("invalid predicate")

// And passes an event when every one of ps does; it asks them in order and
// stops at the first that refuses. And() passes everything.
func And[T informer.Object](ps ...Predicate[T]) Predicate[T] {
	return and[T](ps)
}

// Or passes an event when any of ps does; it asks them in order and stops at
// the first that passes. Or() passes nothing.
func Or[T informer.Object](ps ...Predicate[T]) Predicate[T] {
	return or[T](ps)
}

// Not passes an event when p refuses it.
//
// Beware negating a predicate that judges objects (LabelSelector, Matching)
// on deletes: they pass a delete whose object is missing, so its negation
// drops it. Prefer a negated selector (LabelSelector of "!skip") to
// Not(LabelSelector of "skip").
func Not[T informer.Object](p Predicate[T]) Predicate[T] {
	return not[T]{p}
}

// A nil predicate inside a composition is reported by Validate; if one is
// used anyway it passes every event, like a nil function in Funcs, rather
// than panic on the informer's goroutine.

type and[T informer.Object] []Predicate[T]

func (a and[T]) Create(e CreateEvent[T]) bool {
	for _, p := range a {
		if p != nil && !p.Create(e) {
			return false
		}
	}
	return true
}

func (a and[T]) Update(e UpdateEvent[T]) bool {
	for _, p := range a {
		if p != nil && !p.Update(e) {
			return false
		}
	}
	return true
}

func (a and[T]) Delete(e DeleteEvent[T]) bool {
	for _, p := range a {
		if p != nil && !p.Delete(e) {
			return false
		}
	}
	return true
}

type or[T informer.Object] []Predicate[T]

func (o or[T]) Create(e CreateEvent[T]) bool {
	for _, p := range o {
		if p == nil || p.Create(e) {
			return true
		}
	}
	return false
}

func (o or[T]) Update(e UpdateEvent[T]) bool {
	for _, p := range o {
		if p == nil || p.Update(e) {
			return true
		}
	}
	return false
}

func (o or[T]) Delete(e DeleteEvent[T]) bool {
	for _, p := range o {
		if p == nil || p.Delete(e) {
			return true
		}
	}
	return false
}

type not[T informer.Object] struct{ p Predicate[T] }

func (n not[T]) Create(e CreateEvent[T]) bool { return n.p != nil && !n.p.Create(e) }
func (n not[T]) Update(e UpdateEvent[T]) bool { return n.p != nil && !n.p.Update(e) }
func (n not[T]) Delete(e DeleteEvent[T]) bool { return n.p != nil && !n.p.Delete(e) }

// Validate reports the first mistake in p that would otherwise show only as
// events silently passing or dropped: a nil predicate (also inside And, Or
// and Not, and a nil pointer of your own predicate type), a nil Matching
// function, a nil LabelSelector selector. The error
// matches ErrInvalidPredicate and names the culprit's place, e.g.
// "invalid predicate: And[1]: Not: nil". controller.Watch validates its
// predicates with it.
func Validate[T informer.Object](p Predicate[T]) error {
	if where := invalid(p); where != "" {
		return fmt.Errorf("%w: %s", ErrInvalidPredicate, where)
	}
	return nil
}

// invalid returns where in p the first mistake is, or "".
func invalid[T informer.Object](p Predicate[T]) string {
	switch v := p.(type) {
	case nil:
		return "nil"
	case and[T]:
		return invalidIn("And", v)
	case or[T]:
		return invalidIn("Or", v)
	case not[T]:
		if w := invalid(v.p); w != "" {
			return "Not: " + w
		}
	case matching[T]:
		if v.match == nil {
			return v.name() + ": nil function"
		}
	case labelSelector[T]:
		if v.sel == nil {
			return v.name() + ": nil selector"
		}
	default:
		// A nil pointer or func of the user's own type: its methods would
		// likely panic on the informer's goroutine.
		switch rv := reflect.ValueOf(p); rv.Kind() {
		case reflect.Pointer, reflect.Func, reflect.Map, reflect.Slice, reflect.Chan, reflect.Interface:
			if rv.IsNil() {
				return fmt.Sprintf("nil %T", p)
			}
		}
	}
	return ""
}

func invalidIn[T informer.Object](name string, ps []Predicate[T]) string {
	for i, p := range ps {
		if w := invalid(p); w != "" {
			return fmt.Sprintf("%s[%d]: %s", name, i, w)
		}
	}
	return ""
}
