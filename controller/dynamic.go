package controller

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/klog/v2"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/internal/object"
)

// WatchUntil is Watch for an informer that comes and goes while the
// controller runs (one per engaged cluster, a custom resource installed
// later): it may be called before or during Run, and it lasts until ctx
// ends. On a running controller its handler is registered at once, so the
// informer's cached objects arrive as adds; each later Run registers it
// again; when ctx ends it is removed, and events of inf stop reaching the
// queue (keys already queued stay: an Admission step drops those that no
// longer mean anything).
//
// Unlike Watch's, its informer is not one Run waits for, nor one whose
// writes hold keys by Options.Fences.Auto, nor one whose lag holds work
// (Options.Freshness): it may never sync (a cluster that is unreachable) and
// must not stall the rest. Fence and FenceGone may name it; when ctx ends,
// the fences on it are dropped (their keys queued again) and the controller
// keeps nothing of it. Options are Watch's, except WithResyncPeriod,
// which is an error matching ErrInvalidOptions here.
func WatchUntil[T informer.Object, K comparable](ctx context.Context, c *Controller[K], inf informer.Informer[T], mapFn func(T) []K, opts ...WatchOption[T]) error {
	if c == nil {
		return &OptionsError{Field: "WatchUntil", Reason: "nil controller"}
	}
	if object.IsNil(inf) || mapFn == nil {
		return &OptionsError{Controller: c.name, Field: "WatchUntil", Reason: "nil informer or mapping function"}
	}
	cfg, err := configure(c, inf, opts)
	if err != nil {
		return err
	}
	if cfg.resyncPeriod != 0 {
		return fmt.Errorf("controller %q: watching %s: %w: WithResyncPeriod is not supported by WatchUntil", c.name, inf.Name(), ErrInvalidOptions)
	}
	w := &watchedInformer[T, K]{inf: inf, periods: []time.Duration{0}, mapsOwn: 1,
		handlers: []func(q queue[K], provenance bool) informer.Handler[T]{handlerOf(cfg, inf, mapFn)}}
	return c.dynamic.add(ctx, w)
}

// dynamicWatches are a controller's WatchUntil watches: registered with the
// running Run's queue, if any, and with each later Run's.
type dynamicWatches[K comparable] struct {
	mu     sync.Mutex
	q      queue[K] // what the running Run's watches feed; nil between Runs
	prov   bool
	logger klog.Logger
	set    map[*dynamicWatch[K]]struct{}
	// forget drops what the write fences hold of an informer whose watch ended (a fence
	// recorded on it with Fence, or by Auto through a recorder such as multicluster's).
	forget func(id any)
}

// dynamicWatch is one WatchUntil: its informer and, while registered, its
// registration.
type dynamicWatch[K comparable] struct {
	w   watched[K]
	reg *registration
}

func (d *dynamicWatches[K]) add(ctx context.Context, w watched[K]) error {
	dw := &dynamicWatch[K]{w: w}
	d.mu.Lock()
	defer d.mu.Unlock()
	if ctx.Err() != nil {
		return nil // over before it began
	}
	if d.set == nil {
		d.set = map[*dynamicWatch[K]]struct{}{}
	}
	if d.q != nil {
		if err := d.register(dw); err != nil {
			return err
		}
	}
	d.set[dw] = struct{}{}
	context.AfterFunc(ctx, func() {
		d.mu.Lock()
		delete(d.set, dw)
		d.unregister(dw)
		forget := d.forget
		d.mu.Unlock()
		if forget != nil {
			forget(dw.w.id())
		}
	})
	return nil
}

// start registers every watch with q, the queue of a Run that begins.
func (d *dynamicWatches[K]) start(q queue[K], prov bool, logger klog.Logger) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.q, d.prov, d.logger = q, prov, logger
	for dw := range d.set {
		if err := d.register(dw); err != nil {
			// Only an informer that is shut down refuses a handler: the
			// context that ends the watch is about to end too.
			logger.V(2).Info("Watching failed", "informer", dw.w.name(), "err", err)
		}
	}
}

// stop removes every registration: the Run that made them returns.
func (d *dynamicWatches[K]) stop() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for dw := range d.set {
		d.unregister(dw)
	}
	d.q = nil
}

// register and unregister are called with d.mu held.
func (d *dynamicWatches[K]) register(dw *dynamicWatch[K]) error {
	reg, err := dw.w.register(d.q, d.prov, nil)
	if err != nil {
		return err
	}
	dw.reg = &reg
	return nil
}

func (d *dynamicWatches[K]) unregister(dw *dynamicWatch[K]) {
	if dw.reg == nil {
		return
	}
	if err := dw.reg.remove(); err != nil {
		d.logger.V(2).Info("Removing event handler failed", "informer", dw.reg.name, "err", err)
	}
	dw.reg = nil
}
