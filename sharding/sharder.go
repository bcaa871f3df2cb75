package sharding

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/leaderelection"
)

// SharderOptions say what a Sharder shards.
type SharderOptions struct {
	// Resource is the sharded resource, the one whose objects are the keys
	// of the ring's controllers. Required.
	Resource schema.GroupVersionResource
	// Kind is Resource's kind, to recognise it in the controller references
	// of children. Default: looked up in client-go's scheme; required for a
	// custom resource that has Children.
	Kind schema.GroupVersionKind
	// Children are the resources whose objects follow their controlling
	// owner (an object of Resource) into its member's cache.
	Children []schema.GroupVersionResource
	// Namespace limits sharding to the objects of one namespace. Default:
	// all namespaces.
	Namespace string
	// Workers is how many keys are labelled in parallel. Default 2.
	Workers int
	// Metrics receives the ring's metrics; nil records none.
	Metrics *Metrics
	// Clock judges Lease renewals and times handovers. Default: the real
	// clock.
	Clock clock.WithTicker
}

// Sharder writes the ring's assignments. Every member runs one; the leader
// of the Lease <ring>-sharder is the only one writing (see the package
// documentation for the protocol). It watches, metadata only and only while
// it leads, the sharded resource, its children and the member Leases.
type Sharder struct {
	cfg     Config
	holder  string // its election identity: the ring identity and a per-process suffix
	opts    SharderOptions
	client  kubernetes.Interface
	meta    metadata.Interface
	w       writer
	clock   clock.WithTicker
	elector *leaderelection.Elector
}

// NewSharder validates cfg (defaults applied) and opts and returns a Sharder
// that has not started. client reads Leases and runs the election; meta
// lists, watches and labels the sharded objects.
func NewSharder(client kubernetes.Interface, meta metadata.Interface, cfg Config, opts SharderOptions) (*Sharder, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	bad := func(field, format string, args ...any) (*Sharder, error) {
		return nil, &ConfigError{Field: field, Rule: fmt.Sprintf(format, args...)}
	}
	switch {
	case client == nil:
		return bad("client", "client must not be nil")
	case meta == nil:
		return bad("metadata", "metadata client must not be nil")
	case opts.Resource.Version == "" || opts.Resource.Resource == "":
		return bad("Resource", "resource %q needs a version and a resource", opts.Resource.String())
	case opts.Workers < 0:
		return bad("Workers", "workers %d must not be negative", opts.Workers)
	}
	for _, c := range opts.Children {
		if c.Version == "" || c.Resource == "" {
			return bad("Children", "child resource %q needs a version and a resource", c.String())
		}
		if c == opts.Resource {
			return bad("Children", "child resource %s is the sharded resource", c.String())
		}
	}
	if opts.Kind.Empty() {
		opts.Kind = kindOf(opts.Resource)
		if opts.Kind.Empty() && len(opts.Children) > 0 {
			return bad("Kind", "kind of %s is not in client-go's scheme; set SharderOptions.Kind", opts.Resource.String())
		}
	}
	if opts.Workers == 0 {
		opts.Workers = 2
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	s := &Sharder{cfg: cfg, holder: leaderelection.UniqueIdentity(cfg.Identity), opts: opts, client: client, meta: meta, w: metadataWriter{meta}, clock: opts.Clock}
	le := cfg.election(cfg.Ring + sharderSuffix)
	// Per process, as the member Lease's holder: two processes of one identity (one host name,
	// or a Pod restarted while its former process runs on behind a partition) would otherwise
	// each take the other's holder for their own and both shard.
	le.Identity = s.holder
	// Released only after the term's writers have returned (leaderelection
	// guarantees it), so the next sharder starts at once.
	le.ReleaseOnCancel = true
	el, err := leaderelection.NewElector(client, le, leaderelection.Callbacks{
		OnStartedLeading: s.lead,
	})
	if err != nil {
		return nil, fmt.Errorf("sharding: ring %q: sharder election: %w", cfg.Ring, err)
	}
	s.elector = el
	return s, nil
}

// Name identifies the sharder among a process's runnables.
func (s *Sharder) Name() string { return "sharder/" + s.cfg.Ring }

// IsLeader reports whether this sharder is the ring's writer now.
func (s *Sharder) IsLeader() bool { return s.elector.IsLeader() }

// Holder is the sharder's identity in its election: the holder of the Lease <ring>-sharder
// while it leads. It is the ring identity and a per-process suffix
// (leaderelection.UniqueIdentity), so that two processes of one identity never both lead;
// IdentityOfHolder maps it back to the identity.
func (s *Sharder) Holder() string { return s.holder }

// Run contends for the sharder's Lease until ctx ends, sharding while it
// leads. A sharder that loses the Lease stops writing at once and contends
// again; Run returns nil when ctx ends.
func (s *Sharder) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx).WithValues("ring", s.cfg.Ring, "sharder", s.cfg.Identity)
	ctx = klog.NewContext(ctx, logger)
	for {
		err := s.elector.Run(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil && !errors.Is(err, leaderelection.ErrLeaseLost) {
			return fmt.Errorf("sharding: ring %q: %w", s.cfg.Ring, err)
		}
		logger.Info("Lost the sharder Lease; contending again")
	}
}

// lead shards until ctx ends (leadership lost or Run's ctx ended), with
// informers of its own that live only as long as this term.
func (s *Sharder) lead(ctx context.Context) {
	logger := klog.FromContext(ctx)
	logger.Info("Leading the ring: sharding")
	defer logger.Info("Stopped sharding")
	t, err := s.newTerm(ctx)
	if err != nil {
		// NewSharder's validation leaves nothing here to fail on but a bug;
		// say so and hold on until the term ends.
		logger.Error(err, "Cannot shard")
		<-ctx.Done()
		return
	}
	t.run(ctx)
}

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

	queue workqueue.TypedRateLimitingInterface[string]

	mu         sync.Mutex
	view       snapshot
	drainStart map[string]drainRecord // keys this term drains, not yet reassigned
	leaseReads map[string]leaseRead   // member -> its Lease's last read
	marks      map[string]ownerMark   // key -> the childLists mark of its latest owner event
	// relabelling is the keys whose children an assignment may have
	// labelled without its owner write being known to be stored: key ->
	// the member they were labelled for.
	relabelling map[string]string
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
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](10*time.Millisecond, cfg.RetryPeriod),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "sharder-" + cfg.Ring, Clock: opts.Clock}),
	}
}

func (s *Sharder) newTerm(ctx context.Context) (*term, error) {
	t := newTermState(s.cfg, s.opts, s.w)
	fopts := []informer.FactoryOption{
		informer.WithMetadataClient(s.meta), informer.WithLogger(klog.FromContext(ctx)),
		informer.WithTransform(slimMetadata(s.cfg.Ring)),
	}
	if s.opts.Namespace != "" {
		fopts = append(fopts, informer.WithNamespace(s.opts.Namespace))
	}
	t.factory = informer.NewFactory(s.client, fopts...)
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
		if _, err := c.inf.Informer().AddEventHandler(t.childHandler()); err != nil {
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
func (t *term) childHandler() cache.ResourceEventHandler {
	enqueueOwner := func(obj any) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		m, ok := obj.(*metav1.PartialObjectMetadata)
		if !ok {
			return
		}
		if nn, ok := informer.ControllerOf(m, t.opts.Kind); ok {
			t.queue.Add(cache.NewObjectName(nn.Namespace, nn.Name).String())
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { enqueueOwner(obj) },
		UpdateFunc: func(_, obj any) { enqueueOwner(obj) },
		DeleteFunc: func(obj any) { enqueueOwner(obj) },
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

// refresh recomputes the live members and, when they changed, queues every
// owner: a join, a leave or a restart can move any key.
func (t *term) refresh() {
	// A member restarted with the same identity has a new holder: its keys
	// are assigned again, so the change counts too.
	live := t.live.holders()
	t.mu.Lock()
	changed := t.view.ring == nil || !maps.Equal(t.view.live, live)
	if changed {
		t.view = newSnapshot(t.cfg.Ring, live)
	}
	t.mu.Unlock()
	t.metrics.setMembers(t.cfg.Ring, len(live))
	if !changed || t.owners == nil || !t.owners.HasSynced() {
		return
	}
	// The marks are taken after the view changed and the owners were read.
	for _, obj := range t.owners.Informer().GetStore().List() {
		if o, ok := obj.(*metav1.PartialObjectMetadata); ok {
			t.enqueueObject(o)
		}
	}
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

func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// kindOf finds gvr's kind in client-go's scheme (empty when unknown).
func kindOf(gvr schema.GroupVersionResource) schema.GroupVersionKind {
	for kind := range scheme.Scheme.KnownTypes(gvr.GroupVersion()) {
		gvk := gvr.GroupVersion().WithKind(kind)
		if plural, _ := meta.UnsafeGuessKindToResource(gvk); plural == gvr {
			return gvk
		}
	}
	return schema.GroupVersionKind{}
}
