package multicluster

import (
	"context"
	"fmt"
	"sync"

	"k8s.io/klog/v2"

	"github.com/ctrlkit/ctrlkit/controller"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/internal/object"
	"github.com/ctrlkit/ctrlkit/predicate"
)

// wiring is one Watch or Owns: what it builds in each engaged cluster.
type wiring struct {
	name  string // for errors: controller and informer
	build func(cl *Cluster) error
}

// attach builds w in the cluster, recording a failure as the cluster's Err:
// one cluster that lacks a resource must not stop the others.
func (c *Cluster) attach(w wiring) {
	if err := w.build(c); err != nil {
		err = fmt.Errorf("%s: %w", w.name, err)
		c.attachErr.Store(&err)
		c.logger.Error(err, "Cannot watch in this cluster")
	}
}

// add records w and builds it in every engaged cluster.
func (f *Fleet) add(w wiring) {
	f.mu.Lock()
	f.wirings = append(f.wirings, w)
	clusters := f.clusters
	live := make([]*Cluster, 0, len(clusters))
	for _, cl := range clusters {
		live = append(live, cl)
	}
	f.mu.Unlock()
	for _, cl := range live {
		cl.attach(w)
	}
}

// For returns the informer of T in a cluster, for Watch and Owns: the
// cluster's Factory's informer.For[T] with opts.
func For[T informer.Object](opts ...informer.ScopeOption[T]) func(*Cluster) (informer.Informer[T], error) {
	return func(cl *Cluster) (informer.Informer[T], error) { return informer.For[T](cl.Factory, opts...) }
}

// NewController is controller.New for a controller over f's clusters: the
// clusters take turns in its queue (Options.Flows defaults to FlowByCluster)
// and a key whose cluster is not engaged any more is dropped before its
// Reconcile (an Admission step: the controller's one, so replicas split
// clusters with Options.Sharding, not a sharding dispatcher). Each
// Reconcile's logger carries the cluster's name. Options.Freshness applies
// per cluster: the gate when a cluster is engaged, MaxLag's breaker to each
// cluster's informers, so one lagging cluster holds only its own keys. With
// Options.Fences.Auto, a write is fenced on the informer of its type in the
// key's cluster (fences.go). Wire
// it with Watch and Owns, and run it as any controller
// (manager.Manager.Add) beside f.
func NewController(f *Fleet, name string, r controller.Reconciler[Key], opts controller.Options[Key]) (*controller.Controller[Key], error) {
	if f == nil || r == nil {
		return nil, fmt.Errorf("multicluster: controller %q: %w: nil Fleet or Reconciler", name, ErrInvalidOptions)
	}
	if opts.Flows == nil {
		opts.Flows = FlowByCluster
	}
	cr := &clusterReconciler{r: r, auto: opts.Fences != nil && opts.Fences.Auto}
	c, err := controller.New(name, controller.Reconciler[Key](cr), opts)
	if err != nil {
		return nil, err
	}
	a := &admission{f: f, c: c, in: map[Key]*Cluster{}}
	cr.a = a
	if err := c.SetAdmission(a); err != nil {
		return nil, err
	}
	if opts.Freshness.Gate || opts.Freshness.MaxLag > 0 {
		f.setFresh(c, freshness{gate: opts.Freshness.Gate, maxLag: opts.Freshness.MaxLag, a: a})
	}
	return c, nil
}

// clusterReconciler adds the key's cluster to the Reconcile's logger and,
// with Fences.Auto, fences its writes on the cluster's informers (fences.go).
type clusterReconciler struct {
	r    controller.Reconciler[Key]
	a    *admission // set once the controller is built
	auto bool
}

func (c *clusterReconciler) Reconcile(ctx context.Context, key Key) (controller.Result, error) {
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithValues("cluster", key.Cluster))
	if c.auto {
		ctx = c.a.fenceIn(ctx, key)
	}
	return c.r.Reconcile(ctx, key)
}

// admission drops the keys of clusters that are not engaged, holds those
// of clusters whose caches have not synced since they were engaged (and
// enqueues them again once they have: a Reconcile never reads a cache
// emptier than the cluster was when engaged, as on a leader that just won
// its Lease) and, with Freshness.MaxLag, those of clusters whose caches lag
// beyond the bound (freshness.go), and counts
// the reconciles of each cluster in flight, so that a cluster disengaged
// leaves (and, with Sharding, moves) only once they returned.
type admission struct {
	f *Fleet
	c *controller.Controller[Key] // set once built
	// in holds the cluster each admitted key entered, for its Release: the
	// cluster may be engaged again (another *Cluster) by then.
	mu sync.Mutex
	in map[Key]*Cluster
}

func (a *admission) Admit(key Key) bool {
	cl, ok := (*a.f.engaged.Load())[key.Cluster]
	if !ok || cl.hold(a, key) || cl.holdStale(a, key) || !cl.enter() {
		return false
	}
	a.mu.Lock()
	a.in[key] = cl
	a.mu.Unlock()
	return true
}

func (a *admission) Release(key Key) {
	a.mu.Lock()
	cl := a.in[key]
	delete(a.in, key)
	a.mu.Unlock()
	if cl != nil {
		cl.exit()
	}
}

// Watch is controller.Watch in every cluster f engages, now and later:
// inf builds the cluster's informer (For[T], or a closure over
// informer.ForResource for a custom resource), and the keys mapFn returns
// for its objects are enqueued with the cluster's name. The watch ends
// with the cluster (controller.WatchUntil). Options are controller.Watch's
// but WithResyncPeriod. A cluster where inf fails is named by Cluster.Err;
// the others are not held back. Wire before the Fleet runs: a cluster's
// keys wait for the informers built when it was engaged (see
// NewController), and a Watch added later is not among them in the clusters
// engaged already.
//
//	multicluster.Watch(fleet, c, multicluster.For[*corev1.ConfigMap](), controller.EnqueueObject)
func Watch[T informer.Object](f *Fleet, c *controller.Controller[Key], inf func(*Cluster) (informer.Informer[T], error), mapFn func(T) []controller.Key, opts ...controller.WatchOption[T]) error {
	if f == nil || c == nil || inf == nil || mapFn == nil {
		return fmt.Errorf("multicluster: Watch: %w: nil Fleet, controller, informer or mapping function", ErrInvalidOptions)
	}
	f.add(wiring{name: "controller " + c.Name(), build: func(cl *Cluster) error {
		i, err := inf(cl)
		if err != nil {
			return err
		}
		if object.IsNil(i) {
			return fmt.Errorf("%w: nil informer", ErrInvalidOptions)
		}
		freshFor(f, c, cl, i)
		fenceOn(cl, i)
		return controller.WatchUntil(cl.watches, c, i, inCluster(cl.Name, mapFn), opts...)
	}})
	return nil
}

// Owns is controller.Owns in every cluster f engages: events of a child
// (children's objects) enqueue the key of its controlling owner among
// owners' objects of the same cluster, whatever the scopes (a cluster-scoped
// owner of namespaced children enqueues its name alone); resync updates are
// dropped. An owner the cache does not show enqueues nothing once owners
// synced, so owners must be watched too (Watch with
// controller.EnqueueObject), as in controller-runtime's For + Owns.
func Owns[T, O informer.Object](f *Fleet, c *controller.Controller[Key], children func(*Cluster) (informer.Informer[T], error), owners func(*Cluster) (informer.Informer[O], error), opts ...controller.WatchOption[T]) error {
	if f == nil || c == nil || children == nil || owners == nil {
		return fmt.Errorf("multicluster: Owns: %w: nil Fleet, controller or informer", ErrInvalidOptions)
	}
	opts = append([]controller.WatchOption[T]{controller.WithPredicates(predicate.ResourceVersionChanged[T]())}, opts...)
	f.add(wiring{name: "controller " + c.Name(), build: func(cl *Cluster) error {
		ch, err := children(cl)
		if err != nil {
			return err
		}
		ow, err := owners(cl)
		if err != nil {
			return err
		}
		if object.IsNil(ch) || object.IsNil(ow) {
			return fmt.Errorf("%w: nil informer", ErrInvalidOptions)
		}
		freshFor(f, c, cl, ch)
		freshFor(f, c, cl, ow)
		fenceOn(cl, ch) // the owners' informer is fenced on by their Watch
		return controller.WatchUntil(cl.watches, c, ch, inCluster(cl.Name, controller.EnqueueControllerOf[T](ow)), opts...)
	}})
	return nil
}

// inCluster maps with fn and puts the cluster's name on each key.
func inCluster[T informer.Object](cluster string, fn func(T) []controller.Key) func(T) []Key {
	return func(obj T) []Key {
		keys := fn(obj)
		if len(keys) == 0 {
			return nil
		}
		out := make([]Key, len(keys))
		for i, k := range keys {
			out[i] = Key{Cluster: cluster, Key: k}
		}
		return out
	}
}
