package directinformer

import (
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/client-go/tools/cache"
)

// listener is one handler and its registration. Events are handed to it by
// whichever goroutine applied them; busy and pending make the calls one at a
// time and in order when two goroutines hand it events at once (a join's
// replay beside the reflector).
type listener struct {
	handler    cache.ResourceEventHandler
	name       string
	synced     chan struct{} // closed once the handler has seen the initial list
	resync     time.Duration // under Informer.mu
	nextResync time.Time     // under Informer.mu
	syncing    atomic.Bool   // its resync is due: it receives updates that changed nothing

	mu       sync.Mutex
	busy     bool
	removed  bool
	isSynced bool
	pending  []event
}

var _ cache.ResourceEventHandlerRegistration = (*listener)(nil)

// deliver calls the handler with e, or leaves e to the goroutine that is
// calling it now.
func (l *listener) deliver(e event) {
	if e.sync && !l.syncing.Load() {
		return
	}
	l.mu.Lock()
	if l.removed {
		l.mu.Unlock()
		return
	}
	if l.busy {
		l.pending = append(l.pending, e)
		l.mu.Unlock()
		return
	}
	l.busy = true
	l.mu.Unlock()
	l.call(e)
	l.drain()
}

// drain calls the handler with what was left pending, until nothing is, and
// then lets the next deliver call it directly.
func (l *listener) drain() {
	for {
		l.mu.Lock()
		batch := l.pending
		l.pending = nil
		if len(batch) == 0 || l.removed {
			l.busy = false
			l.mu.Unlock()
			return
		}
		l.mu.Unlock()
		for _, e := range batch {
			l.call(e)
		}
	}
}

func (l *listener) call(e event) {
	switch e.kind {
	case added:
		l.handler.OnAdd(e.obj, e.initial)
	case updated:
		l.handler.OnUpdate(e.old, e.obj)
	case deleted:
		l.handler.OnDelete(e.obj)
	case listed:
		l.markSynced()
	}
}

func (l *listener) markSynced() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.isSynced {
		l.isSynced = true
		close(l.synced)
	}
}

func (l *listener) remove() {
	l.mu.Lock()
	l.removed = true
	l.pending = nil
	l.mu.Unlock()
}

// HasSynced reports whether the handler has seen the initial list.
func (l *listener) HasSynced() bool { return doneChecker{done: l.synced}.isDone() }

// HasSyncedChecker is HasSynced as a channel.
func (l *listener) HasSyncedChecker() cache.DoneChecker { return doneChecker{l.name, l.synced} }
