package informer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
)

// multiNamespace is the cache.SharedIndexInformer of a scope with several
// namespaces: one client-go informer per namespace, seen as one. Reads span
// or route (a key or the namespace index goes to its namespace's indexer
// only), handlers and indexes are added to every namespace, and it has
// synced when every namespace has. It is what Informer.Informer returns for
// such a scope, so code using the escape hatch sees the same cache as the
// lister. With InNamespaceSet its namespaces change (dyn, namespacedynamic.go).
type multiNamespace struct {
	f    *Factory
	name string
	// view is the namespaces served now. It is never changed, only replaced
	// (by dyn), so reads take no lock.
	view   atomic.Pointer[nsView]
	synced cache.DoneChecker
	dyn    *dynamicNamespaces // nil for a fixed set of namespaces
}

// nsView is one immutable set of namespaces and their informers.
type nsView struct {
	namespaces []string // sorted
	byNS       map[string]cache.SharedIndexInformer
	// spans: the informers are shards (InShardSet), keyed by selector; a key
	// or namespace may be in any of them.
	spans bool
}

func newView(byNS map[string]cache.SharedIndexInformer) *nsView {
	v := &nsView{byNS: byNS}
	for ns := range byNS {
		v.namespaces = append(v.namespaces, ns)
	}
	slices.Sort(v.namespaces)
	return v
}

// each returns the informers in namespace order.
func (v *nsView) each() []cache.SharedIndexInformer {
	out := make([]cache.SharedIndexInformer, 0, len(v.namespaces))
	for _, ns := range v.namespaces {
		out = append(out, v.byNS[ns])
	}
	return out
}

var (
	_ cache.SharedIndexInformer = (*multiNamespace)(nil)
	_ cache.Controller          = (*multiNamespace)(nil)
	_ cache.Indexer             = (*multiIndexer)(nil)
)

func newMultiNamespace(f *Factory, name string, byNS map[string]cache.SharedIndexInformer) *multiNamespace {
	m := &multiNamespace{f: f, name: name}
	v := newView(byNS)
	m.view.Store(v)
	checkers := make([]cache.DoneChecker, 0, len(byNS))
	for _, inf := range v.each() {
		checkers = append(checkers, inf.HasSyncedChecker())
	}
	m.synced = &allDone{f: f, name: "informer " + name + " in namespaces " + strings.Join(v.namespaces, ","), children: checkers}
	return m
}

// each returns the per-namespace informers in namespace order.
func (m *multiNamespace) each() []cache.SharedIndexInformer { return m.view.Load().each() }

func (m *multiNamespace) AddEventHandler(h cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error) {
	return m.add(h, func(inf cache.SharedIndexInformer) (cache.ResourceEventHandlerRegistration, error) {
		return inf.AddEventHandler(h)
	})
}

func (m *multiNamespace) AddEventHandlerWithResyncPeriod(h cache.ResourceEventHandler, resync time.Duration) (cache.ResourceEventHandlerRegistration, error) {
	return m.add(h, func(inf cache.SharedIndexInformer) (cache.ResourceEventHandlerRegistration, error) {
		return inf.AddEventHandlerWithResyncPeriod(h, resync)
	})
}

func (m *multiNamespace) AddEventHandlerWithOptions(h cache.ResourceEventHandler, opts cache.HandlerOptions) (cache.ResourceEventHandlerRegistration, error) {
	return m.add(h, func(inf cache.SharedIndexInformer) (cache.ResourceEventHandlerRegistration, error) {
		return inf.AddEventHandlerWithOptions(h, opts)
	})
}

// add registers a handler on every namespace, or on none.
func (m *multiNamespace) add(h cache.ResourceEventHandler, fn func(cache.SharedIndexInformer) (cache.ResourceEventHandlerRegistration, error)) (cache.ResourceEventHandlerRegistration, error) {
	if m.dyn != nil {
		return m.dyn.addHandler(h, fn)
	}
	v := m.view.Load()
	reg := &multiRegistration{owner: m, regs: map[string]cache.ResourceEventHandlerRegistration{}}
	checkers := make([]cache.DoneChecker, 0, len(v.namespaces))
	for _, ns := range v.namespaces {
		r, err := fn(v.byNS[ns])
		if err != nil {
			_ = m.RemoveEventHandler(reg) // undo the namespaces done so far
			return nil, fmt.Errorf("namespace %s: %w", ns, err)
		}
		reg.regs[ns] = r
		checkers = append(checkers, r.HasSyncedChecker())
	}
	reg.synced = &allDone{f: m.f, name: "handler of informer " + m.name, children: checkers}
	return reg, nil
}

func (m *multiNamespace) RemoveEventHandler(handle cache.ResourceEventHandlerRegistration) error {
	if m.dyn != nil {
		return m.dyn.removeHandler(handle)
	}
	v := m.view.Load()
	reg, ok := handle.(*multiRegistration)
	if !ok || reg.owner != m {
		return fmt.Errorf("registration %T was not returned by this informer", handle)
	}
	var errs []error
	for ns, r := range reg.regs {
		if err := v.byNS[ns].RemoveEventHandler(r); err != nil {
			errs = append(errs, fmt.Errorf("namespace %s: %w", ns, err))
		}
	}
	return errors.Join(errs...)
}

func (m *multiNamespace) GetStore() cache.Store           { return &multiIndexer{m: m} }
func (m *multiNamespace) GetIndexer() cache.Indexer       { return &multiIndexer{m: m} }
func (m *multiNamespace) GetController() cache.Controller { return m }

// Run runs every namespace's informer until stopCh closes. Informers of a
// Factory are already run by it; client-go then only logs a warning.
func (m *multiNamespace) Run(stopCh <-chan struct{}) {
	m.RunWithContext(wait.ContextForChannel(stopCh))
}

// RunWithContext is Run with a context.
func (m *multiNamespace) RunWithContext(ctx context.Context) {
	var wg sync.WaitGroup
	for _, inf := range m.each() {
		wg.Go(func() { inf.RunWithContext(ctx) })
	}
	wg.Wait()
}

func (m *multiNamespace) HasSynced() bool {
	if m.dyn != nil {
		return m.dyn.informerSynced()
	}
	for _, inf := range m.each() {
		if !inf.HasSynced() {
			return false
		}
	}
	return true
}

func (m *multiNamespace) HasSyncedChecker() cache.DoneChecker { return m.synced }

// LastSyncResourceVersion is the namespaces' common resourceVersion, or ""
// (unknown) when they differ: resourceVersions are opaque and cannot be
// ordered by a client.
func (m *multiNamespace) LastSyncResourceVersion() string {
	return common(m.each(), func(inf cache.SharedIndexInformer) string { return inf.LastSyncResourceVersion() })
}

func (m *multiNamespace) SetWatchErrorHandler(h cache.WatchErrorHandler) error {
	if m.dyn != nil {
		return m.dyn.unsupported("SetWatchErrorHandler")
	}
	return m.forEach(func(inf cache.SharedIndexInformer) error { return inf.SetWatchErrorHandler(h) })
}

func (m *multiNamespace) SetWatchErrorHandlerWithContext(h cache.WatchErrorHandlerWithContext) error {
	if m.dyn != nil {
		return m.dyn.unsupported("SetWatchErrorHandlerWithContext")
	}
	return m.forEach(func(inf cache.SharedIndexInformer) error { return inf.SetWatchErrorHandlerWithContext(h) })
}

func (m *multiNamespace) SetTransform(fn cache.TransformFunc) error {
	if m.dyn != nil {
		return m.dyn.unsupported("SetTransform")
	}
	return m.forEach(func(inf cache.SharedIndexInformer) error { return inf.SetTransform(fn) })
}

func (m *multiNamespace) IsStopped() bool {
	if m.dyn != nil {
		return m.dyn.stopped()
	}
	for _, inf := range m.each() {
		if !inf.IsStopped() {
			return false
		}
	}
	return true
}

func (m *multiNamespace) AddIndexers(indexers cache.Indexers) error {
	if m.dyn != nil {
		return m.dyn.addIndexers(indexers)
	}
	return m.forEach(func(inf cache.SharedIndexInformer) error { return inf.AddIndexers(indexers) })
}

func (m *multiNamespace) forEach(fn func(cache.SharedIndexInformer) error) error {
	v := m.view.Load()
	var errs []error
	for _, ns := range v.namespaces {
		if err := fn(v.byNS[ns]); err != nil {
			errs = append(errs, fmt.Errorf("namespace %s: %w", ns, err))
		}
	}
	return errors.Join(errs...)
}

func common[E any](items []E, fn func(E) string) string {
	out := ""
	for i, it := range items {
		v := fn(it)
		if i > 0 && v != out {
			return ""
		}
		out = v
	}
	return out
}

// multiRegistration is a handler's registrations on every namespace.
type multiRegistration struct {
	owner  *multiNamespace
	regs   map[string]cache.ResourceEventHandlerRegistration
	synced *allDone
}

func (r *multiRegistration) HasSynced() bool {
	for _, reg := range r.regs {
		if !reg.HasSynced() {
			return false
		}
	}
	return true
}

func (r *multiRegistration) HasSyncedChecker() cache.DoneChecker { return r.synced }

// allDone is done when all its children are. Its channel is closed by a
// goroutine, started on the first Done and owned by the factory: it ends when
// the children are done or the factory shuts down.
type allDone struct {
	f        *Factory
	name     string
	children []cache.DoneChecker
	once     sync.Once
	ch       chan struct{}
}

func (a *allDone) Name() string { return a.name }

func (a *allDone) Done() <-chan struct{} {
	a.once.Do(func() {
		a.ch = make(chan struct{})
		a.f.goUntilShutdown(func(stop <-chan struct{}) {
			for _, c := range a.children {
				select {
				case <-c.Done():
				case <-stop:
					return
				}
			}
			close(a.ch)
		})
	})
	return a.ch
}
