package controller

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/klog/v2"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/internal/lagwatch"
	"github.com/ctrlkit/ctrlkit/provenance"
)

// Freshness is when a controller acts only on a fresh enough view of the cluster
// (Options.Freshness; docs/stale-caches.md). Both parts ask one question of each informer the
// controller watches (Watch, Owns) or fences on (FenceOn): has its cache reached a consistent
// read of the API server (informer.Version)? The zero value turns both off, as in
// controller-runtime.
type Freshness struct {
	// Gate makes each Run start its workers only once every such informer has reached a
	// consistent read taken after its caches synced: on a leader, after the Lease was won; on
	// a process just started, after its first lists, which an API server may serve from a
	// watch cache that lags (resourceVersion "0"). A new leader then does not act on what its
	// caches held while it was a standby, nor a restarted process on the past. Run waits as
	// long as it takes and logs which informer lags; the caches of quiet resources, which hear
	// of later resourceVersions only from bookmarks, are compared with a consistent list
	// after 100 ms instead.
	Gate bool
	// MaxLag holds the controller's keys while an informer it reads has not reached a
	// consistent read taken more than MaxLag ago: a partitioned watch, an API server whose
	// watch cache fell behind. The controller takes a read of each informer every MaxLag/4;
	// before it holds anything, a consistent list confirms that the cache really lags (a quiet
	// resource's may be current). Held keys are queued again, with a "stale" trigger in their
	// provenance, as soon as the caches caught up. Logs, Stats.Lagging, the metric
	// ctrlkit_controller_cache_lag_seconds and a Manager's /readyz?verbose name the informer
	// and by how much; readiness itself is kept, as a lost Lease keeps it. 0: no bound. A
	// positive value under a second is an OptionsError.
	MaxLag time.Duration
}

func (f Freshness) validate() error {
	if f.MaxLag < 0 || (f.MaxLag > 0 && f.MaxLag < time.Second) {
		return &OptionsError{Field: "Freshness.MaxLag", Reason: fmt.Sprintf("%v: want 0 (no bound) or at least a second", f.MaxLag)}
	}
	return nil
}

// versioner takes a consistent read of one informer the controller reads.
type versioner struct {
	id   any // informerID
	name string
	take func(ctx context.Context) (*informer.Version, error)
}

func versionerOf[T informer.Object](inf informer.Informer[T]) versioner {
	return versioner{id: informerID(inf), name: inf.Name(), take: func(ctx context.Context) (*informer.Version, error) {
		return informer.VersionOf(ctx, inf)
	}}
}

// readInformers returns the informers Freshness judges: the watched ones and FenceOn's, once
// each.
func (c *Controller[K]) readInformers() []versioner {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []versioner
	seen := map[any]bool{}
	add := func(v versioner) {
		if !seen[v.id] {
			seen[v.id] = true
			out = append(out, v)
		}
	}
	for _, w := range c.watches {
		add(w.versioner())
	}
	for _, v := range c.freshOn {
		add(v)
	}
	return out
}

// gate is Freshness.Gate: it returns once every informer c reads has reached a consistent read
// taken now, or with ctx's error.
func (c *Controller[K]) gate(ctx context.Context, logger klog.Logger) error {
	defer c.lagging.Store(nil)
	return lagwatch.Gate(ctx, c.clock, logger, sources(c.readInformers()), lagwatch.GateReport{
		Unreadable: func(name string, err error, wait time.Duration) {
			logger.Info("Could not read the API server's state of an informer's resource; trying again", "informer", name, "err", err, "after", wait)
		},
		Waiting: func(name, lagging string) {
			msg := "the workers wait for informer " + name + " to reach the API server's state: " + lagging
			logger.V(2).Info("Waiting for a cache to reach the API server's state before starting the workers", "informer", name, "lagging", lagging)
			c.lagging.Store(&msg)
		},
	})
}

// sources are vs as the lag watch takes them.
func sources(vs []versioner) []lagwatch.Source {
	out := make([]lagwatch.Source, len(vs))
	for i, v := range vs {
		out[i] = lagwatch.Source{Name: v.name, Take: v.take}
	}
	return out
}

// breaker is Freshness.MaxLag for one Run: it watches every informer c reads and holds the
// keys that come to the workers while one lags (staleStep).
type breaker[K comparable] struct {
	c      *Controller[K]
	q      queue[K]
	vs     []versioner
	maxLag time.Duration
	logger klog.Logger

	open atomic.Bool // some informer lags: keys are held
	mu   sync.Mutex
	held map[K]provenance.Reasons // the keys held, with why they were queued
	// carry holds the reasons of released keys until they come back (provenance only).
	carry carried[K]
	// lags is, by informer, how far it lags now; empty while closed.
	lags map[string]string
}

func newBreaker[K comparable](c *Controller[K], q queue[K], logger klog.Logger) *breaker[K] {
	return &breaker[K]{
		c: c, q: q, vs: c.readInformers(), maxLag: c.freshness.MaxLag, logger: logger,
		held: map[K]provenance.Reasons{}, lags: map[string]string{},
	}
}

// watch is the breaker's loop, until ctx ends.
func (b *breaker[K]) watch(ctx context.Context) {
	lagwatch.New(b.maxLag, b.c.clock, b.logger, lagwatch.Report{Lags: b.lagsBehind, CaughtUp: b.caughtUp}, sources(b.vs)).Run(ctx, b.c.clock)
}

// lagsBehind records that informer lags by lag, opening the breaker.
func (b *breaker[K]) lagsBehind(name string, lag time.Duration, detail string) {
	lag = lag.Truncate(time.Second)
	b.c.cm.cacheLag(name, lag)
	b.mu.Lock()
	_, known := b.lags[name]
	if !known {
		// Logged before anything shows the breaker open.
		b.logger.Info("Holding keys: a cache lags behind the API server beyond Freshness.MaxLag", "informer", name, "lag", lag, "maxLag", b.maxLag, "lagging", detail)
	}
	b.lags[name] = fmt.Sprintf("informer %s lags by %v (%s)", name, lag, detail)
	b.open.Store(true)
	b.mu.Unlock()
}

// caughtUp records that informer reached the API server's state, closing the breaker when no
// other lags, and queues the held keys again.
func (b *breaker[K]) caughtUp(name string) {
	b.mu.Lock()
	if _, ok := b.lags[name]; !ok {
		b.mu.Unlock()
		return
	}
	b.c.cm.cacheLag(name, 0)
	delete(b.lags, name)
	if len(b.lags) > 0 {
		b.mu.Unlock()
		b.logger.Info("A cache caught up with the API server; others still lag", "informer", name)
		return
	}
	b.open.Store(false)
	held := b.held
	b.held = map[K]provenance.Reasons{}
	for k, why := range held {
		b.carry.put(k, why)
	}
	b.mu.Unlock()
	b.logger.Info("Resuming: the caches caught up with the API server", "informer", name, "held", len(held))
	for k := range held {
		b.q.add(k, addSpec{trigger: provenance.Trigger{Kind: provenance.TriggerStale}})
	}
}

// hold keeps key while the breaker is open; false when it closed meanwhile.
func (b *breaker[K]) hold(key K, why provenance.Reasons) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.open.Load() {
		return false
	}
	r := b.held[key]
	r.Merge(why)
	b.held[key] = r
	return true
}

// heldKeys is Stats.Stale.
func (b *breaker[K]) heldKeys() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.held)
}

// describe is Stats.Lagging while the breaker is open.
func (b *breaker[K]) describe() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]string, 0, len(b.lags))
	for _, s := range b.lags {
		out = append(out, s)
	}
	slices.Sort(out)
	return strings.Join(out, "; ")
}

// staleStep holds keys while the breaker is open.
type staleStep[K comparable] struct {
	b     *breaker[K]
	carry bool // provenance: a released key's reasons join the next ones
}

func (s staleStep[K]) enter(w *work[K]) bool {
	if s.carry {
		w.why = s.b.carry.take(w.key, w.why)
	}
	if s.b.open.Load() && s.b.hold(w.key, w.why) {
		w.logger.V(4).Info("Holding the key until the caches catch up with the API server", "key", w.key)
		return false
	}
	return true
}

func (staleStep[K]) exit(*work[K]) {}
