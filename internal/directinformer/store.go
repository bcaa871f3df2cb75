package directinformer

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/cache"
)

// store is the informer as the reflector's cache.ReflectorStore: each call
// applies a change to the indexer and hands it to the handlers.
type store Informer

// kind is what an event tells a handler.
type kind uint8

const (
	added kind = iota
	updated
	deleted
	listed // the listener has seen the initial list
)

type event struct {
	kind    kind
	initial bool // an add of the initial list
	sync    bool // an update that changed no resourceVersion: for syncing listeners only
	old     any
	obj     any
}

// unchanged reports whether an update kept the resourceVersion: a resync, or
// an object a relist found as it was.
func unchanged(old, obj any) bool {
	o, ok1 := old.(metav1.Object)
	n, ok2 := obj.(metav1.Object)
	return ok1 && ok2 && o.GetResourceVersion() == n.GetResourceVersion()
}

func (s *store) Add(obj any) error    { return s.upsert(obj) }
func (s *store) Update(obj any) error { return s.upsert(obj) }

// upsert caches obj and tells the handlers: an add if its key was not
// cached, else an update from the cached object (client-go's informer
// decides by the cache too, not by the watch event's type).
func (s *store) upsert(obj any) error {
	return s.apply(obj, func(obj any) (event, error) {
		old, exists, err := s.indexer.Get(obj)
		switch {
		case err != nil:
			return event{}, err
		case exists:
			return event{kind: updated, sync: unchanged(old, obj), old: old, obj: obj}, s.indexer.Update(obj)
		default:
			return event{kind: added, obj: obj}, s.indexer.Add(obj)
		}
	})
}

// Delete uncaches obj, the object's last state the watch reported.
func (s *store) Delete(obj any) error {
	return s.apply(obj, func(obj any) (event, error) {
		return event{kind: deleted, obj: obj}, s.indexer.Delete(obj)
	})
}

// apply transforms obj, applies it to the cache with change (under mu, so a
// joining handler's snapshot is before or after it), and hands the event
// change returns to the handlers.
func (s *store) apply(obj any, change func(obj any) (event, error)) error {
	s.dispatch.Lock()
	defer s.dispatch.Unlock()
	defer s.observe(s.start())
	obj, err := s.transformed(obj)
	if err != nil {
		return err
	}
	s.mu.Lock()
	e, err := change(obj)
	ls := s.listeners
	s.mu.Unlock()
	if err != nil {
		return fmt.Errorf("informer %s: %w", s.name, err)
	}
	for _, l := range ls {
		l.deliver(e)
	}
	return nil
}

// Replace makes the cache the list: a tombstone for each cached object the
// list lacks, then an add or update for each listed one. The first Replace
// is the initial list: its adds say so, and it syncs the informer.
func (s *store) Replace(list []any, resourceVersion string) error {
	s.dispatch.Lock()
	defer s.dispatch.Unlock()
	defer s.observe(s.start())
	for n, obj := range list {
		t, err := s.transformed(obj)
		if err != nil {
			return err
		}
		list[n] = t
	}
	keys := make(sets.Set[string], len(list))
	for _, obj := range list {
		key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
		if err != nil {
			return fmt.Errorf("informer %s: %w", s.name, cache.KeyError{Obj: obj, Err: err})
		}
		keys.Insert(key)
	}

	s.mu.Lock()
	initial := !(*Informer)(s).HasSynced()
	events := make([]event, 0, len(list))
	for _, key := range s.indexer.ListKeys() {
		if keys.Has(key) {
			continue
		}
		old, _, _ := s.indexer.GetByKey(key)
		events = append(events, event{kind: deleted, obj: cache.DeletedFinalStateUnknown{Key: key, Obj: old}})
	}
	for _, obj := range list {
		if old, exists, _ := s.indexer.Get(obj); exists {
			events = append(events, event{kind: updated, sync: unchanged(old, obj), old: old, obj: obj})
		} else {
			events = append(events, event{kind: added, initial: initial, obj: obj})
		}
	}
	err := s.indexer.Replace(list, resourceVersion)
	if err == nil && initial {
		close(s.synced)
	}
	ls := s.listeners
	s.mu.Unlock()
	if err != nil {
		return fmt.Errorf("informer %s: %w", s.name, err)
	}
	for _, l := range ls {
		for _, e := range events {
			l.deliver(e)
		}
		if initial {
			l.deliver(event{kind: listed})
		}
	}
	return nil
}

// Resync hands every cached object, as an update from itself, to the
// listeners shouldResync marked syncing.
func (s *store) Resync() error {
	s.dispatch.Lock()
	defer s.dispatch.Unlock()
	defer s.observe(s.start())
	s.mu.Lock()
	ls := s.listeners
	objs := s.indexer.List()
	s.mu.Unlock()
	for _, l := range ls {
		if !l.syncing.Load() {
			continue
		}
		for _, obj := range objs {
			l.deliver(event{kind: updated, sync: true, old: obj, obj: obj})
		}
	}
	return nil
}

// start is when a change began, if its latency is reported.
func (s *store) start() time.Time {
	if s.metrics.latency == nil {
		return time.Time{}
	}
	return s.clock.Now()
}

// observe reports how long a change took to apply and hand out.
func (s *store) observe(start time.Time) {
	if !start.IsZero() {
		s.metrics.latency.Observe(s.clock.Since(start).Seconds())
	}
}

func (s *store) transformed(obj any) (any, error) {
	if s.transform == nil {
		return obj, nil
	}
	if _, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		return obj, nil
	}
	t, err := s.transform(obj)
	if err != nil {
		return nil, fmt.Errorf("informer %s: transform: %w", s.name, err)
	}
	return t, nil
}
