package informer

import (
	"maps"
	"slices"
	"sync"

	"k8s.io/client-go/tools/cache"
)

// Sync of an informer following a NamespaceSet: unlike client-go's, it can
// be lost (a namespace added) and regained, so its checkers hand out a fresh
// channel when it is lost (syncGate), and the informer's goroutine watches
// whatever has not synced yet to close them (pending, refresh).

// current reports whether the set's latest change is applied and the set
// itself is filled (NamespacesMatching).
func (d *dynamicNamespaces) current() bool {
	if d.applied.Load() != d.set.generation() {
		return false
	}
	src := d.set.sourceSynced()
	return src == nil || isDone(src.Done())
}

func (d *dynamicNamespaces) informerSynced() bool {
	if !d.current() {
		return false
	}
	for _, inf := range d.m.each() {
		if !inf.HasSynced() {
			return false
		}
	}
	return true
}

// pending returns a channel closed when something not synced yet syncs: the
// set's source, a namespace's informer or one of its handler registrations.
// nil when everything has synced.
func (d *dynamicNamespaces) pending() <-chan struct{} {
	if src := d.set.sourceSynced(); src != nil && !isDone(src.Done()) {
		return src.Done()
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, e := range d.entries {
		if c := e.inf.HasSyncedChecker(); !isDone(c.Done()) {
			return c.Done()
		}
	}
	for h := range d.handlers {
		for _, r := range h.regs {
			if c := r.HasSyncedChecker(); !isDone(c.Done()) {
				return c.Done()
			}
		}
	}
	return nil
}

// refresh brings the sync gates up to date.
func (d *dynamicNamespaces) refresh() {
	d.gate.refresh()
	d.mu.Lock()
	handlers := slices.Collect(maps.Keys(d.handlers))
	d.mu.Unlock()
	for _, h := range handlers {
		h.gate.refresh()
	}
}

func isDone(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// dynRegistration is a handler's registrations on the current namespaces.
type dynRegistration struct {
	d       *dynamicNamespaces
	handler cache.ResourceEventHandler
	add     func(cache.SharedIndexInformer) (cache.ResourceEventHandlerRegistration, error)
	regs    map[string]cache.ResourceEventHandlerRegistration // guarded by d.mu
	gate    *syncGate
}

// HasSynced: the set's latest change is applied and the handler has seen the
// initial list of every current namespace.
func (r *dynRegistration) HasSynced() bool {
	if !r.d.current() {
		return false
	}
	r.d.mu.Lock()
	defer r.d.mu.Unlock()
	if len(r.regs) != len(r.d.entries) {
		return false // removed meanwhile, or a namespace refused it
	}
	for _, reg := range r.regs {
		if !reg.HasSynced() {
			return false
		}
	}
	return true
}

func (r *dynRegistration) HasSyncedChecker() cache.DoneChecker { return r.gate }

// syncGate is a cache.DoneChecker for something whose sync can be lost (a
// namespace added): Done's channel is closed while check holds, and a fresh
// open one is handed out once it no longer does. The owner's goroutine calls
// refresh whenever check may have changed; Done checks too, so a caller never
// gets a closed channel for something not synced.
type syncGate struct {
	name  string
	check func() bool
	poke  func()

	mu     sync.Mutex
	ch     chan struct{}
	closed bool
}

func newSyncGate(name string, check func() bool, poke func()) *syncGate {
	return &syncGate{name: name, check: check, poke: poke, ch: make(chan struct{})}
}

func (g *syncGate) Name() string { return g.name }

func (g *syncGate) Done() <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed && !g.check() {
		g.ch, g.closed = make(chan struct{}), false
		g.poke()
	}
	return g.ch
}

func (g *syncGate) refresh() {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch synced := g.check(); {
	case synced && !g.closed:
		close(g.ch)
		g.closed = true
	case !synced && g.closed:
		g.ch, g.closed = make(chan struct{}), false
	}
}
