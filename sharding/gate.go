package sharding

import (
	"context"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// Source is what a Gate needs of an informer; every informer.Informer[T]
// is one.
type Source interface {
	Name() string
	GVR() schema.GroupVersionResource
	Informer() cache.SharedIndexInformer
}

// GateOptions configure NewGate.
type GateOptions struct {
	// Metadata writes the drain acknowledgements. Required.
	Metadata metadata.Interface
	// Children are the member's informers of the child resources (selected
	// by the member's label, like the owners'): a newly assigned owner is not
	// reconciled until they have delivered the children fence.
	Children []Source
	// FenceTimeout bounds the wait for a children fence: past it the key is
	// reconciled anyway, logged and counted. Default: the ring's
	// RenewDeadline.
	FenceTimeout time.Duration
	// Metrics receives ctrlkit_shard_keys_owned and the fence time-outs;
	// nil records nothing.
	Metrics *Metrics
	// Clock times the fence time-out. Default: the real clock.
	Clock clock.WithTicker
}

// Key is what a Gate needs of a controller's key: comparable, with String
// giving the informer's cache key ("namespace/name", or "name"), as
// controller.Key does.
type Key interface {
	comparable
	String() string
}

// Gate is the member side of the protocol for one controller. Give it to
// the controller as its admission step (controller.Controller's
// SetAdmission): a worker asks Admit before each Reconcile and calls
// Release after. The Gate
//
//   - refuses keys whose owner carries the drain label, and keys it does
//     not cache unless it saw their owner deleted while assigned here (a
//     key handed over leaves the cache too, and a retry, requeue or child
//     event may still bring it: that is not a deletion);
//   - acknowledges a drain, once the key is not being reconciled, by
//     removing the assignment and drain labels in one patch preconditioned
//     on the version that carried the drain label;
//   - holds back the first Reconcile of a newly assigned owner until the
//     child informers have delivered the children fence, and enqueues it
//     then.
//
// The owners' and children's informers must select the member's label
// (informer.WithLabelSelector with Member.Selector). Run it (its handlers and
// acknowledgement worker) for as long as the controller runs.
type Gate[K Key] struct {
	cfg      Config
	holder   string // the member's Lease holder: the process the keys must be stamped for
	owners   Source
	enqueue  func(K)
	w        writer
	clock    clock.WithTicker
	metrics  *Metrics
	timeout  time.Duration
	children []Source
	trackers []*rvTracker

	mu     sync.Mutex
	logger klog.Logger // Run's, for the fence time-outs Admit logs
	// acks is the acknowledgement queue while Run runs (nil otherwise, so a
	// gate that never runs starts no goroutine); drains seen before are
	// kept in pendingAcks.
	acks        workqueue.TypedRateLimitingInterface[string]
	pendingAcks map[string]bool
	inFlight    map[string]bool
	acking      map[string]bool   // acknowledgement patch under way
	afterAck    map[string]K      // keys refused while acking, enqueued once it ends
	acked       map[string]string // key -> the version whose drain was acknowledged, while cached
	deleted     map[string]deletion
	refused     map[string]refusal[K]
	fenced      map[string]fenced[K]
	owned       int
}

// deletion is an owner this member saw deleted while it was assigned here:
// the one kind of key the gate admits without caching it. The entry lives
// until a Reconcile of the key was admitted and the ring's LeaseDuration has
// passed (for the events its children's deletions bring), or until the key
// is cached here again; so the set holds recent deletions only.
type deletion struct {
	at       time.Time
	admitted bool
}

// refusal is a key refused because it was not cached and not known deleted.
// The controller's handler of an owner's deletion may run before the gate's
// (each listener of an informer has its own goroutine): when the gate's
// then records the deletion, it enqueues the key again. Kept for the ring's
// LeaseDuration.
type refusal[K Key] struct {
	key K
	at  time.Time
}

// fenced is a key held back by its children fence.
type fenced[K Key] struct {
	key   K // to enqueue when the fence passes
	since time.Time
}

// NewGate returns the gate of member's controller over the owners informer
// (the sharded resource, selected by member's label); enqueue is the
// controller's Enqueue, for keys held back by a fence.
func NewGate[K Key](member *Member, owners Source, enqueue func(K), opts GateOptions) (*Gate[K], error) {
	bad := func(field, rule string) (*Gate[K], error) { return nil, &ConfigError{Field: field, Rule: rule} }
	switch {
	case member == nil:
		return bad("member", "member must not be nil")
	case owners == nil:
		return bad("owners", "owners informer must not be nil")
	case enqueue == nil:
		return bad("enqueue", "enqueue function must not be nil")
	case opts.Metadata == nil:
		return bad("Metadata", "metadata client must not be nil")
	case opts.FenceTimeout < 0:
		return bad("FenceTimeout", fmt.Sprintf("fence timeout %v must not be negative", opts.FenceTimeout))
	}
	g := newGate(member.Config(), member.holder, owners, enqueue, metadataWriter{opts.Metadata}, opts)
	for i, c := range opts.Children {
		if c == nil {
			return bad("Children", fmt.Sprintf("child informer %d is nil", i))
		}
	}
	return g, nil
}

func newGate[K Key](cfg Config, holder string, owners Source, enqueue func(K), w writer, opts GateOptions) *Gate[K] {
	g := &Gate[K]{
		cfg: cfg, holder: holder, owners: owners, enqueue: enqueue, w: w, clock: opts.Clock, metrics: opts.Metrics,
		timeout: opts.FenceTimeout, children: opts.Children,
		logger:      klog.Background().WithValues("ring", cfg.Ring, "member", cfg.Identity),
		pendingAcks: map[string]bool{}, inFlight: map[string]bool{}, acking: map[string]bool{}, afterAck: map[string]K{},
		acked: map[string]string{}, deleted: map[string]deletion{}, refused: map[string]refusal[K]{}, fenced: map[string]fenced[K]{},
	}
	if g.clock == nil {
		g.clock = clock.RealClock{}
	}
	if g.timeout == 0 {
		g.timeout = cfg.RenewDeadline
	}
	for _, c := range opts.Children {
		g.trackers = append(g.trackers, &rvTracker{resource: c.GVR().GroupResource().String(), onRaise: g.releaseFenced})
	}
	return g
}

// requestAck asks for the drain of k to be acknowledged. g.mu is held.
func (g *Gate[K]) requestAck(k string) {
	if g.acks != nil {
		g.acks.Add(k)
		return
	}
	g.pendingAcks[k] = true
}

// ownerState reads the cached owner of key.
func (g *Gate[K]) ownerState(key string) (obj metav1.Object, mine, draining bool) {
	o, ok, err := g.owners.Informer().GetStore().GetByKey(key)
	if err != nil || !ok {
		return nil, false, false
	}
	m, err := meta.Accessor(o)
	if err != nil {
		return nil, false, false
	}
	return m, g.assignedHere(m), m.GetLabels()[DrainLabel(g.cfg.Ring)] != ""
}

// assignedHere reports whether m is assigned to this member's process: its
// label and the holder the sharder stamped it for. A key stamped for an
// earlier process of the same identity is not this one's: the sharder
// assigns it again once it sees the Lease's new holder.
func (g *Gate[K]) assignedHere(m metav1.Object) bool {
	return m.GetLabels()[Label(g.cfg.Ring)] == g.cfg.Identity && m.GetAnnotations()[HolderAnnotation(g.cfg.Ring)] == g.holder
}

// Admit reports whether a worker may reconcile key now; see Gate. An
// admitted key must be Released after its Reconcile.
func (g *Gate[K]) Admit(key K) bool {
	k := key.String()
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.acking[k] {
		// The acknowledgement's reply may come after the owner was given
		// back to this member: look again once it has.
		g.afterAck[k] = key
		return false
	}
	obj, mine, draining := g.ownerState(k)
	switch {
	case obj == nil:
		// Not cached: admitted only as a deletion this member saw. Anything
		// else is a key handed over (its owner left the label selector, and
		// a retry, requeue or child event may still bring it here), or one
		// whose owner is not here yet (its add event enqueues it).
		d, ok := g.deleted[k]
		if !ok {
			g.refused[k] = refusal[K]{key: key, at: g.clock.Now()}
			return false
		}
		d.admitted = true
		g.deleted[k] = d
	case !mine:
		return false
	case draining:
		g.requestAck(k)
		return false
	default:
		delete(g.deleted, k)
		delete(g.acked, k)
		if !g.fencePassed(k, key, obj) {
			return false
		}
	}
	g.inFlight[k] = true
	return true
}

// fencePassed reports whether obj's children fence has been delivered, or
// timed out; otherwise it remembers key to enqueue later. g.mu is held.
func (g *Gate[K]) fencePassed(k string, key K, obj metav1.Object) bool {
	f := parseFence(obj.GetAnnotations()[FenceAnnotation(g.cfg.Ring)])
	if len(f) == 0 || passed(f, g.trackers) {
		delete(g.fenced, k)
		return true
	}
	p, ok := g.fenced[k]
	if !ok {
		p = fenced[K]{key: key, since: g.clock.Now()}
		g.fenced[k] = p
	}
	if g.clock.Since(p.since) < g.timeout {
		return false
	}
	delete(g.fenced, k)
	g.metrics.fenceTimedOut(g.cfg.Ring, g.cfg.Identity)
	g.logger.Info("Children fence not reached in time; reconciling anyway",
		"key", k, "waitingFor", describe(f, g.trackers), "timeout", g.timeout)
	return true
}

// Release ends an admitted key's Reconcile; a drain that waited for it is
// acknowledged now.
func (g *Gate[K]) Release(key K) {
	k := key.String()
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.inFlight, k)
	if obj, mine, draining := g.ownerState(k); obj != nil && mine && draining {
		g.requestAck(k)
	}
}

// releaseFenced enqueues the held-back keys whose fence has passed or
// timed out, and forgets the deletions whose time is over.
func (g *Gate[K]) releaseFenced() {
	g.mu.Lock()
	for k, d := range g.deleted {
		if d.admitted && g.clock.Since(d.at) >= g.cfg.LeaseDuration {
			delete(g.deleted, k)
		}
	}
	for k, r := range g.refused {
		if g.clock.Since(r.at) >= g.cfg.LeaseDuration {
			delete(g.refused, k)
		}
	}
	var ready []K
	for k, p := range g.fenced {
		obj, mine, draining := g.ownerState(k)
		if obj == nil || !mine || draining {
			// Deleted or leaving: its own events take it from here.
			delete(g.fenced, k)
			continue
		}
		// Kept until Admit lets the key through, so the time-out runs
		// from the first refusal.
		if passed(parseFence(obj.GetAnnotations()[FenceAnnotation(g.cfg.Ring)]), g.trackers) ||
			g.clock.Since(p.since) >= g.timeout {
			ready = append(ready, p.key)
		}
	}
	g.mu.Unlock()
	for _, k := range ready {
		g.enqueue(k)
	}
}

// Run registers the gate's handlers and acknowledges drains until ctx ends;
// it removes its handlers and waits for its goroutines before returning.
func (g *Gate[K]) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx).WithValues("ring", g.cfg.Ring, "member", g.cfg.Identity)
	ctx = klog.NewContext(ctx, logger)
	acks := workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](10*time.Millisecond, g.cfg.RetryPeriod),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "shard-acks-" + g.cfg.Ring, Clock: g.clock})
	g.mu.Lock()
	g.logger = logger
	g.acks = acks
	for k := range g.pendingAcks {
		acks.Add(k)
	}
	clear(g.pendingAcks)
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		g.acks = nil
		g.mu.Unlock()
		acks.ShutDown()
	}()
	type reg struct {
		inf cache.SharedIndexInformer
		r   cache.ResourceEventHandlerRegistration
	}
	var regs []reg
	defer func() {
		for _, r := range regs {
			_ = r.inf.RemoveEventHandler(r.r)
		}
		g.mu.Lock()
		g.metrics.ownedDelta(g.cfg.Ring, g.cfg.Identity, -float64(g.owned))
		g.owned = 0
		g.mu.Unlock()
	}()
	r, err := g.owners.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { g.ownerEvent(obj, 1) },
		UpdateFunc: func(_, obj any) { g.ownerEvent(obj, 0) },
		DeleteFunc: g.ownerDeleted,
	})
	if err != nil {
		return fmt.Errorf("sharding: gate of ring %q: watching %s: %w", g.cfg.Ring, g.owners.Name(), err)
	}
	regs = append(regs, reg{g.owners.Informer(), r})
	for i, c := range g.children {
		r, err := c.Informer().AddEventHandler(g.trackers[i].handler())
		if err != nil {
			return fmt.Errorf("sharding: gate of ring %q: watching %s: %w", g.cfg.Ring, c.Name(), err)
		}
		regs = append(regs, reg{c.Informer(), r})
	}

	var wg sync.WaitGroup
	wg.Go(func() {
		for g.processAck(ctx, acks) {
		}
	})
	wg.Go(func() {
		tick := g.clock.NewTicker(max(g.timeout/4, time.Millisecond))
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C():
				g.releaseFenced()
			}
		}
	})
	<-ctx.Done()
	acks.ShutDown()
	wg.Wait()
	return nil
}

// ownerEvent counts the owned keys and starts drains; delta is +1 for an
// add, 0 for an update.
func (g *Gate[K]) ownerEvent(obj any, delta int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.owned += delta
	g.metrics.ownedDelta(g.cfg.Ring, g.cfg.Identity, float64(delta))
	m, err := meta.Accessor(obj)
	if err != nil {
		return
	}
	if !g.assignedHere(m) {
		return
	}
	k, err := cache.MetaNamespaceKeyFunc(obj)
	if err != nil {
		return
	}
	if m.GetLabels()[DrainLabel(g.cfg.Ring)] != "" {
		g.requestAck(k)
	}
}

// ownerDeleted counts an owner leaving the cache and forgets its state. It
// remembers the key as deleted when the owner's last state was assigned
// here and not draining: an owner handed over leaves the cache draining
// (the API server's watch gives the state before the acknowledgement) or
// without this member's label (a fake's may give the state after).
func (g *Gate[K]) ownerDeleted(obj any) {
	g.mu.Lock()
	r, again := g.recordDeletion(obj)
	g.mu.Unlock()
	if again {
		g.enqueue(r.key)
	}
}

// recordDeletion is ownerDeleted's part under g.mu; it returns the refusal
// of the key to enqueue again, if any.
func (g *Gate[K]) recordDeletion(obj any) (r refusal[K], again bool) {
	g.owned--
	g.metrics.ownedDelta(g.cfg.Ring, g.cfg.Identity, -1)
	k, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		return r, false
	}
	delete(g.acked, k)
	delete(g.fenced, k)
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return r, false
	}
	if !g.assignedHere(m) || m.GetLabels()[DrainLabel(g.cfg.Ring)] != "" {
		return r, false
	}
	g.deleted[k] = deletion{at: g.clock.Now()}
	r, again = g.refused[k]
	delete(g.refused, k)
	return r, again
}

func (g *Gate[K]) processAck(ctx context.Context, acks workqueue.TypedRateLimitingInterface[string]) bool {
	k, shutdown := acks.Get()
	if shutdown {
		return false
	}
	defer acks.Done(k)
	if err := g.ack(ctx, k); err != nil {
		if ctx.Err() == nil {
			klog.FromContext(ctx).V(2).Info("Acknowledging a drain failed; retrying", "key", k, "err", err)
			acks.AddRateLimited(k)
		}
		return true
	}
	acks.Forget(k)
	return true
}

// ack acknowledges the drain of k if the cache shows one and k is not being
// reconciled. A reply lost after the write succeeded is harmless: k stays
// refused (draining while cached, then not cached), and the retry finds the
// owner gone from the cache or fails its precondition.
func (g *Gate[K]) ack(ctx context.Context, k string) error {
	g.mu.Lock()
	obj, mine, draining := g.ownerState(k)
	// Already acknowledged at this version: the cache has not caught up.
	if obj == nil || !mine || !draining || g.inFlight[k] || g.acked[k] == obj.GetResourceVersion() {
		g.mu.Unlock()
		return nil
	}
	g.acking[k] = true
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		delete(g.acking, k)
		key, again := g.afterAck[k]
		delete(g.afterAck, k)
		g.mu.Unlock()
		if again {
			g.enqueue(key)
		}
	}()
	ns, name, _ := cache.SplitMetaNamespaceKey(k)
	_, err := g.w.patch(ctx, g.owners.GVR(), ns, name, metaPatch(obj.GetResourceVersion(),
		map[string]*string{Label(g.cfg.Ring): nil, DrainLabel(g.cfg.Ring): nil}, nil))
	switch {
	case err == nil:
		g.mu.Lock()
		// Only while cached: the owner's delete event forgets it.
		if o, _, _ := g.ownerState(k); o != nil {
			g.acked[k] = obj.GetResourceVersion()
		}
		g.mu.Unlock()
		klog.FromContext(ctx).V(2).Info("Acknowledged a drain", "key", k)
		return nil
	case apierrors.IsNotFound(err):
		return nil
	default:
		return err
	}
}
