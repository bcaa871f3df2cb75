package informer

import (
	"context"
	"slices"
	"time"
)

// defaultReleaseGrace is how long an informer nobody holds any more keeps
// running before it stops (Options.ReleaseGrace): a controller restarted within
// it (a Lease won back, a CRD re-created) finds its cache warm instead of
// listing again.
const defaultReleaseGrace = 5 * time.Second

// HeldUntil returns a view of f whose informers are held until ctx ends.
// The view is a *Factory sharing everything with f (the informers, their
// caches and watches, Start, Shutdown); only the lifetime of what it hands
// out differs:
//
//   - An informer first handed out by a view (For, ForResource, ForMetadata
//     on it) runs in informer factories of its own, so that it can
//     stop alone. When the contexts of every view holding it have ended, and
//     f itself never handed it out, it keeps running for the release grace
//     (Options.ReleaseGrace), then stops: its watch ends, its goroutines return
//     and its cache is freed. Asking for it again, from any view or f, before
//     that keeps it; after, builds a new one (a fresh list).
//   - An informer f itself hands out lives as long as f, whoever else holds
//     it: f's own holders never end.
//
// This is how a controller that runs for a while inside a longer-lived
// process (one that waits for its CRD, a controller stopped and started
// again) releases the caches only it used: build it on a view of the term's
// context. Handlers a controller added are its own to remove (a Controller
// removes them when Run returns). A view of a view holds until either
// context ends.
func (f *Factory) HeldUntil(ctx context.Context) *Factory {
	if f.hold != nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		stop := context.AfterFunc(f.hold.ctx, cancel)
		// Release the parent's registration once ours ended.
		context.AfterFunc(ctx, func() { stop() })
	}
	return &Factory{factory: f.factory, hold: &holder{ctx: ctx}}
}

// holder is one view's hold on the informers it handed out.
type holder struct {
	ctx context.Context
	// registered is set once the release on ctx's end is registered (at
	// the view's first hold), unregister undoes that registration (Shutdown
	// calls it, so that a long-lived ctx does not keep the factory); both
	// guarded by the factory's mu.
	registered bool
	unregister func() bool
}

// life is the lifetime of an informer first handed out through a view.
type life struct {
	name string
	// holders are the views holding the informer; permanent is set once
	// the factory itself handed it out.
	holders   map[*holder]struct{}
	permanent bool
	// own are the informer's factories, which only it uses.
	own []*ownedFactory
	// cancelExpiry, set while the informer waits out its grace, cancels
	// that wait.
	cancelExpiry chan struct{}
}

// ctxStarter is a factory that starts with a context (its own of built-in types and
// client-go's metadata one; the dynamic one has none). Started with a stop channel, client-go wraps it in a context
// whose every derived context costs a goroutine that watches the channel.
type ctxStarter interface {
	StartWithContext(ctx context.Context)
}

// start starts s until ctx ends.
func start(s startable, ctx context.Context) {
	if c, ok := s.(ctxStarter); ok {
		c.StartWithContext(ctx)
		return
	}
	s.Start(ctx.Done())
}

// ownedFactory is an informer factory of one held informer, run
// with a context of its own (not the factory's run context) so that the
// informer can stop alone. Shutdown cancels that context, then waits.
type ownedFactory struct {
	startable
	ctx    context.Context
	cancel context.CancelFunc
}

func newOwnedFactory(s startable) *ownedFactory {
	ctx, cancel := context.WithCancel(context.Background())
	return &ownedFactory{startable: s, ctx: ctx, cancel: cancel}
}

func (o *ownedFactory) Start(<-chan struct{}) { start(o.startable, o.ctx) }

func (o *ownedFactory) Shutdown() {
	o.cancel()
	o.startable.Shutdown()
}

// newLifeLocked records the lifetime of informer key, just built through
// the view f from the informer factories f.scoped[from:], and f's hold on
// it. f.mu is held.
func (f *Factory) newLifeLocked(key registryKey, name string, from int) {
	l := &life{name: name, holders: map[*holder]struct{}{}}
	for i := from; i < len(f.scoped); i++ {
		o := newOwnedFactory(f.scoped[i])
		f.scoped[i] = o
		l.own = append(l.own, o)
	}
	f.lives[key] = l
	f.holdLocked(key)
}

// holdLocked records that f hands out informer key again: a view adds its
// hold, the factory itself makes the informer permanent. Either way a
// pending stop is cancelled. f.mu is held.
func (f *Factory) holdLocked(key registryKey) {
	l := f.lives[key]
	if l == nil {
		return // the factory's own informer: it lives as long as the factory
	}
	if l.cancelExpiry != nil {
		close(l.cancelExpiry)
		l.cancelExpiry = nil
	}
	if f.hold == nil {
		l.permanent = true
		return
	}
	h := f.hold
	l.holders[h] = struct{}{}
	if !h.registered {
		h.registered = true
		h.unregister = context.AfterFunc(h.ctx, func() { f.release(h) })
	}
}

// release ends h's hold on every informer it holds. An informer nobody
// holds any more stops after the grace.
func (f *Factory) release(h *holder) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.shutdown {
		return
	}
	for key, l := range f.lives {
		if _, ok := l.holders[h]; !ok {
			continue
		}
		delete(l.holders, h)
		if len(l.holders) == 0 && !l.permanent && l.cancelExpiry == nil {
			f.expireLocked(key, l)
		}
	}
}

// expireLocked stops informer key after the grace, unless it is held again
// before. The wait and the stop run in a goroutine the factory owns:
// Shutdown waits for it. f.mu is held.
func (f *Factory) expireLocked(key registryKey, l *life) {
	cancel := make(chan struct{})
	l.cancelExpiry = cancel
	grace := f.cfg.releaseGrace
	f.waiters.Go(func() {
		if grace > 0 {
			t := f.clock().NewTimer(grace)
			defer t.Stop()
			select {
			case <-t.C():
			case <-cancel:
				return
			case <-f.stop:
				return
			}
		}
		f.stopInformer(key, l, cancel)
	})
}

// stopInformer removes informer key from the factory and stops it, unless
// it was held again since cancel was made.
func (f *Factory) stopInformer(key registryKey, l *life, cancel chan struct{}) {
	f.mu.Lock()
	if f.shutdown || f.lives[key] != l || l.cancelExpiry != cancel {
		f.mu.Unlock()
		return // Shutdown stops it; or held again
	}
	delete(f.lives, key)
	delete(f.informers, key)
	f.scoped = slices.DeleteFunc(f.scoped, func(s startable) bool {
		o, ok := s.(*ownedFactory)
		return ok && slices.Contains(l.own, o)
	})
	f.mu.Unlock()
	for _, o := range l.own {
		o.Shutdown()
	}
	if f.detector != nil {
		f.detector.unwatch(key)
	}
	f.unmeter(key)
	f.logger.V(2).Info("Stopped an informer nobody holds", "informer", l.name)
}

// unregisterHoldersLocked drops the releases registered on the views'
// contexts: the factory is shutting down. f.mu is held.
func (f *Factory) unregisterHoldersLocked() {
	for _, l := range f.lives {
		for h := range l.holders {
			if h.unregister != nil {
				h.unregister()
			}
		}
	}
}
