package directinformer

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// Options configure an Informer. ListerWatcher and ObjectType are required.
type Options struct {
	// ListerWatcher lists and watches the resource.
	ListerWatcher cache.ListerWatcher
	// ObjectType is an object of the type the informer holds.
	ObjectType runtime.Object
	// Indexers are the indexes the cache starts with.
	Indexers cache.Indexers
	// ResyncPeriod is the resync period of handlers added without one
	// (0: never).
	ResyncPeriod time.Duration
	// Name identifies the informer in logs and its synced checker.
	Name string
	// Identifier, when reserved (cache.InformerName.WithResource), makes
	// the informer report client-go's informer metrics under it.
	Identifier cache.InformerNameAndResource
	// Clock defaults to the real clock.
	Clock clock.Clock
}

// client-go's reflector backoff between failed list-and-watch rounds: from
// 800 ms doubling to 30 s, reset after two healthy minutes.
const (
	backoffInit    = 800 * time.Millisecond
	backoffMax     = 30 * time.Second
	backoffReset   = 2 * time.Minute
	minResync      = time.Second
	errStoppedText = "has stopped already"
)

// errStarted is returned by the setters that only work before Run.
var errStarted = errors.New("informer has already started")

// Informer is a cache.SharedIndexInformer whose handlers are called on the
// reflector's goroutine (see the package doc).
type Informer struct {
	lw            cache.ListerWatcher
	objType       runtime.Object
	name          string
	clock         clock.Clock
	defaultResync time.Duration
	indexer       cache.Indexer
	synced        chan struct{} // closed when the first list is in the indexer
	metrics       metrics

	// dispatch is held while a change is applied and handed to the
	// handlers, so the reflector's changes and the resync timer's updates
	// reach each handler in the order they were applied.
	dispatch sync.Mutex

	mu          sync.Mutex
	listeners   []*listener // replaced, never changed in place: dispatch reads it without mu
	resyncCheck time.Duration
	transform   cache.TransformFunc
	watchErr    cache.WatchErrorHandlerWithContext
	started     bool
	stopped     bool
	reflector   *cache.Reflector
}

var _ cache.SharedIndexInformer = (*Informer)(nil)

// New returns an Informer; Run starts it.
func New(o Options) *Informer {
	c := o.Clock
	if c == nil {
		c = clock.RealClock{}
	}
	return &Informer{
		lw:            o.ListerWatcher,
		objType:       o.ObjectType,
		name:          o.Name,
		clock:         c,
		defaultResync: o.ResyncPeriod,
		resyncCheck:   o.ResyncPeriod,
		indexer:       newIndexer(o),
		metrics:       newMetrics(o.Identifier),
		synced:        make(chan struct{}),
		watchErr:      cache.DefaultWatchErrorHandler,
	}
}

func newIndexer(o Options) cache.Indexer {
	if o.Indexers == nil {
		o.Indexers = cache.Indexers{} // AddIndexers writes into it
	}
	if !o.Identifier.Reserved() {
		return cache.NewIndexer(cache.DeletionHandlingMetaNamespaceKeyFunc, o.Indexers)
	}
	return cache.NewIndexer(cache.DeletionHandlingMetaNamespaceKeyFunc, o.Indexers, cache.WithStoreMetrics(o.Identifier, nil))
}

// Run runs the informer until stopCh is closed.
func (i *Informer) Run(stopCh <-chan struct{}) { i.RunWithContext(wait.ContextForChannel(stopCh)) }

// RunWithContext lists and watches until ctx is done, retrying failed rounds
// with client-go's reflector backoff. It runs once: a second call returns at
// once.
func (i *Informer) RunWithContext(ctx context.Context) {
	i.mu.Lock()
	if i.started {
		i.mu.Unlock()
		klog.FromContext(ctx).Info("Warning: the informer has started, run more than once is not allowed", "informer", i.name)
		return
	}
	r := cache.NewReflectorWithOptions(i.lw, i.objType, (*store)(i), cache.ReflectorOptions{
		Name:         i.name,
		ResyncPeriod: i.resyncCheck,
		Clock:        i.clock,
	})
	r.ShouldResync = i.shouldResync
	i.reflector, i.started = r, true
	onErr := i.watchErr
	i.mu.Unlock()
	defer func() {
		i.mu.Lock()
		i.stopped = true
		i.mu.Unlock()
	}()

	backoff := wait.Backoff{
		Duration: backoffInit,
		Cap:      backoffMax,
		Steps:    int(math.Ceil(float64(backoffMax) / float64(backoffInit))),
		Factor:   2,
		Jitter:   1,
	}
	_ = backoff.DelayWithReset(i.clock, backoffReset).Until(ctx, true, true, func(ctx context.Context) (bool, error) {
		if err := r.ListAndWatchWithContext(ctx); err != nil {
			onErr(ctx, r, err)
		}
		return false, nil
	})
}

// HasSynced reports whether the cache holds a full list.
func (i *Informer) HasSynced() bool { return doneChecker{done: i.synced}.isDone() }

// HasSyncedChecker is HasSynced as a channel.
func (i *Informer) HasSyncedChecker() cache.DoneChecker { return doneChecker{i.name, i.synced} }

// LastSyncResourceVersion is the resourceVersion the cache was last synced
// at ("" before Run).
func (i *Informer) LastSyncResourceVersion() string {
	i.mu.Lock()
	r := i.reflector
	i.mu.Unlock()
	if r == nil {
		return ""
	}
	return r.LastSyncResourceVersion()
}

// IsStopped reports whether Run has returned.
func (i *Informer) IsStopped() bool {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.stopped
}

// GetStore returns the cache.
func (i *Informer) GetStore() cache.Store { return i.indexer }

// GetIndexer returns the cache.
func (i *Informer) GetIndexer() cache.Indexer { return i.indexer }

// GetController returns the informer as a cache.Controller.
func (i *Informer) GetController() cache.Controller { return controller{i} }

// AddIndexers adds indexes, before or after Run (existing objects are indexed
// at once).
func (i *Informer) AddIndexers(indexers cache.Indexers) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.stopped {
		return fmt.Errorf("indexer was not added because informer %s %s", i.name, errStoppedText)
	}
	return i.indexer.AddIndexers(indexers)
}

// SetTransform sets the function applied to each object before it is cached.
func (i *Informer) SetTransform(fn cache.TransformFunc) error {
	return i.beforeStart("set transform", func() { i.transform = fn })
}

// SetWatchErrorHandler sets the function called when a list or watch fails.
func (i *Informer) SetWatchErrorHandler(fn cache.WatchErrorHandler) error {
	return i.SetWatchErrorHandlerWithContext(func(_ context.Context, r *cache.Reflector, err error) { fn(r, err) })
}

// SetWatchErrorHandlerWithContext sets the function called when a list or
// watch fails.
func (i *Informer) SetWatchErrorHandlerWithContext(fn cache.WatchErrorHandlerWithContext) error {
	return i.beforeStart("set watch error handler", func() { i.watchErr = fn })
}

// beforeStart runs set unless Run has started; what names it in the error.
func (i *Informer) beforeStart(what string, set func()) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.started {
		return fmt.Errorf("%s of %s: %w", what, i.name, errStarted)
	}
	set()
	return nil
}

// AddEventHandler adds h with the informer's resync period.
func (i *Informer) AddEventHandler(h cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error) {
	return i.AddEventHandlerWithOptions(h, cache.HandlerOptions{})
}

// AddEventHandlerWithResyncPeriod adds h with its own resync period.
func (i *Informer) AddEventHandlerWithResyncPeriod(h cache.ResourceEventHandler, resync time.Duration) (cache.ResourceEventHandlerRegistration, error) {
	return i.AddEventHandlerWithOptions(h, cache.HandlerOptions{ResyncPeriod: &resync})
}

// AddEventHandlerWithOptions adds h. Added after Run, h first receives an add
// for every cached object (isInInitialList true), on the caller's goroutine,
// before AddEventHandlerWithOptions returns; changes applied meanwhile follow
// in order.
func (i *Informer) AddEventHandlerWithOptions(h cache.ResourceEventHandler, o cache.HandlerOptions) (cache.ResourceEventHandlerRegistration, error) {
	i.mu.Lock()
	if i.stopped {
		i.mu.Unlock()
		return nil, fmt.Errorf("handler %v was not added to informer %s because it %s", h, i.name, errStoppedText)
	}
	resync := i.defaultResync
	if o.ResyncPeriod != nil {
		resync = *o.ResyncPeriod
	}
	if resync > 0 {
		resync = max(resync, minResync)
		if resync < i.resyncCheck || i.resyncCheck == 0 {
			if i.started {
				// The reflector's timer is set; a handler cannot resync
				// more often than it fires (client-go does the same).
				resync = i.resyncCheck
			} else {
				i.resyncCheck = resync
			}
		}
	}
	l := &listener{handler: h, resync: resync, nextResync: i.clock.Now().Add(resync), synced: make(chan struct{}), name: i.name}
	// Syncing until the first resync check says otherwise, as in client-go:
	// without resyncs, every listener gets updates that changed nothing.
	l.syncing.Store(true)
	if !i.started {
		i.listeners = append(slices.Clip(i.listeners), l)
		i.mu.Unlock()
		return l, nil
	}
	// Join: the snapshot and the listener's place in the list are taken
	// together, so every change is either in the snapshot or delivered to
	// the listener after it (held in pending while the replay runs).
	l.busy = true
	objs := i.indexer.List()
	synced := i.HasSynced() // closed under mu, as the list was applied
	i.listeners = append(slices.Clip(i.listeners), l)
	i.mu.Unlock()
	for _, obj := range objs {
		h.OnAdd(obj, true)
	}
	if synced {
		l.markSynced()
	}
	l.drain()
	return l, nil
}

// RemoveEventHandler removes a handler added to this informer; it receives
// nothing after RemoveEventHandler returns unless a call is under way.
func (i *Informer) RemoveEventHandler(reg cache.ResourceEventHandlerRegistration) error {
	l, ok := reg.(*listener)
	if !ok {
		return fmt.Errorf("remove handler from informer %s: registration %T was not made by it", i.name, reg)
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	at := slices.Index(i.listeners, l)
	if at < 0 {
		return nil // removed before; client-go's informer accepts this too
	}
	i.listeners = slices.Delete(slices.Clone(i.listeners), at, at+1)
	l.remove()
	return nil
}

// shouldResync is the reflector's question before a resync, asked only when
// some handler resyncs. It marks the listeners whose period elapsed as
// syncing: until the next question they receive the updates that changed no
// resourceVersion (the resync's, and a relist's unchanged objects), and the
// others do not. client-go's informer keeps the same state.
func (i *Informer) shouldResync() bool {
	i.mu.Lock()
	defer i.mu.Unlock()
	now := i.clock.Now()
	someDue := false
	for _, l := range i.listeners {
		due := l.resync > 0 && !now.Before(l.nextResync)
		l.syncing.Store(due)
		if due {
			l.nextResync = now.Add(l.resync)
			someDue = true
		}
	}
	return someDue
}

// controller is the informer as client-go's cache.Controller.
type controller struct{ i *Informer }

func (c controller) Run(stopCh <-chan struct{})          { c.i.Run(stopCh) }
func (c controller) RunWithContext(ctx context.Context)  { c.i.RunWithContext(ctx) }
func (c controller) HasSynced() bool                     { return c.i.HasSynced() }
func (c controller) HasSyncedChecker() cache.DoneChecker { return c.i.HasSyncedChecker() }
func (c controller) LastSyncResourceVersion() string     { return c.i.LastSyncResourceVersion() }

// doneChecker is a named channel closed when something is done.
type doneChecker struct {
	name string
	done chan struct{}
}

func (d doneChecker) Name() string          { return d.name }
func (d doneChecker) Done() <-chan struct{} { return d.done }

func (d doneChecker) isDone() bool {
	select {
	case <-d.done:
		return true
	default:
		return false
	}
}
