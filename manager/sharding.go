package manager

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/controller"
	"github.com/ctrlkit/ctrlkit/featuregate"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/internal/object"
	"github.com/ctrlkit/ctrlkit/sharding"
)

// ShardingOptions make the Manager a member of a ring (package sharding), in
// label mode or, with Config.Mode sharding.ModeServer, server-side (Start
// asks the API server whether it serves shard selectors and runs the ring
// on labels, saying so, when it does not: see ShardMode):
// the replicas of the binary split the objects of its sharded controllers
// and their caches, each reconciling the objects labelled with its
// identity. See Options.Sharding.
type ShardingOptions struct {
	// Config names the ring and this replica's identity in it (flags:
	// sharding.Config.AddFlags). Ring and Identity are required; the other
	// fields default as in sharding.Config.WithDefaults.
	Config sharding.Config
	// Sharder says which resource is sharded (Resource, required) and which
	// child resources follow their owner (Children), as the sharder labels
	// them. Metrics defaults to the Manager's sharding metrics.
	Sharder sharding.SharderOptions
	// Metadata is the metadata client the sharder lists, watches and labels
	// objects with, and the dispatchers acknowledge drains with. nil means one
	// built from Options.Config (or GetConfig's) by sharding.NewRingClient,
	// with the ring's own write rate (Config.WriteQPS and WriteBurst); a Manager
	// given a Client instead of a Config needs it set (NewRingClient), and
	// its rate limiter is the ring's write rate.
	Metadata metadata.Interface
	// Leases is the clientset of the ring's Leases: the member's renewals,
	// the sharder's election and Lease reads, a server-side ring's slot
	// records. nil means one built from Options.Config (or GetConfig's) by
	// sharding.NewLeaseClient, with the ring's write rate apart from the
	// controllers' (as kube-controller-manager gives leader election a
	// client of its own); a Manager given a Client instead of a Config uses
	// that Client unless this is set.
	Leases kubernetes.Interface
	// Cache configures ShardFactory (for example DynamicClient for a
	// custom resource). Its list options select the member's label
	// whatever they say: a TweakListOptions here is replaced, and so is
	// ShardSet (with Unsharded) on a server-side ring.
	Cache informer.Options
	// BarrierTimeout is sharding.DispatcherOptions.BarrierTimeout of every
	// sharded controller. 0 means the dispatcher's default (the ring's
	// RenewDeadline).
	BarrierTimeout time.Duration
	// SkipAccessCheck skips sharding.CheckAccess at Start: for clusters
	// that do not answer SelfSubjectAccessReviews (a fake clientset). By
	// default Start asks the API server first and refuses to start when the
	// ring lacks a permission, naming it.
	SkipAccessCheck bool
	// NoReadyzCheck leaves out the /readyz check "shard-<ring>" (fails
	// while the replica does not hold its member Lease or its sharded
	// controllers have not synced).
	NoReadyzCheck bool
	// AssignAtAdmission builds the ring's sharding.Assigner (ShardAssigner)
	// and runs it on every replica, member or not: serve it from the
	// Manager's webhook server with webhook.NewShardAssigning, and the new
	// objects of the sharded resource are assigned as they are created,
	// leaving the sharder only the moves of a membership change.
	AssignAtAdmission bool
}

// ShardedController is what AddSharded needs of a controller: every
// *controller.Controller[K] is one, and so is a type that embeds one.
type ShardedController[K sharding.Key] interface {
	Runnable
	// Enqueue adds a key to the controller's queue; the dispatcher enqueues the
	// keys it held back.
	Enqueue(key K)
	// SetAdmission puts the ring's dispatcher between the controller's queue
	// and its workers.
	SetAdmission(a controller.Admission[K]) error
}

// shardState is a Manager's part in its ring.
type shardState struct {
	cfg      sharding.Config // defaults applied; Mode as configured
	opts     ShardingOptions
	meta     metadata.Interface
	leases   kubernetes.Interface // the ring's Lease client
	member   *sharding.Member
	sharder  *sharding.Sharder
	assigner *sharding.Assigner // nil without AssignAtAdmission
	factory  *informer.Factory
	// shards is the factory's ShardSet in server-side mode (nil in label
	// mode). mode is the mode the ring runs in, set at Start: ModeLabels
	// when the API server does not serve shard selectors; labelled makes
	// the factory's lists select the member's label then.
	shards   *informer.ShardSet
	mode     atomic.Value // sharding.Mode
	labelled atomic.Bool
	keeper   *sharding.SlotKeeper // server-side mode, built at Start
	metrics  *sharding.Metrics
	name     string // the Group's runnable name and the /readyz check's
	// namespaceDefaulted: the ring's Lease namespace was not set and the process runs
	// outside a Pod, so Start checks that it exists (preflight).
	namespaceDefaulted bool
	runnables          []preparer
	synced             []syncedController // for the readyz check
	selectChecks       []sharding.Runnable
}

// syncedController is a sharded controller with a HasSynced method.
type syncedController struct {
	name      string
	hasSynced func() bool
}

// shardGroupPrefix prefixes the name of the ring's runnable and readyz check.
const shardGroupPrefix = "shard-"

// newShardState validates opts and builds the member, the sharder and the
// member's informer factory: nothing contacts the API server yet.
func (m *Manager) newShardState(opts ShardingOptions, restCfg *rest.Config) (*shardState, error) {
	bad := func(field, reason string) (*shardState, error) {
		return nil, &OptionsError{Field: "manager.Options.Sharding." + field, Reason: reason}
	}
	cfg := opts.Config.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("manager: sharding: %w", err)
	}
	if opts.BarrierTimeout < 0 {
		return bad("BarrierTimeout", fmt.Sprintf("%v is negative", opts.BarrierTimeout))
	}
	meta := opts.Metadata
	if meta == nil {
		if restCfg == nil {
			return bad("Metadata", "nil, and the Manager was given a Client and no Config to build one from: set Metadata (metadata.NewForConfig)")
		}
		var err error
		if meta, err = sharding.NewRingClient(restCfg, cfg); err != nil {
			return nil, fmt.Errorf("manager: %w", err)
		}
	}
	// The ring's Leases (renewals, the sharder's election and reads, slot
	// records) get a client with the ring's write rate, apart from the
	// controllers': a burst of their writes must not delay a renewal.
	leases := opts.Leases
	switch {
	case leases != nil:
	case restCfg != nil:
		var err error
		if leases, err = sharding.NewLeaseClient(restCfg, cfg); err != nil {
			return nil, fmt.Errorf("manager: %w", err)
		}
	default:
		leases = m.client
	}
	metrics, err := sharding.NewMetrics(m.registerer)
	if err != nil {
		return nil, fmt.Errorf("manager: %w", err)
	}
	sopts := opts.Sharder
	if sopts.Metrics == nil {
		sopts.Metrics = metrics
	}
	member, err := sharding.NewMember(leases, cfg, sharding.MemberOptions{})
	if err != nil {
		return nil, fmt.Errorf("manager: sharding: %w", err)
	}
	sharder, err := sharding.NewSharder(leases, meta, cfg, sopts)
	if err != nil {
		return nil, fmt.Errorf("manager: sharding: %w", err)
	}
	var assigner *sharding.Assigner
	if opts.AssignAtAdmission {
		if assigner, err = sharding.NewAssigner(leases, cfg, sharding.AssignerOptions{}); err != nil {
			return nil, fmt.Errorf("manager: sharding: %w", err)
		}
	}
	s := &shardState{
		cfg: cfg, opts: opts, meta: meta, leases: leases, member: member, sharder: sharder, assigner: assigner, metrics: metrics,
		name: shardGroupPrefix + cfg.Ring, namespaceDefaulted: opts.Config.Namespace == "" && outsidePod(),
	}
	s.mode.Store(cfg.Mode)
	selector := member.Selector()
	// Last, so that every informer of the factory selects the member's
	// share: forgetting it for one informer is not possible.
	fopts := opts.Cache
	if cfg.Mode == sharding.ModeServer {
		if s.shards, err = informer.NewShardSet(); err != nil {
			return nil, fmt.Errorf("manager: sharding: %w", err)
		}
		// Children hashed by their own UID would not follow their owner:
		// their informers cache every child (docs/design/sharding.md).
		var unsharded []schema.GroupResource
		if cfg.HashField == sharding.HashUID {
			for _, c := range sopts.Children {
				unsharded = append(unsharded, c.GroupResource())
			}
		}
		fopts.ShardSet, fopts.Unsharded = s.shards, unsharded
	} else {
		s.labelled.Store(true)
	}
	// The label selector is decided at list time: a server-side ring falls
	// back to labels at Start when the API server does not serve shard
	// selectors.
	fopts.TweakListOptions = func(o *metav1.ListOptions) {
		if s.labelled.Load() {
			o.LabelSelector = selector
		}
	}
	s.factory = informer.NewFactory(m.client, fopts)
	s.opts.Sharder = sopts
	return s, nil
}

// ShardFactory returns the informer factory of this replica's share of the
// ring (nil without Options.Sharding): every informer taken from it selects
// the member's label, shard.ctrlkit.dev/<ring>=<identity>, so it lists,
// watches and caches only the objects assigned to this replica. In
// server-side mode (sharding.ModeServer) its informers follow the member's
// hash slots instead (informer.Options.ShardSet), except those of the child
// resources of a ring hashing UIDs, which cache every child. Take the
// informers of the sharded resource and its children from it, and every
// other informer from Factory. It runs only while the replica is a member
// (the ring's runnable starts and shuts it down), not with Factory.
func (m *Manager) ShardFactory() *informer.Factory {
	if m.shard == nil {
		return nil
	}
	return m.shard.factory
}

// ShardMember returns this replica's member of the ring (nil without
// Options.Sharding): its Identity, Selector and IsMember.
func (m *Manager) ShardMember() *sharding.Member {
	if m.shard == nil {
		return nil
	}
	return m.shard.member
}

// ShardAssigner returns the ring's admission-time assigner (nil without
// Options.Sharding.AssignAtAdmission), which the Manager runs on every
// replica: give it to webhook.NewShardAssigning.
func (m *Manager) ShardAssigner() *sharding.Assigner {
	if m.shard == nil {
		return nil
	}
	return m.shard.assigner
}

// ErrNotSharded is matched by the error AddSharded returns for a Manager
// built without Options.Sharding.
var ErrNotSharded = errors.New("manager has no sharding options")

// AddSharded makes c a sharded controller of m's ring: at Start, it builds
// the ring's dispatcher (sharding.NewDispatcher) over owners, the informer
// of the sharded resource, and children, the informers of the child
// resources (both from m.ShardFactory()), sets it as c's admission step, and
// runs the dispatcher and c on every replica while it is a member of the
// ring, instead of as a plain Runnable (so c needs no leader election,
// whatever its NeedLeaderElection says). The informers must serve the
// resources Options.Sharding.Sharder names; an informer that turns out not
// to select the member's label (one from Factory instead of ShardFactory)
// stops the Manager with an error naming it. Call it before Start; c's name
// must be unique, as with Add.
func AddSharded[K sharding.Key, T informer.Object](m *Manager, c ShardedController[K], owners informer.Informer[T], children ...sharding.Source) error {
	field := func(reason string) error {
		return &OptionsError{Field: "manager.AddSharded", Reason: reason}
	}
	if m == nil {
		return field("nil Manager")
	}
	if m.shard == nil {
		return fmt.Errorf("manager: AddSharded: %w: set Options.Sharding", ErrNotSharded)
	}
	if object.IsNil(c) || object.IsNil(owners) {
		return field("needs a controller and its owners' informer")
	}
	s := m.shard
	if got, want := owners.GVR(), s.opts.Sharder.Resource; got != want {
		return field(fmt.Sprintf("owners informer %s serves %s, the ring %q shards %s", owners.Name(), got.GroupResource(), s.cfg.Ring, want.GroupResource()))
	}
	for i, ch := range children {
		if object.IsNil(ch) {
			return field(fmt.Sprintf("child informer %d is nil", i))
		}
		if !slices.Contains(s.opts.Sharder.Children, ch.GVR()) {
			return field(fmt.Sprintf("child informer %s serves %s, not one of the ring %q's children %v", ch.Name(), ch.GVR().GroupResource(), s.cfg.Ring, s.opts.Sharder.Children))
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.started {
		return fmt.Errorf("manager: adding sharded controller %q: %w", c.Name(), ErrAlreadyStarted)
	}
	name := c.Name()
	if _, dup := m.names[name]; dup {
		return fmt.Errorf("manager: %w %q", ErrDuplicateName, name)
	}
	if f := featureOf(c); f != "" && m.gate == nil {
		return &OptionsError{Runnable: name, Field: "Feature",
			Reason: fmt.Sprintf("%q is set but manager.Options.FeatureGate is nil", f)}
	}
	m.names[name] = struct{}{}
	s.runnables = append(s.runnables, &shardedRunnable[K]{controller: c, newDispatcher: func(s *shardState) (*sharding.Dispatcher[K], error) {
		if s.currentMode() == sharding.ModeServer {
			// Children need no barrier: they are cached whole (hashed by
			// UID) or move with their owner's slot (by namespace).
			return sharding.NewSlotDispatcher(s.keeper, owners, c.Enqueue)
		}
		return sharding.NewDispatcher(s.member, owners, c.Enqueue, sharding.DispatcherOptions{
			Metadata: s.meta, Children: children, BarrierTimeout: s.opts.BarrierTimeout, Metrics: s.metrics,
		})
	}})
	if hs, ok := c.(interface{ HasSynced() bool }); ok {
		s.synced = append(s.synced, syncedController{name: name, hasSynced: hs.HasSynced})
	}
	for _, src := range append([]sharding.Source{owners}, children...) {
		s.selectChecks = append(s.selectChecks, &selectorCheck{src: src, ring: s.cfg.Ring, label: sharding.Label(s.cfg.Ring), identity: s.cfg.Identity})
	}
	return nil
}

// shardedRunnable runs a sharded controller's dispatcher and the controller
// together: a Runnable to the Manager (for its feature gate and name), run
// inside the ring's Group. The dispatcher is built by prepare at Start, only
// for a controller that runs: a dispatcher's queue lives from its
// construction.
type shardedRunnable[K sharding.Key] struct {
	controller ShardedController[K]
	// newDispatcher builds the dispatcher over the informers AddSharded was
	// given (typed on the owners' object type), for the ring's mode.
	newDispatcher func(s *shardState) (*sharding.Dispatcher[K], error)
	dispatcher    *sharding.Dispatcher[K] // set by prepare
}

// preparer is a sharded controller's shardedRunnable.
type preparer interface {
	Runnable
	prepare(s *shardState) error
}

func (r *shardedRunnable[K]) prepare(s *shardState) error {
	d, err := r.newDispatcher(s)
	if err != nil {
		return fmt.Errorf("sharded controller %q: %w", r.controller.Name(), err)
	}
	if err := r.controller.SetAdmission(d); err != nil {
		return fmt.Errorf("sharded controller %q: %w", r.controller.Name(), err)
	}
	r.dispatcher = d
	return nil
}

func (r *shardedRunnable[K]) Name() string { return r.controller.Name() }

func (r *shardedRunnable[K]) Feature() featuregate.Feature { return featureOf(r.controller) }

func (r *shardedRunnable[K]) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg   sync.WaitGroup
		errs = make([]error, 2)
	)
	wg.Go(func() {
		errs[0] = r.dispatcher.Run(ctx)
		cancel()
	})
	wg.Go(func() {
		errs[1] = r.controller.Run(ctx)
		cancel()
	})
	wg.Wait()
	return errors.Join(errs...)
}

// selectorCheck fails as soon as its informer delivers an object without
// the member's assignment label: the informer does not select it (it came
// from the Manager's Factory, not ShardFactory), and the controller would
// reconcile every object of the ring, alongside the other members.
type selectorCheck struct {
	src      sharding.Source
	ring     string
	label    string
	identity string
}

// ErrNotShardScoped is matched by the error that stops a Manager whose
// sharded controller was given an informer that does not select the
// member's label.
var ErrNotShardScoped = errors.New("informer does not select the member's label")

func (s *selectorCheck) Run(ctx context.Context) error {
	violated := make(chan string, 1)
	check := func(obj any) {
		o, err := meta.Accessor(obj)
		if err != nil {
			return // a tombstone: its object was checked when it was added
		}
		if o.GetLabels()[s.label] != s.identity {
			select {
			case violated <- o.GetNamespace() + "/" + o.GetName():
			default:
			}
		}
	}
	reg, err := s.src.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { check(obj) },
		UpdateFunc: func(_, obj any) { check(obj) },
	})
	if err != nil {
		return fmt.Errorf("checking informer %s: %w", s.src.Name(), err)
	}
	defer func() { _ = s.src.Informer().RemoveEventHandler(reg) }()
	select {
	case <-ctx.Done():
		return nil
	case key := <-violated:
		return fmt.Errorf("ring %q: %w: %s delivered %s %s without %s=%s; take it from Manager.ShardFactory()",
			s.ring, ErrNotShardScoped, s.src.Name(), s.src.GVR().Resource, key, s.label, s.identity)
	}
}

// shardGroup builds the ring's runnable from the sharded controllers whose
// feature is enabled.
func (m *Manager) shardGroup(enabled func(Runnable) bool) (*sharding.Group, error) {
	s := m.shard
	var rs []sharding.Runnable
	if s.currentMode() == sharding.ModeServer {
		keeper, err := sharding.NewSlotKeeper(s.member, s.shards, s.factory.HasSynced, sharding.SlotKeeperOptions{Metrics: s.metrics})
		if err != nil {
			return nil, err
		}
		s.keeper = keeper
		rs = append(rs, keeper)
	}
	for _, r := range s.runnables {
		if !enabled(r) {
			continue
		}
		if err := r.prepare(s); err != nil {
			return nil, err
		}
		rs = append(rs, r)
	}
	if s.currentMode() != sharding.ModeServer {
		// A server-side member's objects carry no label to check.
		rs = append(rs, s.selectChecks...)
	}
	return sharding.NewGroup(s.name, s.member, s.sharder, s.factory, rs...)
}

// check is the /readyz check of the ring: the replica holds its member
// Lease and its sharded controllers synced their caches.
func (s *shardState) check(r *http.Request) error {
	if err := s.member.Check(r); err != nil {
		return err
	}
	var unsynced []string
	for _, c := range s.synced {
		if !c.hasSynced() {
			unsynced = append(unsynced, c.name)
		}
	}
	if len(unsynced) > 0 {
		return fmt.Errorf("sharded controllers not synced: %s", strings.Join(unsynced, ", "))
	}
	return nil
}
