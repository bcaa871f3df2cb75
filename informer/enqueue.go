package informer

import (
	"errors"
	"slices"
)

// EnqueueMapped returns a Handler that adds fn(obj) to q (ctrlkit's
// workqueue.Queue[K], client-go's workqueue.TypedInterface[K], anything with
// Add(K)) for every event.
// For an update it adds the keys of both the old and the new object, once
// each, so a mapping that changed (a relabelled child, a new owner) reaches
// both the former and the current target. Resync updates are enqueued (that is
// what resync is for). A delete of an object that only left the
// informer's scope (DeleteInfo.OutOfScope) enqueues nothing: it was not
// deleted.
func EnqueueMapped[T Object, K comparable](q interface{ Add(K) }, fn func(T) []K) Handler[T] {
	return &mapped[T, K]{q: q, fn: fn}
}

// mapped is the handler behind EnqueueMapped.
type mapped[T Object, K comparable] struct {
	q  interface{ Add(K) }
	fn func(T) []K
}

// validator is implemented by handlers that can be misconfigured; AddHandler
// refuses them rather than letting them fail on the first event.
type validator interface{ validate() error }

func validateHandler(h any) error {
	if v, ok := h.(validator); ok {
		return v.validate()
	}
	return nil
}

func (m *mapped[T, K]) validate() error {
	switch {
	case m.q == nil:
		return errors.New("enqueue handler has a nil queue")
	case m.fn == nil:
		return errors.New("enqueue handler has a nil key function")
	}
	return nil
}

func (m *mapped[T, K]) HandleAdd(obj T, _ bool) {
	for _, k := range m.fn(obj) {
		m.q.Add(k)
	}
}

func (m *mapped[T, K]) HandleUpdate(oldObj, newObj T) {
	keys := m.fn(newObj)
	for _, k := range keys {
		m.q.Add(k)
	}
	for _, k := range m.fn(oldObj) {
		if !slices.Contains(keys, k) {
			m.q.Add(k)
		}
	}
}

func (m *mapped[T, K]) HandleDelete(obj T, info DeleteInfo) {
	if info.OutOfScope {
		return
	}
	for _, k := range m.fn(obj) {
		m.q.Add(k)
	}
}
