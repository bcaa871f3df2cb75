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

// Source is what a Dispatcher needs of an informer; every informer.Informer[T]
// is one.
type Source interface {
	Name() string
	GVR() schema.GroupVersionResource
	Informer() cache.SharedIndexInformer
}

// DispatcherOptions configure NewDispatcher.
type DispatcherOptions struct {
	// Metadata writes the drain acknowledgements. Required.
	Metadata metadata.Interface
	// Children are the member's informers of the child resources (selected
	// by the member's label, like the owners'): a newly assigned owner is not
	// reconciled until they have delivered the children barrier.
	Children []Source
	// BarrierTimeout bounds the wait for a children barrier: past it the key is
	// reconciled anyway, logged and counted. Default: the ring's
	// RenewDeadline.
	BarrierTimeout time.Duration
	// Metrics receives ctrlkit_shard_keys_owned and the barrier time-outs;
	// nil records nothing.
	Metrics *Metrics
	// Clock times the barrier time-out. Default: the real clock.
	Clock clock.WithTicker
}

// Key is what a Dispatcher needs of a controller's key: comparable, with String
// giving the informer's cache key ("namespace/name", or "name"), as
// controller.Key does.
type Key interface {
	comparable
	String() string
}

// Dispatcher is the member side of the protocol for one controller. Give it to
// the controller as its admission step (controller.Controller's
// SetAdmission): a worker asks Admit before each Reconcile and calls
// Release after. The Dispatcher
//
//   - refuses keys whose owner carries the drain label, and keys it does
//     not cache unless it saw their owner deleted while assigned here (a
//     key handed over leaves the cache too, and a retry, requeue or child
//     event may still bring it: that is not a deletion);
//   - acknowledges a drain, once the key is not being reconciled, by
//     removing the assignment and drain labels in one patch preconditioned
//     on the version that carried the drain label;
//   - holds back the first Reconcile of a newly assigned owner until the
//     child informers have delivered the children barrier, and enqueues it
//     then.
//
// The owners' and children's informers must select the member's label
// (informer.WithLabelSelector with Member.Selector). Run it (its handlers and
// acknowledgement worker) for as long as the controller runs.
type Dispatcher[K Key] struct {
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
	logger klog.Logger // Run's, for the barrier time-outs Admit logs
	// acks is the acknowledgement queue while Run runs (nil otherwise, so a
	// dispatcher that never runs starts no goroutine); drains seen before are
	// kept in pendingAcks.
	acks        workqueue.TypedRateLimitingInterface[string]
	pendingAcks map[string]bool
	inFlight    map[string]bool
	acking      map[string]bool   // acknowledgement patch under way
	afterAck    map[string]K      // keys refused while acking, enqueued once it ends
	acked       map[string]string // key -> the version whose drain was acknowledged, while cached
	deleted     map[string]deletion
	refused     map[string]refusal[K]
	waiting     map[string]waiting[K]
	owned       int
}

// deletion is an owner this member saw deleted while it was assigned here:
// the one kind of key the dispatcher admits without caching it. The entry lives
// until a Reconcile of the key was admitted and the ring's LeaseDuration has
// passed (for the events its children's deletions bring), or until the key
// is cached here again; so the set holds recent deletions only.
type deletion struct {
	at       time.Time
	admitted bool
}

// refusal is a key refused because it was not cached and not known deleted.
// The controller's handler of an owner's deletion may run before the dispatcher's
// (each listener of an informer has its own goroutine): when the dispatcher's
// then records the deletion, it enqueues the key again. Kept for the ring's
// LeaseDuration.
type refusal[K Key] struct {
	key K
	at  time.Time
}

// waiting is a key held back by its children barrier.
type waiting[K Key] struct {
	key   K // to enqueue when the barrier passes
	since time.Time
}

// NewDispatcher returns the dispatcher of member's controller over the owners informer
// (the sharded resource, selected by member's label); enqueue is the
// controller's Enqueue, for keys held back by a barrier.
func NewDispatcher[K Key](member *Member, owners Source, enqueue func(K), opts DispatcherOptions) (*Dispatcher[K], error) {
	bad := func(field, rule string) (*Dispatcher[K], error) { return nil, &ConfigError{Field: field, Rule: rule} }
	switch {
	case member == nil:
		return bad("member", "member must not be nil")
	case owners == nil:
		return bad("owners", "owners informer must not be nil")
	case enqueue == nil:
		return bad("enqueue", "enqueue function must not be nil")
	case opts.Metadata == nil:
		return bad("Metadata", "metadata client must not be nil")
	case opts.BarrierTimeout < 0:
		return bad("BarrierTimeout", fmt.Sprintf("barrier timeout %v must not be negative", opts.BarrierTimeout))
	}
	d := newDispatcher(member.Config(), member.holder, owners, enqueue, metadataWriter{opts.Metadata}, opts)
	for i, c := range opts.Children {
		if c == nil {
			return bad("Children", fmt.Sprintf("child informer %d is nil", i))
		}
	}
	return d, nil
}

func newDispatcher[K Key](cfg Config, holder string, owners Source, enqueue func(K), w writer, opts DispatcherOptions) *Dispatcher[K] {
	d := &Dispatcher[K]{
		cfg: cfg, holder: holder, owners: owners, enqueue: enqueue, w: w, clock: opts.Clock, metrics: opts.Metrics,
		timeout: opts.BarrierTimeout, children: opts.Children,
		logger:      klog.Background().WithValues("ring", cfg.Ring, "member", cfg.Identity),
		pendingAcks: map[string]bool{}, inFlight: map[string]bool{}, acking: map[string]bool{}, afterAck: map[string]K{},
		acked: map[string]string{}, deleted: map[string]deletion{}, refused: map[string]refusal[K]{}, waiting: map[string]waiting[K]{},
	}
	if d.clock == nil {
		d.clock = clock.RealClock{}
	}
	if d.timeout == 0 {
		d.timeout = cfg.RenewDeadline
	}
	for _, c := range opts.Children {
		d.trackers = append(d.trackers, &rvTracker{resource: c.GVR().GroupResource().String(), onRaise: d.releaseWaiting})
	}
	return d
}

// requestAck asks for the drain of k to be acknowledged. d.mu is held.
func (d *Dispatcher[K]) requestAck(k string) {
	if d.acks != nil {
		d.acks.Add(k)
		return
	}
	d.pendingAcks[k] = true
}

// ownerState reads the cached owner of key.
func (d *Dispatcher[K]) ownerState(key string) (obj metav1.Object, mine, draining bool) {
	o, ok, err := d.owners.Informer().GetStore().GetByKey(key)
	if err != nil || !ok {
		return nil, false, false
	}
	m, err := meta.Accessor(o)
	if err != nil {
		return nil, false, false
	}
	return m, d.assignedHere(m), m.GetLabels()[DrainLabel(d.cfg.Ring)] != ""
}

// assignedHere reports whether m is assigned to this member's process: its
// label and the holder the sharder stamped it for. A key stamped for an
// earlier process of the same identity is not this one's: the sharder
// assigns it again once it sees the Lease's new holder.
func (d *Dispatcher[K]) assignedHere(m metav1.Object) bool {
	return m.GetLabels()[Label(d.cfg.Ring)] == d.cfg.Identity && m.GetAnnotations()[HolderAnnotation(d.cfg.Ring)] == d.holder
}

// Admit reports whether a worker may reconcile key now; see Dispatcher. An
// admitted key must be Released after its Reconcile.
func (d *Dispatcher[K]) Admit(key K) bool {
	k := key.String()
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.acking[k] {
		// The acknowledgement's reply may come after the owner was given
		// back to this member: look again once it has.
		d.afterAck[k] = key
		return false
	}
	obj, mine, draining := d.ownerState(k)
	switch {
	case obj == nil:
		// Not cached: admitted only as a deletion this member saw. Anything
		// else is a key handed over (its owner left the label selector, and
		// a retry, requeue or child event may still bring it here), or one
		// whose owner is not here yet (its add event enqueues it).
		del, ok := d.deleted[k]
		if !ok {
			d.refused[k] = refusal[K]{key: key, at: d.clock.Now()}
			return false
		}
		del.admitted = true
		d.deleted[k] = del
	case !mine:
		return false
	case draining:
		d.requestAck(k)
		return false
	default:
		delete(d.deleted, k)
		delete(d.acked, k)
		if !d.barrierPassed(k, key, obj) {
			return false
		}
	}
	d.inFlight[k] = true
	return true
}

// barrierPassed reports whether obj's children barrier has been delivered, or
// timed out; otherwise it remembers key to enqueue later. d.mu is held.
func (d *Dispatcher[K]) barrierPassed(k string, key K, obj metav1.Object) bool {
	f := parseBarrier(obj.GetAnnotations()[BarrierAnnotation(d.cfg.Ring)])
	if len(f) == 0 || passed(f, d.trackers) {
		delete(d.waiting, k)
		return true
	}
	p, ok := d.waiting[k]
	if !ok {
		p = waiting[K]{key: key, since: d.clock.Now()}
		d.waiting[k] = p
	}
	if d.clock.Since(p.since) < d.timeout {
		return false
	}
	delete(d.waiting, k)
	d.metrics.barrierTimedOut(d.cfg.Ring, d.cfg.Identity)
	d.logger.Info("Children barrier not reached in time; reconciling anyway",
		"key", k, "waitingFor", describe(f, d.trackers), "timeout", d.timeout)
	return true
}

// Release ends an admitted key's Reconcile; a drain that waited for it is
// acknowledged now.
func (d *Dispatcher[K]) Release(key K) {
	k := key.String()
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.inFlight, k)
	if obj, mine, draining := d.ownerState(k); obj != nil && mine && draining {
		d.requestAck(k)
	}
}

// releaseWaiting enqueues the held-back keys whose barrier has passed or
// timed out, and forgets the deletions whose time is over.
func (d *Dispatcher[K]) releaseWaiting() {
	d.mu.Lock()
	for k, del := range d.deleted {
		if del.admitted && d.clock.Since(del.at) >= d.cfg.LeaseDuration {
			delete(d.deleted, k)
		}
	}
	for k, r := range d.refused {
		if d.clock.Since(r.at) >= d.cfg.LeaseDuration {
			delete(d.refused, k)
		}
	}
	var ready []K
	for k, p := range d.waiting {
		obj, mine, draining := d.ownerState(k)
		if obj == nil || !mine || draining {
			// Deleted or leaving: its own events take it from here.
			delete(d.waiting, k)
			continue
		}
		// Kept until Admit lets the key through, so the time-out runs
		// from the first refusal.
		if passed(parseBarrier(obj.GetAnnotations()[BarrierAnnotation(d.cfg.Ring)]), d.trackers) ||
			d.clock.Since(p.since) >= d.timeout {
			ready = append(ready, p.key)
		}
	}
	d.mu.Unlock()
	for _, k := range ready {
		d.enqueue(k)
	}
}

// Run registers the dispatcher's handlers and acknowledges drains until ctx ends;
// it removes its handlers and waits for its goroutines before returning.
func (d *Dispatcher[K]) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx).WithValues("ring", d.cfg.Ring, "member", d.cfg.Identity)
	ctx = klog.NewContext(ctx, logger)
	acks := workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](10*time.Millisecond, d.cfg.RetryPeriod),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "shard-acks-" + d.cfg.Ring, Clock: d.clock})
	d.mu.Lock()
	d.logger = logger
	d.acks = acks
	for k := range d.pendingAcks {
		acks.Add(k)
	}
	clear(d.pendingAcks)
	d.mu.Unlock()
	defer func() {
		d.mu.Lock()
		d.acks = nil
		d.mu.Unlock()
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
		d.mu.Lock()
		d.metrics.ownedDelta(d.cfg.Ring, d.cfg.Identity, -float64(d.owned))
		d.owned = 0
		d.mu.Unlock()
	}()
	r, err := d.owners.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { d.ownerEvent(obj, 1) },
		UpdateFunc: func(_, obj any) { d.ownerEvent(obj, 0) },
		DeleteFunc: d.ownerDeleted,
	})
	if err != nil {
		return fmt.Errorf("sharding: dispatcher of ring %q: watching %s: %w", d.cfg.Ring, d.owners.Name(), err)
	}
	regs = append(regs, reg{d.owners.Informer(), r})
	for i, c := range d.children {
		r, err := c.Informer().AddEventHandler(d.trackers[i].handler())
		if err != nil {
			return fmt.Errorf("sharding: dispatcher of ring %q: watching %s: %w", d.cfg.Ring, c.Name(), err)
		}
		regs = append(regs, reg{c.Informer(), r})
	}

	var wg sync.WaitGroup
	wg.Go(func() {
		for d.processAck(ctx, acks) {
		}
	})
	wg.Go(func() {
		tick := d.clock.NewTicker(max(d.timeout/4, time.Millisecond))
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C():
				d.releaseWaiting()
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
func (d *Dispatcher[K]) ownerEvent(obj any, delta int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.owned += delta
	d.metrics.ownedDelta(d.cfg.Ring, d.cfg.Identity, float64(delta))
	m, err := meta.Accessor(obj)
	if err != nil {
		return
	}
	if !d.assignedHere(m) {
		return
	}
	k, err := cache.MetaNamespaceKeyFunc(obj)
	if err != nil {
		return
	}
	if m.GetLabels()[DrainLabel(d.cfg.Ring)] != "" {
		d.requestAck(k)
	}
}

// ownerDeleted counts an owner leaving the cache and forgets its state. It
// remembers the key as deleted when the owner's last state was assigned
// here and not draining: an owner handed over leaves the cache draining
// (the API server's watch gives the state before the acknowledgement) or
// without this member's label (a fake's may give the state after).
func (d *Dispatcher[K]) ownerDeleted(obj any) {
	d.mu.Lock()
	r, again := d.recordDeletion(obj)
	d.mu.Unlock()
	if again {
		d.enqueue(r.key)
	}
}

// recordDeletion is ownerDeleted's part under d.mu; it returns the refusal
// of the key to enqueue again, if any.
func (d *Dispatcher[K]) recordDeletion(obj any) (r refusal[K], again bool) {
	d.owned--
	d.metrics.ownedDelta(d.cfg.Ring, d.cfg.Identity, -1)
	k, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		return r, false
	}
	delete(d.acked, k)
	delete(d.waiting, k)
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return r, false
	}
	if !d.assignedHere(m) || m.GetLabels()[DrainLabel(d.cfg.Ring)] != "" {
		return r, false
	}
	d.deleted[k] = deletion{at: d.clock.Now()}
	r, again = d.refused[k]
	delete(d.refused, k)
	return r, again
}

func (d *Dispatcher[K]) processAck(ctx context.Context, acks workqueue.TypedRateLimitingInterface[string]) bool {
	k, shutdown := acks.Get()
	if shutdown {
		return false
	}
	defer acks.Done(k)
	if err := d.ack(ctx, k); err != nil {
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
func (d *Dispatcher[K]) ack(ctx context.Context, k string) error {
	d.mu.Lock()
	obj, mine, draining := d.ownerState(k)
	// Already acknowledged at this version: the cache has not caught up.
	if obj == nil || !mine || !draining || d.inFlight[k] || d.acked[k] == obj.GetResourceVersion() {
		d.mu.Unlock()
		return nil
	}
	d.acking[k] = true
	d.mu.Unlock()
	defer func() {
		d.mu.Lock()
		delete(d.acking, k)
		key, again := d.afterAck[k]
		delete(d.afterAck, k)
		d.mu.Unlock()
		if again {
			d.enqueue(key)
		}
	}()
	ns, name, _ := cache.SplitMetaNamespaceKey(k)
	_, err := d.w.patch(ctx, d.owners.GVR(), ns, name, metaPatch(obj.GetResourceVersion(),
		map[string]*string{Label(d.cfg.Ring): nil, DrainLabel(d.cfg.Ring): nil}, nil))
	switch {
	case err == nil:
		d.mu.Lock()
		// Only while cached: the owner's delete event forgets it.
		if o, _, _ := d.ownerState(k); o != nil {
			d.acked[k] = obj.GetResourceVersion()
		}
		d.mu.Unlock()
		klog.FromContext(ctx).V(2).Info("Acknowledged a drain", "key", k)
		return nil
	case apierrors.IsNotFound(err):
		return nil
	default:
		return err
	}
}
