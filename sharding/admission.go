package sharding

import (
	"context"
	"fmt"
	"maps"
	"sync"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/ctrlkit/ctrlkit/informer"
)

// AssignerOptions configure NewAssigner.
type AssignerOptions struct {
	// Clock judges Lease renewals. Default: the real clock.
	Clock clock.WithTicker
}

// Assigner assigns the ring's new objects as they are created, from a
// mutating admission webhook (webhook.NewShardAssigning serves it), so that
// the sharder writes only when the membership changes. It keeps a view of
// the live members as the sharder does (the member Leases it has seen
// renewed within LeaseDuration of its own clock) and labels a new object for
// the member the ring over that view chooses, stamped for that member's
// Lease holder.
//
// Nothing else in the protocol changes: to the sharder, an object assigned at
// admission is one it assigned itself. Where the Assigner's view differs from
// the sharder's (a member that joined or died a moment ago), the sharder
// moves the object as any other: by a drain when the member is live, at once
// when it is not. An object created while the webhook is down, or before the
// Assigner has seen the Leases, is admitted unlabelled and the sharder
// assigns it, as without the webhook. Every replica runs one (Run), since
// every replica behind the webhook's Service answers.
type Assigner struct {
	cfg    Config
	client kubernetes.Interface
	live   *liveness

	mu     sync.Mutex
	synced func() bool // the Lease informer's HasSynced while Run runs
}

// NewAssigner validates cfg (defaults applied) and returns an Assigner that
// has not started; client watches the ring's member Leases.
func NewAssigner(client kubernetes.Interface, cfg Config, opts AssignerOptions) (*Assigner, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if client == nil {
		return nil, &ConfigError{Field: "client", Rule: "client must not be nil"}
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	return &Assigner{cfg: cfg, client: client, live: newLiveness(cfg.Ring, cfg.LeaseDuration, opts.Clock)}, nil
}

// Name identifies the Assigner among a process's runnables.
func (a *Assigner) Name() string { return "shard-assigner/" + a.cfg.Ring }

// NeedLeaderElection is false: every replica answers the webhook.
func (a *Assigner) NeedLeaderElection() bool { return false }

// Run watches the ring's member Leases until ctx ends.
func (a *Assigner) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx).WithValues("ring", a.cfg.Ring)
	f := informer.NewFactory(a.client, informer.Options{Logger: logger})
	defer f.Shutdown()
	leases, err := informer.For[*coordinationv1.Lease](f,
		informer.InNamespaces[*coordinationv1.Lease](a.cfg.Namespace),
		informer.WithLabelSelector[*coordinationv1.Lease](RingLabel+"="+a.cfg.Ring))
	if err != nil {
		return fmt.Errorf("sharding: ring %q: assigner: %w", a.cfg.Ring, err)
	}
	reg, err := leases.AddHandler(informer.HandlerFuncs[*coordinationv1.Lease]{
		OnAdd:    func(l *coordinationv1.Lease, _ bool) { a.live.observe(l) },
		OnUpdate: func(_, l *coordinationv1.Lease) { a.live.observe(l) },
		OnDelete: func(l *coordinationv1.Lease) { a.live.forget(l) },
	})
	if err != nil {
		return fmt.Errorf("sharding: ring %q: assigner: %w", a.cfg.Ring, err)
	}
	a.mu.Lock()
	// The handler's, not the informer's: synced once the listed Leases have
	// reached the view, not merely the cache.
	a.synced = reg.HasSynced
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		a.synced = nil
		a.mu.Unlock()
	}()
	f.Start(ctx)
	<-ctx.Done()
	return nil
}

// HasSynced reports whether Run has listed the member Leases: until then,
// Assign assigns nothing.
func (a *Assigner) HasSynced() bool {
	a.mu.Lock()
	synced := a.synced
	a.mu.Unlock()
	return synced != nil && synced()
}

// Assign labels obj, a new object of the sharded resource, for the member
// the ring over the live members chooses, stamped for that member's Lease
// holder, and removes what an object copied from elsewhere may carry of the
// protocol (a drain label, a children barrier). It returns the member, or ""
// and leaves obj alone when it knows no live member (not running, Leases
// not synced, nobody live) or obj has no name yet (metadata.generateName:
// the API server names it after admission, and the ring hashes the name):
// the sharder assigns obj then.
func (a *Assigner) Assign(obj metav1.Object) string {
	if obj.GetName() == "" {
		return ""
	}
	if !a.HasSynced() {
		return ""
	}
	live := a.live.holders()
	if len(live) == 0 {
		return ""
	}
	member := NewWeightedRing(a.cfg.Ring, a.live.weights(live)).Owner(objectKey(obj))
	labels := maps.Clone(obj.GetLabels())
	if labels == nil {
		labels = map[string]string{}
	}
	labels[Label(a.cfg.Ring)] = member
	delete(labels, DrainLabel(a.cfg.Ring))
	obj.SetLabels(labels)
	ann := maps.Clone(obj.GetAnnotations())
	if ann == nil {
		ann = map[string]string{}
	}
	ann[HolderAnnotation(a.cfg.Ring)] = live[member]
	delete(ann, barrierAnnotation(a.cfg.Ring))
	obj.SetAnnotations(ann)
	return member
}

// objectKey is obj's key in the ring: "namespace/name", or "name" for a
// cluster-scoped object, as the informers' keys.
func objectKey(obj metav1.Object) string {
	if ns := obj.GetNamespace(); ns != "" {
		return ns + "/" + obj.GetName()
	}
	return obj.GetName()
}
