package fakecluster

import (
	"fmt"
	"strconv"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
)

// watcher is one watch on the store. Events are queued without bound, so a slow reader never
// blocks a writer (client-go's fake watcher panics when 100 events are unread); its goroutine,
// started by the store and ended by Stop, hands them to ResultChan as deep copies, so a
// watcher shares no memory with the store, as a client of an API server shares none.
type watcher struct {
	s   *store
	gvr schema.GroupVersionResource
	ns  string
	sel selector

	out  chan watch.Event
	wake chan struct{} // one pending wake-up
	stop chan struct{}
	once sync.Once

	mu    sync.Mutex
	queue []event
}

func newWatcher(s *store, gvr schema.GroupVersionResource, ns string, sel selector) *watcher {
	return &watcher{
		s: s, gvr: gvr, ns: ns, sel: sel,
		out:  make(chan watch.Event),
		wake: make(chan struct{}, 1),
		stop: make(chan struct{}),
	}
}

// offer queues ev if the watch covers it. As on an API server, a modification that brings an
// object into the watch's selectors is an Added event, and one that takes it out a Deleted event
// (carrying the object as it was).
func (w *watcher) offer(ev event) {
	if ev.gvr != w.gvr {
		return
	}
	now := w.sel.matches(ev.obj, w.ns)
	if ev.typ == watch.Modified && ev.prev != nil {
		before := w.sel.matches(ev.prev, w.ns)
		switch {
		case now && !before:
			ev.typ = watch.Added
		case !now && before:
			gone := ev.prev.DeepCopyObject()
			if m, err := meta.Accessor(gone); err == nil {
				m.SetResourceVersion(strconv.FormatInt(ev.rv, 10))
			}
			ev = event{gvr: ev.gvr, typ: watch.Deleted, obj: gone, rv: ev.rv}
			now = true
		}
	}
	if !now {
		return
	}
	w.mu.Lock()
	w.queue = append(w.queue, ev)
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *watcher) run() {
	defer close(w.out)
	for {
		w.mu.Lock()
		batch := w.queue
		w.queue = nil
		w.mu.Unlock()
		for _, ev := range batch {
			select {
			case w.out <- watch.Event{Type: ev.typ, Object: ev.obj.DeepCopyObject()}:
			case <-w.stop:
				return
			}
		}
		select {
		case <-w.wake:
		case <-w.stop:
			return
		}
	}
}

// ResultChan delivers the events; it is closed after Stop.
func (w *watcher) ResultChan() <-chan watch.Event { return w.out }

// Stop ends the watch. It may be called more than once.
func (w *watcher) Stop() {
	w.once.Do(func() {
		w.s.removeWatcher(w)
		close(w.stop)
	})
}

// unstructuredWatch forwards a watch's events with their objects as unstructured ones, for the
// dynamic front end (the store's events carry built-in kinds as their Go types, and a test's
// reactor may answer with any watch). Stop stops the inner watch too.
type unstructuredWatch struct {
	inner watch.Interface
	out   chan watch.Event
	stop  chan struct{}
	once  sync.Once
}

func newUnstructuredWatch(inner watch.Interface) *unstructuredWatch {
	w := &unstructuredWatch{inner: inner, out: make(chan watch.Event), stop: make(chan struct{})}
	go w.loop()
	return w
}

func (w *unstructuredWatch) loop() {
	defer close(w.out)
	for {
		var ev watch.Event
		var ok bool
		select {
		case ev, ok = <-w.inner.ResultChan():
			if !ok {
				return
			}
		case <-w.stop:
			return
		}
		if _, isStatus := ev.Object.(*metav1.Status); ev.Object != nil && !isStatus {
			u, err := toUnstructured(ev.Object)
			if err != nil {
				ev = watch.Event{Type: watch.Error, Object: &apierrors.NewInternalError(err).ErrStatus}
			} else {
				ev.Object = u
			}
		}
		select {
		case w.out <- ev:
		case <-w.stop:
			return
		}
	}
}

func (w *unstructuredWatch) ResultChan() <-chan watch.Event { return w.out }

func (w *unstructuredWatch) Stop() {
	w.once.Do(func() {
		close(w.stop)
		w.inner.Stop()
	})
}

// Watch streams the changes to gvr in ns (all namespaces for ""). Without a resourceVersion (or
// with "0") it starts with an Added event for every object there is; with the resourceVersion of
// a List or of an event it replays every change since, so nothing written between a List and
// its Watch is lost. A resourceVersion older than the kept history answers 410 Gone.
func (s *store) Watch(gvr schema.GroupVersionResource, ns string, opts ...metav1.ListOptions) (watch.Interface, error) {
	var o metav1.ListOptions
	if len(opts) > 0 {
		o = opts[0]
	}
	return s.watch(gvr, ns, o)
}

func (s *store) watch(gvr schema.GroupVersionResource, ns string, opts metav1.ListOptions) (watch.Interface, error) {
	if _, err := s.c.info(gvr); err != nil {
		return nil, err
	}
	sel, err := newSelector(opts)
	if err != nil {
		return nil, err
	}
	from := int64(-1) // no resourceVersion: start with the current state
	if opts.ResourceVersion != "" && opts.ResourceVersion != "0" {
		if from, err = strconv.ParseInt(opts.ResourceVersion, 10, 64); err != nil || from < 0 {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid resourceVersion %q", opts.ResourceVersion))
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	w := newWatcher(s, gvr, ns, sel)
	if from < 0 {
		for _, obj := range s.matchingLocked(gvr, ns, sel) {
			w.offer(event{gvr: gvr, typ: watch.Added, obj: obj})
		}
	} else {
		if from < s.compacted {
			return nil, apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (%d)", from, s.compacted+1))
		}
		for _, ev := range s.log {
			if ev.rv > from {
				w.offer(ev)
			}
		}
	}
	s.watchers[w] = struct{}{}
	go w.run()
	return w, nil
}

func (s *store) removeWatcher(w *watcher) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.watchers, w)
}
