package customresource

import (
	"errors"
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// Event is one watch event with its object converted to T.
//
// For Added, Modified, Deleted and Bookmark events Object is set and Err is nil. For an
// Error event Object is the zero T and Err says what went wrong: the API server's
// status as an *apierrors.StatusError, or a *ConversionError naming an object that
// could not be converted (the watch goes on after it).
type Event[T Object] struct {
	Type   watch.EventType
	Object T
	Err    error
}

// Watcher is a typed watch, the counterpart of watch.Interface. One goroutine converts
// the events of the underlying watch; it ends, closing ResultChan, when Stop is called,
// when the underlying watch ends (its context is cancelled, the server closes it) or
// both.
type Watcher[T Object] struct {
	in       watch.Interface
	codec    *codec[T]
	out      chan Event[T]
	stop     chan struct{}
	stopOnce sync.Once
	done     chan struct{}
}

func newWatcher[T Object](c *codec[T], in watch.Interface) *Watcher[T] {
	w := &Watcher[T]{
		in:    in,
		codec: c,
		// Unbuffered: the reader paces the converter, so a slow reader holds back the
		// underlying watch instead of piling converted objects up here.
		out:  make(chan Event[T]),
		stop: make(chan struct{}),
		done: make(chan struct{}),
	}
	go w.run()
	return w
}

// ResultChan returns the channel of converted events. It is closed when the watch ends.
func (w *Watcher[T]) ResultChan() <-chan Event[T] { return w.out }

// Stop ends the watch and returns after the converting goroutine has exited. It may be
// called any number of times, from any goroutine; events not yet read are dropped.
func (w *Watcher[T]) Stop() {
	w.stopOnce.Do(func() { close(w.stop) })
	<-w.done
}

func (w *Watcher[T]) run() {
	defer close(w.done)
	defer close(w.out)
	// Stopping the underlying watch on every exit path releases its connection (or a
	// fake's registration) whether we stopped because of Stop or because it ended.
	defer w.in.Stop()
	in := w.in.ResultChan()
	for {
		var ev watch.Event
		var ok bool
		select {
		case <-w.stop:
			return
		case ev, ok = <-in:
			if !ok {
				return
			}
		}
		select {
		case <-w.stop:
			return
		case w.out <- w.convert(ev):
		}
	}
}

func (w *Watcher[T]) convert(ev watch.Event) Event[T] {
	if ev.Type == watch.Error {
		return Event[T]{Type: watch.Error, Err: w.watchError(ev.Object)}
	}
	u, err := w.unstructured(ev.Object)
	if err != nil {
		return Event[T]{Type: watch.Error, Err: err}
	}
	obj, err := w.codec.fromUnstructured(u)
	if err != nil {
		return Event[T]{Type: watch.Error, Err: err}
	}
	return Event[T]{Type: ev.Type, Object: obj}
}

// unstructured returns the event's object as unstructured. The dynamic client always
// sends *unstructured.Unstructured; other objects (from a hand-made fake watch) are
// converted rather than refused.
func (w *Watcher[T]) unstructured(obj runtime.Object) (*unstructured.Unstructured, error) {
	switch o := obj.(type) {
	case *unstructured.Unstructured:
		return o, nil
	case nil:
		return nil, w.codec.conversionError("", "", false, errors.New("watch event without an object"))
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, w.codec.conversionError("", "", false, fmt.Errorf("watch event object %T: %w", obj, err))
	}
	return &unstructured.Unstructured{Object: m}, nil
}

// watchError turns the object of an Error event into an error, the way client-go's
// reflector does: a metav1.Status becomes an *apierrors.StatusError.
func (w *Watcher[T]) watchError(obj runtime.Object) error {
	switch o := obj.(type) {
	case *metav1.Status:
		return apierrors.FromObject(o)
	case *unstructured.Unstructured:
		status := &metav1.Status{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, status); err == nil && status.Status != "" {
			return apierrors.FromObject(status)
		}
	}
	return fmt.Errorf("customresource: watch of %s: error event with %T", resourceString(w.codec.gvr), obj)
}
