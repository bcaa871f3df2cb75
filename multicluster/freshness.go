package multicluster

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ctrlkit/ctrlkit/controller"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/internal/lagwatch"
)

// A cluster's keys wait for its caches to sync since it was engaged (the
// gate, cluster.go). For a controller built with
// controller.Options.Freshness.Gate they also wait until every informer the
// controller reads there has reached a consistent read of that cluster's API
// server taken once the caches synced: a cluster's first lists may come from
// a watch cache that lags (resourceVersion "0"), and a cluster engaged again
// after an outage may list from one that has not caught up, as a leader's
// caches may lag when it wins its Lease. The check is the controller's own
// (informer.Version).
//
// With controller.Options.Freshness.MaxLag, each cluster has a breaker per
// such controller once its gate passed: while an informer the controller reads
// in the cluster lags beyond MaxLag (a partitioned watch, a watch cache fallen
// behind), the controller's keys of that cluster are held, and enqueued again
// once it caught up; the other clusters' keys go on. The watch is the
// controller's own breaker's (internal/lagwatch).

// freshness is what a controller asked of its clusters' caches.
type freshness struct {
	gate   bool
	maxLag time.Duration
	a      *admission
}

// setFresh records c's Freshness options for every cluster.
func (f *Fleet) setFresh(c *controller.Controller[Key], fr freshness) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fresh == nil {
		f.fresh = map[*controller.Controller[Key]]freshness{}
	}
	f.fresh[c] = fr
}

// freshFor adds inf, which c reads in cl, to cl's freshness gate and to c's
// breaker there, when c asked for them. Informers built after the gate passed
// (a Watch added to engaged clusters) are not waited for, nor watched.
func freshFor[T informer.Object](f *Fleet, c *controller.Controller[Key], cl *Cluster, inf informer.Informer[T]) {
	f.mu.Lock()
	fr, ok := f.fresh[c]
	f.mu.Unlock()
	if !ok {
		return
	}
	take := func(ctx context.Context) (*informer.Version, error) { return informer.VersionOf(ctx, inf) }
	cl.heldMu.Lock()
	defer cl.heldMu.Unlock()
	if cl.held == nil { // gated already
		return
	}
	if fr.gate {
		cl.versions = append(cl.versions, lagwatch.Source{Name: inf.Name(), Take: take})
	}
	if fr.maxLag > 0 {
		b := cl.breakers[fr.a]
		if b == nil {
			b = &clusterBreaker{cl: cl, a: fr.a, maxLag: fr.maxLag, held: map[Key]struct{}{}, lags: map[string]string{}}
			if cl.breakers == nil {
				cl.breakers = map[*admission]*clusterBreaker{}
			}
			cl.breakers[fr.a] = b
		}
		b.srcs = append(b.srcs, lagwatch.Source{Name: inf.Name(), Take: take})
	}
}

// waitFresh returns once every informer of cl's freshness gate has reached a
// consistent read taken now, or with ctx's error. A read the API server does
// not answer is tried again, a second to 30 s apart; Err names the informer
// that lags meanwhile.
func (c *Cluster) waitFresh(ctx context.Context) error {
	c.heldMu.Lock()
	srcs := c.versions
	c.heldMu.Unlock()
	if len(srcs) == 0 {
		return nil
	}
	defer c.lagging.Store(nil)
	return lagwatch.Gate(ctx, c.clock, c.logger, srcs, lagwatch.GateReport{
		Unreadable: func(name string, err error, wait time.Duration) {
			msg := "caches behind the API server: informer " + name + ": cannot read the API server's state: " + err.Error()
			c.lagging.Store(&msg)
			c.logger.Info("Could not read the cluster's state of an informer's resource; trying again", "informer", name, "err", err, "after", wait)
		},
		Waiting: func(name, lagging string) {
			msg := "caches behind the API server: informer " + name + ": " + lagging
			c.lagging.Store(&msg)
			c.logger.V(2).Info("Waiting for a cache to reach the cluster's API server before reconciling its keys", "informer", name, "lagging", lagging)
		},
	})
}

// clusterBreaker is Freshness.MaxLag of one controller in one cluster.
type clusterBreaker struct {
	cl     *Cluster
	a      *admission
	maxLag time.Duration
	srcs   []lagwatch.Source // built while wiring, under cl.heldMu

	mu   sync.Mutex
	open bool
	held map[Key]struct{}  // the keys held while open
	lags map[string]string // by informer, how far it lags; empty while closed
}

// watchLag runs the breakers of the cluster's controllers until ctx ends,
// from the goroutine of its gate.
func (c *Cluster) watchLag(ctx context.Context) {
	c.heldMu.Lock()
	bs := make([]*clusterBreaker, 0, len(c.breakers))
	for _, b := range c.breakers {
		bs = append(bs, b)
	}
	c.heldMu.Unlock()
	if len(bs) == 0 {
		return
	}
	interval := time.Second
	ws := make([]*lagwatch.Watch, len(bs))
	for i, b := range bs {
		ws[i] = lagwatch.New(b.maxLag, c.clock, c.logger.WithValues("controller", b.a.c.Name()),
			lagwatch.Report{Lags: b.lagsBehind, CaughtUp: b.caughtUp}, slices.Clone(b.srcs))
		interval = min(interval, ws[i].Interval())
	}
	tick := c.clock.NewTicker(interval)
	defer tick.Stop()
	for {
		for _, w := range ws {
			w.Tick(ctx)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C():
		}
	}
}

// lagsBehind records that informer lags by lag, holding the controller's
// keys of the cluster.
func (b *clusterBreaker) lagsBehind(name string, lag time.Duration, detail string) {
	lag = lag.Truncate(time.Second)
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, known := b.lags[name]; !known {
		b.cl.logger.Info("Holding the cluster's keys: a cache lags behind its API server beyond Freshness.MaxLag",
			"controller", b.a.c.Name(), "informer", name, "lag", lag, "maxLag", b.maxLag, "lagging", detail)
	}
	b.lags[name] = fmt.Sprintf("informer %s lags by %v (%s)", name, lag, detail)
	if !b.open {
		b.open = true
		b.cl.lagOpen.Add(1)
	}
}

// caughtUp records that informer reached the API server's state; once no
// other lags, the held keys are enqueued again.
func (b *clusterBreaker) caughtUp(name string) {
	b.mu.Lock()
	if _, ok := b.lags[name]; !ok {
		b.mu.Unlock()
		return
	}
	delete(b.lags, name)
	if len(b.lags) > 0 {
		b.mu.Unlock()
		return
	}
	b.open = false
	b.cl.lagOpen.Add(-1)
	held := b.held
	b.held = map[Key]struct{}{}
	b.mu.Unlock()
	b.cl.logger.Info("Resuming the cluster's keys: its caches caught up with its API server", "controller", b.a.c.Name(), "informer", name, "held", len(held))
	for k := range held {
		b.a.c.Enqueue(k)
	}
}

// holdStale keeps key for a's controller while a's breaker in the cluster is
// open, and reports whether it did.
func (c *Cluster) holdStale(a *admission, key Key) bool {
	if c.lagOpen.Load() == 0 {
		return false
	}
	c.heldMu.Lock()
	b := c.breakers[a]
	c.heldMu.Unlock()
	if b == nil {
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.open {
		return false
	}
	b.held[key] = struct{}{}
	return true
}

// staleness describes the open breakers of the cluster, "" when none.
func (c *Cluster) staleness() string {
	if c.lagOpen.Load() == 0 {
		return ""
	}
	c.heldMu.Lock()
	bs := make([]*clusterBreaker, 0, len(c.breakers))
	for _, b := range c.breakers {
		bs = append(bs, b)
	}
	c.heldMu.Unlock()
	var out []string
	for _, b := range bs {
		b.mu.Lock()
		for _, l := range b.lags {
			out = append(out, l)
		}
		b.mu.Unlock()
	}
	slices.Sort(out)
	out = slices.Compact(out)
	return strings.Join(out, "; ")
}
