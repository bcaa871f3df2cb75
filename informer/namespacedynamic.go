package informer

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// dynamicNamespaces makes a multiNamespace follow a NamespaceSet
// (InNamespaceSet). It owns the per-namespace informer factories and is the
// one startable the Factory starts and shuts down for them.
//
// Changes are applied by one goroutine (run), not in the set's Set/Add/
// Remove calls: removing a namespace waits for its informer's goroutines,
// which run handlers, and then calls handlers; done in the caller, a handler
// that changes the set (NamespacesMatching's does) would wait for itself.
// The set only wakes the goroutine, never waits for it.
type dynamicNamespaces struct {
	m   *multiNamespace
	f   *Factory
	set *NamespaceSet
	// shards: the set's members are shard selectors (InShardSet), not
	// namespaces, and every key may be in any of them.
	shards bool
	unit   string // "namespace" or "shard", for logs and errors
	build  func(ns string) (startable, cache.SharedIndexInformer, error)

	wake        chan struct{} // buffer 1: set changes, new handlers, Start
	quit        chan struct{} // closed by Shutdown
	quitOnce    sync.Once
	worker      sync.WaitGroup
	unsubscribe func()
	// applied is the set's generation whose namespaces all have their
	// informers and whose removed namespaces' objects were delivered.
	applied atomic.Uint64
	gate    *syncGate // the informer's HasSyncedChecker

	mu       sync.Mutex
	closed   bool            // Shutdown ran: nothing is added or started
	base     context.Context // the factory's run context once Start ran
	entries  map[string]*nsEntry
	indexers cache.Indexers           // every index added, given to new namespaces
	handlers map[*dynRegistration]int // registered handlers, in order of registration
	nextSeq  int
}

// nsEntry is one namespace's informer and the informer factory it lives in.
type nsEntry struct {
	factory startable
	inf     cache.SharedIndexInformer
	cancel  context.CancelFunc // stops it; nil until started
}

var _ startable = (*dynamicNamespaces)(nil)

// newDynamicNamespaces builds the informer of an InNamespaceSet scope with
// the informers of the set's current namespaces (not started), and starts
// its goroutine unless the factory is shut down. Called with f.mu held.
func newDynamicNamespaces(f *Factory, name string, set *NamespaceSet, shards bool, build func(ns string) (startable, cache.SharedIndexInformer, error)) *dynamicNamespaces {
	m := &multiNamespace{f: f, name: name}
	m.view.Store(&nsView{byNS: map[string]cache.SharedIndexInformer{}})
	d := &dynamicNamespaces{
		m: m, f: f, set: set, shards: shards, unit: "namespace", build: build,
		wake: make(chan struct{}, 1), quit: make(chan struct{}),
		entries: map[string]*nsEntry{}, indexers: cache.Indexers{}, handlers: map[*dynRegistration]int{},
		unsubscribe: func() {},
	}
	m.dyn = d
	gateName := "informer " + name + " in the namespaces of its NamespaceSet"
	if shards {
		d.unit, gateName = "shard", "informer "+name+" in the shards of its ShardSet"
	}
	d.gate = newSyncGate(gateName, d.informerSynced, d.poke)
	m.synced = d.gate
	// Applied here, so that the informer serves the set's namespaces from
	// the start; nothing is running and no handler is registered yet.
	d.apply()
	if f.shutdown {
		d.closed = true
		return d
	}
	d.unsubscribe = set.subscribe(d.wake)
	d.worker.Add(1)
	go d.run()
	return d
}

// poke wakes the goroutine without waiting.
func (d *dynamicNamespaces) poke() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// run applies the set's changes and tracks sync until Shutdown.
func (d *dynamicNamespaces) run() {
	defer d.worker.Done()
	for {
		d.apply()
		// Taken before the gates are refreshed: what syncs after this closes
		// the channel and brings the loop round again. Taken after, a
		// registration that synced between the two was in neither, and its
		// gate stayed open for good (a controller waiting on it never
		// started its workers).
		pending := d.pending() // nil (blocks) when nothing is left to sync
		d.refresh()
		select {
		case <-d.quit:
			return
		case <-d.wake:
		case <-pending:
		}
	}
}

// apply makes the informers match the set: namespaces added get theirs,
// removed ones are stopped and their objects handed out as out of scope.
func (d *dynamicNamespaces) apply() {
	want, gen := d.set.snapshot()
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return
	}
	type gone struct {
		ns       string
		e        *nsEntry
		handlers []*dynRegistration
	}
	var removed []gone
	for ns, e := range d.entries {
		if slices.Contains(want, ns) {
			continue
		}
		g := gone{ns: ns, e: e}
		for _, h := range d.sortedHandlersLocked() {
			if _, ok := h.regs[ns]; ok {
				g.handlers = append(g.handlers, h)
				delete(h.regs, ns)
			}
		}
		delete(d.entries, ns)
		removed = append(removed, g)
	}
	complete := true
	var added []*nsEntry
	for _, ns := range want {
		if _, ok := d.entries[ns]; ok {
			continue
		}
		e, err := d.addLocked(ns)
		if err == nil {
			added = append(added, e)
		} else {
			// Not expected (the type resolved when the informer was built);
			// HasSynced stays false until a later change succeeds.
			d.f.report(fmt.Errorf("informer %s: %s %s: %w", d.m.name, d.unit, ns, err))
			complete = false
		}
	}
	// Published before they start: a handler that reads the informer on
	// one of their first events must find the object there.
	d.publishLocked()
	if d.base != nil {
		for _, e := range added {
			d.startLocked(e)
		}
	}
	d.mu.Unlock()

	for _, g := range removed {
		d.remove(g.ns, g.e, g.handlers)
	}
	if complete {
		d.applied.Store(gen)
	}
}

// addLocked builds namespace ns's informer with the indexes and handlers
// added so far; apply starts it once it is published, if the factory runs.
func (d *dynamicNamespaces) addLocked(ns string) (*nsEntry, error) {
	factory, inf, err := d.build(ns)
	if err != nil {
		return nil, err
	}
	// client-go's informers come with the namespace index; add the others.
	if err := addMissingIndexers(inf, d.indexers); err != nil {
		return nil, fmt.Errorf("add indexes: %w", err)
	}
	// client-go logs a refused list or watch through the run context's logger, which a
	// factory's Start(stopCh) does not carry: route it to the factory's logger, naming the
	// namespace, so that an operator sees which namespace lacks its RBAC.
	logger := d.f.logger.WithValues("informer", d.m.name, d.unit, ns)
	if err := inf.SetWatchErrorHandlerWithContext(func(ctx context.Context, r *cache.Reflector, err error) {
		cache.DefaultWatchErrorHandler(klog.NewContext(ctx, logger), r, err)
	}); err != nil {
		return nil, fmt.Errorf("watch error handler: %w", err)
	}
	e := &nsEntry{factory: factory, inf: inf}
	for _, h := range d.sortedHandlersLocked() {
		r, err := h.add(inf)
		if err != nil {
			// The informer is new and not started: client-go does not refuse.
			d.f.report(fmt.Errorf("informer %s: %s %s: add handler: %w", d.m.name, d.unit, ns, err))
			continue
		}
		h.regs[ns] = r
	}
	d.entries[ns] = e
	// The messages name the unit ("Namespace entered…", "Shard entered…"):
	// operators grep for them.
	d.f.logger.V(2).Info(d.title()+" entered the informer's scope", "informer", d.m.name, d.unit, ns)
	return e, nil
}

func (d *dynamicNamespaces) startLocked(e *nsEntry) {
	ctx, cancel := context.WithCancel(d.base)
	e.cancel = cancel
	e.factory.Start(ctx.Done())
}

// remove stops a removed namespace's informer, waits for its goroutines (so
// that no event of it reaches a handler afterwards), then hands each object
// it held to handlers as out of scope.
func (d *dynamicNamespaces) remove(ns string, e *nsEntry, handlers []*dynRegistration) {
	if e.cancel != nil {
		e.cancel()
	}
	e.factory.Shutdown()
	objs := e.inf.GetStore().List()
	// V(2): namespaces come and go rarely, and an operator asks when they did.
	d.f.logger.V(2).Info(d.title()+" left the informer's scope", "informer", d.m.name, d.unit, ns, "objects", len(objs))
	for _, h := range handlers {
		for _, obj := range objs {
			key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
			if err != nil {
				continue // cached objects always have a key
			}
			if o, ok := h.handler.(outOfScopeHandler); ok {
				o.onOutOfScope(key, obj)
				continue
			}
			// A client-go handler (Informer().AddEventHandler) knows no
			// "out of scope": a tombstone says "gone, last state known".
			h.handler.OnDelete(cache.DeletedFinalStateUnknown{Key: key, Obj: obj})
		}
	}
}

// title is the unit with a capital: "Namespace" or "Shard".
func (d *dynamicNamespaces) title() string {
	if d.shards {
		return "Shard"
	}
	return "Namespace"
}

// outOfScopeHandler is implemented by this package's handler adapter, which
// turns the call into a delete with DeleteInfo.OutOfScope.
type outOfScopeHandler interface {
	onOutOfScope(key string, obj any)
}

// publishLocked replaces the view readers see.
func (d *dynamicNamespaces) publishLocked() {
	byNS := make(map[string]cache.SharedIndexInformer, len(d.entries))
	for ns, e := range d.entries {
		byNS[ns] = e.inf
	}
	v := newView(byNS)
	v.spans = d.shards
	d.m.view.Store(v)
}

func (d *dynamicNamespaces) sortedHandlersLocked() []*dynRegistration {
	out := slices.Collect(maps.Keys(d.handlers))
	slices.SortFunc(out, func(a, b *dynRegistration) int { return d.handlers[a] - d.handlers[b] })
	return out
}

// Start starts the namespaces' informers with the factory's run context
// (stop is its Done channel), and those added later as they come. Later
// calls do nothing: the factory calls Start each time it starts informers.
func (d *dynamicNamespaces) Start(stop <-chan struct{}) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed || d.base != nil {
		return
	}
	d.base = wait.ContextForChannel(stop)
	for _, e := range d.entries {
		d.startLocked(e)
	}
}

// Shutdown stops the goroutine applying changes, drops the subscription to
// the set (so the set holds no reference to the informer) and stops every
// namespace's informer, waiting for them all. Later set changes do nothing.
func (d *dynamicNamespaces) Shutdown() {
	d.quitOnce.Do(func() { close(d.quit) })
	d.worker.Wait()
	d.unsubscribe()
	d.mu.Lock()
	d.closed = true
	entries := slices.Collect(maps.Values(d.entries))
	d.mu.Unlock()
	for _, e := range entries {
		if e.cancel != nil {
			e.cancel()
		}
		e.factory.Shutdown()
	}
}

func (d *dynamicNamespaces) stopped() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.closed
}

func (d *dynamicNamespaces) unsupported(what string) error {
	return fmt.Errorf("informer %s: %s: not supported for an informer following a NamespaceSet or ShardSet (its %ss' informers come and go)", d.m.name, what, d.unit)
}

// addIndexers adds indexes to every namespace's informer now and to those
// added later. A name added before is an error, as in client-go.
func (d *dynamicNamespaces) addIndexers(indexers cache.Indexers) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	for name := range indexers {
		if _, ok := d.indexers[name]; ok {
			return fmt.Errorf("informer %s: indexer conflict: %s", d.m.name, name)
		}
	}
	maps.Copy(d.indexers, indexers)
	var errs []error
	for ns, e := range d.entries {
		if err := addMissingIndexers(e.inf, indexers); err != nil {
			errs = append(errs, fmt.Errorf("namespace %s: %w", ns, err))
		}
	}
	return errors.Join(errs...)
}

// addMissingIndexers adds to inf those of indexers it does not have yet
// (client-go refuses a name it has).
func addMissingIndexers(inf cache.SharedIndexInformer, indexers cache.Indexers) error {
	missing := cache.Indexers{}
	have := inf.GetIndexer().GetIndexers()
	for name, fn := range indexers {
		if _, ok := have[name]; !ok {
			missing[name] = fn
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return inf.AddIndexers(missing)
}

func (d *dynamicNamespaces) getIndexers() cache.Indexers {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := maps.Clone(d.indexers)
	// client-go's own namespace index, present on every namespace's informer.
	if _, ok := out[cache.NamespaceIndex]; !ok {
		for _, e := range d.entries {
			if fn, ok := e.inf.GetIndexer().GetIndexers()[cache.NamespaceIndex]; ok {
				out[cache.NamespaceIndex] = fn
			}
			break
		}
	}
	return out
}

// addHandler registers h on every namespace now and on those added later.
func (d *dynamicNamespaces) addHandler(h cache.ResourceEventHandler, fn func(cache.SharedIndexInformer) (cache.ResourceEventHandlerRegistration, error)) (cache.ResourceEventHandlerRegistration, error) {
	reg := &dynRegistration{d: d, handler: h, add: fn, regs: map[string]cache.ResourceEventHandlerRegistration{}}
	reg.gate = newSyncGate("handler of informer "+d.m.name, reg.HasSynced, d.poke)
	d.mu.Lock()
	for _, ns := range slices.Sorted(maps.Keys(d.entries)) {
		r, err := fn(d.entries[ns].inf)
		if err != nil {
			for ns, r := range reg.regs { // undo the namespaces done so far
				_ = d.entries[ns].inf.RemoveEventHandler(r)
			}
			d.mu.Unlock()
			return nil, fmt.Errorf("namespace %s: %w", ns, err)
		}
		reg.regs[ns] = r
	}
	d.handlers[reg] = d.nextSeq
	d.nextSeq++
	d.mu.Unlock()
	d.poke() // track the new registration's sync
	return reg, nil
}

func (d *dynamicNamespaces) removeHandler(handle cache.ResourceEventHandlerRegistration) error {
	reg, ok := handle.(*dynRegistration)
	if !ok || reg.d != d {
		return fmt.Errorf("registration %T was not returned by this informer", handle)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.handlers, reg)
	var errs []error
	for ns, r := range reg.regs {
		if err := d.entries[ns].inf.RemoveEventHandler(r); err != nil {
			errs = append(errs, fmt.Errorf("namespace %s: %w", ns, err))
		}
	}
	clear(reg.regs)
	return errors.Join(errs...)
}
