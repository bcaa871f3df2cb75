package sharding

import (
	"context"
	"maps"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	kworkqueue "k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/internal/owner"
)

// term is one leadership term of a sharder: its caches, queue and state.
type term struct {
	cfg     Config
	opts    SharderOptions
	w       writer
	clock   clock.WithTicker
	metrics *Metrics
	live    *liveness

	factory *informer.Factory // nil in unit tests
	owners  informer.Informer[*metav1.PartialObjectMetadata]
	// strays cache the children without the ring's label, one informer per
	// child resource; the labelled children are read from the API server
	// (lists) when their owner changes hands.
	strays []childInformer
	leases informer.Informer[*coordinationv1.Lease]
	lists  *childLists // reads labelled children from the API server; nil in unit tests that do not look

	// ownerGet and childrenOf read the caches (replaced in unit tests);
	// childrenOf returns an owner's children without the ring's label.
	ownerGet   func(key string) (*metav1.PartialObjectMetadata, bool)
	childrenOf func(uid types.UID) []child
	// getLease reads a member Lease from the API server, not the cache;
	// nil in unit tests that do not look.
	getLease func(ctx context.Context, name string) (*coordinationv1.Lease, error)
	// getOwner reads an owner from the API server, not the cache.
	getOwner func(ctx context.Context, namespace, name string) (*metav1.PartialObjectMetadata, error)

	queue kworkqueue.TypedRateLimitingInterface[string]

	mu         sync.Mutex
	view       snapshot
	drainStart map[string]drainRecord // keys this term drains, not yet reassigned
	leaseReads map[string]leaseRead   // member -> its Lease's last read
	marks      map[string]ownerMark   // key -> the childLists mark of its latest owner event
	// relabelling is the keys whose children an assignment may have
	// labelled without its owner write being known to be stored: key ->
	// the member they were labelled for.
	relabelling map[string]string
	fences      map[string]ownerFence // key -> this term's last write of its owner (label_fence.go)
}

// leaseRead is the last read of a member's Lease from the API server: when,
// and the member's holder in the view it left ("" for dead).
type leaseRead struct {
	at     time.Time
	holder string
}

// drainRecord is a drain this term wrote or saw.
type drainRecord struct {
	at time.Time
	// assigning is set when this term writes the new assignment: finding
	// it stored without having had the reply is a handover to count, while
	// one written by an earlier sharder was counted there.
	assigning bool
}

type childInformer struct {
	gvr schema.GroupVersionResource
	inf informer.Informer[*metav1.PartialObjectMetadata]
}

// child is one child of an owner, cached or listed.
type child struct {
	gvr schema.GroupVersionResource
	obj *metav1.PartialObjectMetadata
}

func newTermState(cfg Config, opts SharderOptions, w writer) *term {
	return &term{
		cfg:         cfg,
		opts:        opts,
		w:           w,
		clock:       opts.Clock,
		metrics:     opts.Metrics,
		live:        newLiveness(cfg.Ring, cfg.LeaseDuration, opts.Clock),
		drainStart:  map[string]drainRecord{},
		leaseReads:  map[string]leaseRead{},
		marks:       map[string]ownerMark{},
		relabelling: map[string]string{},
		fences:      map[string]ownerFence{},
		queue: kworkqueue.NewTypedRateLimitingQueueWithConfig(
			kworkqueue.NewTypedItemExponentialFailureRateLimiter[string](10*time.Millisecond, cfg.RetryPeriod),
			kworkqueue.TypedRateLimitingQueueConfig[string]{Name: "sharder-" + cfg.Ring, Clock: opts.Clock}),
	}
}

func (s *Sharder) newTerm(ctx context.Context) (*term, error) {
	t := newTermState(s.cfg, s.opts, s.w)
	t.factory = informer.NewFactory(s.client, informer.Options{
		MetadataClient: s.meta, Logger: klog.FromContext(ctx), Namespace: s.opts.Namespace,
		ByObject: []informer.ObjectOverride{informer.ByObject(informer.ObjectOptions[*metav1.PartialObjectMetadata]{Transform: slimMetadata(s.cfg.Ring)})},
	})
	var err error
	if t.owners, err = informer.ForMetadata(t.factory, s.opts.Resource); err != nil {
		return nil, err
	}
	if t.leases, err = informer.For[*coordinationv1.Lease](t.factory,
		informer.InNamespaces[*coordinationv1.Lease](s.cfg.Namespace),
		informer.WithLabelSelector[*coordinationv1.Lease](RingLabel+"="+s.cfg.Ring)); err != nil {
		return nil, err
	}
	for _, gvr := range s.opts.Children {
		inf, err := informer.ForMetadata(t.factory, gvr,
			informer.WithLabelSelector[*metav1.PartialObjectMetadata]("!"+Label(s.cfg.Ring)))
		if err != nil {
			return nil, err
		}
		t.strays = append(t.strays, childInformer{gvr: gvr, inf: inf})
	}
	t.lists = newChildLists(s.cfg.Ring, t.clock, func(ctx context.Context, gvr schema.GroupVersionResource, ns string, opts metav1.ListOptions) (*metav1.PartialObjectMetadataList, error) {
		return s.meta.Resource(gvr).Namespace(ns).List(ctx, opts)
	})
	leases := s.client.CoordinationV1().Leases(s.cfg.Namespace)
	t.getLease = func(ctx context.Context, name string) (*coordinationv1.Lease, error) {
		return leases.Get(ctx, name, metav1.GetOptions{})
	}
	// A LIST of one name, not a GET: the ring's permissions on the sharded
	// resource are list, watch and patch (CheckAccess), and a LIST without
	// a resourceVersion is as consistent a read.
	t.getOwner = func(ctx context.Context, namespace, name string) (*metav1.PartialObjectMetadata, error) {
		l, err := s.meta.Resource(s.opts.Resource).Namespace(namespace).List(ctx, metav1.ListOptions{
			FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String(),
		})
		if err != nil {
			return nil, err
		}
		for i := range l.Items {
			if l.Items[i].Name == name {
				return &l.Items[i], nil
			}
		}
		return nil, apierrors.NewNotFound(s.opts.Resource.GroupResource(), name)
	}
	t.ownerGet = func(key string) (*metav1.PartialObjectMetadata, bool) {
		obj, ok, err := t.owners.Informer().GetStore().GetByKey(key)
		if err != nil || !ok {
			return nil, false
		}
		m, ok := obj.(*metav1.PartialObjectMetadata)
		return m, ok
	}
	t.childrenOf = func(uid types.UID) []child {
		var out []child
		for _, c := range t.strays {
			objs, err := c.inf.ByControllerUID(uid)
			if err != nil {
				continue
			}
			for _, o := range objs {
				out = append(out, child{gvr: c.gvr, obj: o})
			}
		}
		return out
	}
	return t, nil
}

// run wires the handlers, waits for the caches and labels until ctx ends;
// it returns once every goroutine it started has.
func (t *term) run(ctx context.Context) {
	logger := klog.FromContext(ctx)
	defer t.factory.Shutdown()
	defer t.queue.ShutDown()

	if _, err := t.owners.AddHandler(informer.HandlerFuncs[*metav1.PartialObjectMetadata]{
		OnAdd:    func(o *metav1.PartialObjectMetadata, _ bool) { t.enqueueObject(o) },
		OnUpdate: func(_, o *metav1.PartialObjectMetadata) { t.enqueueObject(o) },
		OnDelete: func(o *metav1.PartialObjectMetadata) { t.enqueueObject(o) },
	}); err != nil {
		logger.Error(err, "Cannot watch the sharded resource")
		<-ctx.Done()
		return
	}
	for _, c := range t.strays {
		if _, err := c.inf.AddHandler(t.childHandler()); err != nil {
			logger.Error(err, "Cannot watch a child resource", "resource", c.gvr.String())
			<-ctx.Done()
			return
		}
	}
	if _, err := t.leases.AddHandler(informer.HandlerFuncs[*coordinationv1.Lease]{
		OnAdd:    func(l *coordinationv1.Lease, _ bool) { t.live.observe(l); t.refresh() },
		OnUpdate: func(_, l *coordinationv1.Lease) { t.live.observe(l); t.refresh() },
		OnDelete: func(l *coordinationv1.Lease) { t.live.forget(l); t.refresh() },
	}); err != nil {
		logger.Error(err, "Cannot watch the member Leases")
		<-ctx.Done()
		return
	}
	t.factory.Start(ctx)
	if err := t.factory.WaitForCacheSync(ctx); err != nil {
		if ctx.Err() == nil {
			logger.Error(err, "Caches did not sync")
			<-ctx.Done()
		}
		return
	}
	t.refresh()
	// A member is judged dead by time passing, not by an event: look again
	// every RetryPeriod.
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := t.clock.NewTicker(t.cfg.RetryPeriod)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C():
				t.refresh()
				t.lists.prune(t.cfg.RetryPeriod)
			}
		}
	})
	for range t.opts.Workers {
		wg.Go(func() {
			for t.processNext(ctx) {
			}
		})
	}
	<-ctx.Done()
	t.queue.ShutDown()
	wg.Wait()
}

// childHandler queues the owner of a child without the ring's label, to
// label it.
func (t *term) childHandler() informer.Handler[*metav1.PartialObjectMetadata] {
	owners := owner.NewResolver(t.opts.Resource, t.opts.Kind.Kind, func(namespace, name string) (types.UID, bool) {
		o, err := t.owners.Lister().Get(namespace, name)
		if err != nil {
			return "", false
		}
		return o.UID, true
	}, t.owners.HasSynced, nil)
	enqueueOwner := func(m *metav1.PartialObjectMetadata) {
		keys, n := owners.Keys(m)
		for _, nn := range keys[:n] {
			t.queue.Add(nn.String())
		}
	}
	return informer.HandlerFuncs[*metav1.PartialObjectMetadata]{
		OnAdd:    func(m *metav1.PartialObjectMetadata, _ bool) { enqueueOwner(m) },
		OnUpdate: func(_, m *metav1.PartialObjectMetadata) { enqueueOwner(m) },
		OnDelete: enqueueOwner,
	}
}

// enqueueObject queues an owner, with the mark of this event: the owner's
// cached state is at least o's now, so a LIST started after the mark holds
// every child written before that state.
func (t *term) enqueueObject(o *metav1.PartialObjectMetadata) {
	key := cache.NewObjectName(o.Namespace, o.Name).String()
	t.markOwner(key, o.ResourceVersion)
	t.queue.Add(key)
}

// ownerMark is the childLists mark taken when an owner's version was seen.
type ownerMark struct {
	mark uint64
	rv   string
}

func (t *term) markOwner(key, rv string) {
	if t.lists == nil {
		return
	}
	m := t.lists.observe()
	t.mu.Lock()
	t.marks[key] = ownerMark{mark: m, rv: rv}
	t.mu.Unlock()
}

// refresh recomputes the live members and, when they (or their weights)
// changed, queues every owner: a join, a leave, a restart or a new weight can
// move any key.
func (t *term) refresh() {
	// A member restarted with the same identity has a new holder: its keys
	// are assigned again, so the change counts too.
	live := t.live.holders()
	weights := t.live.weights(live)
	t.mu.Lock()
	changed := t.view.ring == nil || !maps.Equal(t.view.live, live) || !maps.Equal(t.view.weights, weights)
	if changed {
		t.view = newSnapshot(t.cfg.Ring, live, weights)
		if t.lists != nil {
			t.view.mark = t.lists.observe()
		}
	}
	t.mu.Unlock()
	t.metrics.setMembers(t.cfg.Ring, len(live))
	if !changed || t.owners == nil || !t.owners.HasSynced() {
		return
	}
	// The marks are taken after the view changed and the owners were read.
	// The keys without a live member go first: nobody reconciles them, and
	// they move without waiting for a drain; a live member's keys that move
	// only rebalance.
	objs := t.owners.Informer().GetStore().List()
	later := make([]*metav1.PartialObjectMetadata, 0, len(objs))
	for _, obj := range objs {
		o, ok := obj.(*metav1.PartialObjectMetadata)
		if !ok {
			continue
		}
		if t.orphaned(o, live) {
			t.enqueueObject(o)
		} else {
			later = append(later, o)
		}
	}
	for _, o := range later {
		t.enqueueObject(o)
	}
}

// orphaned reports whether o has no live member in live (members to their
// Lease holders): it is unassigned, or stamped for a process that no longer
// holds its member's Lease.
func (t *term) orphaned(o *metav1.PartialObjectMetadata, live map[string]string) bool {
	cur := o.GetLabels()[Label(t.cfg.Ring)]
	return cur == "" || live[cur] == "" || o.GetAnnotations()[HolderAnnotation(t.cfg.Ring)] != live[cur]
}

func (t *term) snapshot() snapshot {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.view
}

func (t *term) processNext(ctx context.Context) bool {
	key, shutdown := t.queue.Get()
	if shutdown {
		return false
	}
	defer t.queue.Done(key)
	after, err := t.sync(ctx, key)
	switch {
	case err != nil:
		if ctx.Err() == nil {
			klog.FromContext(ctx).V(2).Info("Labelling failed; retrying", "key", key, "err", err)
		}
		t.queue.AddRateLimited(key)
	case after > 0:
		t.queue.Forget(key)
		t.queue.AddAfter(key, after)
	default:
		t.queue.Forget(key)
	}
	return true
}
