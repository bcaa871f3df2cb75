package controller

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/ctrlkit/ctrlkit/informer"
)

// watched is one informer a controller watches. Every Watch of it and the
// release of its write fences share one handler registration, added when Run
// starts: one registration per (controller, informer), fanning out.
type watched[K comparable] interface {
	name() string
	id() any       // informerID of the informer
	ownKeys() bool // a Watch other than an Owns watches it
	versioner() versioner
	register(q queue[K], provenance bool, ft *fenceTable[K]) (registration, error)
}

// watchedInformer is a watched informer of T with the handlers of its
// Watches, each built for a Run's queue.
type watchedInformer[T informer.Object, K comparable] struct {
	inf      informer.Informer[T]
	handlers []func(q queue[K], provenance bool) informer.Handler[T]
	periods  []time.Duration // each handler's WithResyncPeriod; 0: none
	// mapsOwn counts the Watches that may enqueue the objects' own keys:
	// all but Owns's, which maps an object to its owner only.
	mapsOwn int
}

func (w *watchedInformer[T, K]) name() string         { return w.inf.Name() }
func (w *watchedInformer[T, K]) id() any              { return informerID(w.inf) }
func (w *watchedInformer[T, K]) ownKeys() bool        { return w.mapsOwn > 0 }
func (w *watchedInformer[T, K]) versioner() versioner { return versionerOf(w.inf) }

// watchesOwnKeys reports whether a Watch of c other than an Owns watches the
// informer id names: its objects' events then enqueue their own keys.
// Callers hold c.mu.
func (c *Controller[K]) watchesOwnKeys(id any) bool {
	for _, w := range c.watches {
		if w.id() == id && w.ownKeys() {
			return true
		}
	}
	return false
}

func (w *watchedInformer[T, K]) register(q queue[K], provenance bool, ft *fenceTable[K]) (registration, error) {
	hs := make([]informer.Handler[T], 0, len(w.handlers)+1)
	if ft != nil {
		// First, so a key held for this object's write is released before a
		// mapping adds it again: both reasons end up in one queued key.
		if t := ft.feed(informerID(w.inf)); t != nil {
			hs = append(hs, fenceRelease[T](ft.observer(t)))
		}
	}
	var resyncs []resyncer
	for i, mk := range w.handlers {
		h := mk(q, provenance)
		hs = append(hs, h)
		if d := w.periods[i]; d > 0 {
			resyncs = append(resyncs, resyncer{period: d, pass: resyncPass(w.inf, h)})
		}
	}
	var h informer.Handler[T] = fanout[T](hs)
	if len(hs) == 1 {
		h = hs[0] // no fan-out on the event path of a single Watch
	}
	reg, err := w.inf.AddHandler(h)
	if err != nil {
		return registration{}, err
	}
	return registration{name: w.inf.Name(), reg: reg, remove: func() error { return w.inf.RemoveHandler(reg) }, resyncs: resyncs}, nil
}

// resyncer is one Watch's WithResyncPeriod: pass hands every cached object
// to the Watch's handler as a resync update.
type resyncer struct {
	period time.Duration
	pass   func() error
}

func resyncPass[T informer.Object](inf informer.Informer[T], h informer.Handler[T]) func() error {
	return func() error {
		objs, err := inf.Lister().List(labels.Everything())
		if err != nil {
			return fmt.Errorf("resync of %s: %w", inf.Name(), err)
		}
		for _, o := range objs {
			h.HandleUpdate(o, o)
		}
		return nil
	}
}

// resync runs r until ctx ends, a pass every period on clk.
func (r resyncer) run(ctx context.Context, clk clock.WithTicker, logger klog.Logger) {
	t := clk.NewTicker(r.period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
			if err := r.pass(); err != nil {
				logger.Error(err, "Periodic resync failed")
			}
		}
	}
}

// fanout hands each event to every handler, in order.
type fanout[T informer.Object] []informer.Handler[T]

func (f fanout[T]) HandleAdd(obj T, isInitialList bool) {
	for _, h := range f {
		h.HandleAdd(obj, isInitialList)
	}
}

func (f fanout[T]) HandleUpdate(oldObj, newObj T) {
	for _, h := range f {
		h.HandleUpdate(oldObj, newObj)
	}
}

func (f fanout[T]) HandleDelete(obj T, info informer.DeleteInfo) {
	for _, h := range f {
		h.HandleDelete(obj, info)
	}
}

// watchOf returns c's watchedInformer for inf, adding it on first use. Two
// typed views of one shared informer are one entry; views of another type
// get their own (they cannot share a typed handler). c.mu is held.
func watchOf[T informer.Object, K comparable](c *Controller[K], inf informer.Informer[T]) *watchedInformer[T, K] {
	id := informerID(inf)
	for _, w := range c.watches {
		if wi, ok := w.(*watchedInformer[T, K]); ok && informerID(wi.inf) == id {
			return wi
		}
	}
	wi := &watchedInformer[T, K]{inf: inf}
	c.watches = append(c.watches, wi)
	c.fenceOn = append(c.fenceOn, fenceDecl{mk: func() *fenceTarget { return newFenceTarget(inf) }, watched: true})
	return wi
}

// register adds one handler per watched informer, feeding q. It returns the
// registrations made so far even on error, so they can be removed.
func (c *Controller[K]) register(q queue[K], ft *fenceTable[K]) ([]registration, error) {
	c.mu.Lock()
	watches := c.watches
	c.mu.Unlock()
	var regs []registration
	for _, w := range watches {
		reg, err := w.register(q, c.provenance, ft)
		if err != nil {
			return regs, fmt.Errorf("controller %q: watching %s: %w", c.name, w.name(), err)
		}
		regs = append(regs, reg)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sources = c.sources[:0]
	for _, r := range regs {
		c.sources = append(c.sources, r)
	}
	c.sources = append(c.sources, c.waits...)
	c.registered = true
	return regs, nil
}

// unregister removes the handlers, so a stopped controller's informers (which
// outlive it in a shared factory) stop mapping events for nothing.
func (c *Controller[K]) unregister(logger klog.Logger, regs []registration) {
	for _, r := range regs {
		if err := r.remove(); err != nil {
			logger.V(2).Info("Removing event handler failed", "informer", r.name, "err", err)
		}
	}
}

func (c *Controller[K]) waitForSync(ctx context.Context) error {
	c.mu.Lock()
	srcs := append([]source(nil), c.sources...)
	c.mu.Unlock()
	if len(srcs) == 0 {
		return nil
	}
	waitCtx := ctx
	if c.syncWait > 0 {
		var cancel context.CancelFunc
		waitCtx, cancel = context.WithTimeout(ctx, c.syncWait)
		defer cancel()
	}
	infs := make([]interface{ HasSynced() bool }, len(srcs))
	for i, s := range srcs {
		infs[i] = s
	}
	if err := informer.WaitForCacheSync(waitCtx, infs...); err != nil {
		return fmt.Errorf("controller %q: %w", c.name, err)
	}
	return nil
}

// WaitFor makes Run wait until hasSynced reports true before starting the
// workers, as for a watched informer; use it for caches the controller reads
// but does not watch (a lister of another resource).
func (c *Controller[K]) WaitFor(name string, hasSynced func() bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.waits = append(c.waits, syncFunc{name: name, fn: hasSynced})
}

// source is something Run waits for: a handler registration or a WaitFor
// function, named for the sync error.
type source interface {
	Name() string
	HasSynced() bool
}

// registration waits on a handler registration: synced once the handler has
// seen the informer's initial list, which is later than the informer itself.
type registration struct {
	name    string
	reg     cache.ResourceEventHandlerRegistration
	remove  func() error
	resyncs []resyncer // the Watches' WithResyncPeriod, run once synced
}

func (r registration) Name() string    { return r.name }
func (r registration) HasSynced() bool { return r.reg.HasSynced() }

// HasSyncedChecker lets informer.WaitForCacheSync wait without polling.
func (r registration) HasSyncedChecker() cache.DoneChecker { return r.reg.HasSyncedChecker() }

type syncFunc struct {
	name string
	fn   func() bool
}

func (s syncFunc) Name() string    { return s.name }
func (s syncFunc) HasSynced() bool { return s.fn() }

// HasSynced reports whether Run has started and every watched source has
// delivered its initial list to this controller. A manager.Manager reports
// it in /readyz.
func (c *Controller[K]) HasSynced() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.registered {
		return false
	}
	for _, s := range c.sources {
		if !s.HasSynced() {
			return false
		}
	}
	return true
}
