package multicluster

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/sharding"
)

const (
	// claimRingLabel marks a cluster's claim Lease with its ring.
	claimRingLabel = "multicluster.ctrlkit.dev/ring"
	// claimClusterAnnotation names the cluster a claim Lease is for (the
	// Lease's name is a hash of it: cluster names need not be DNS names).
	claimClusterAnnotation = "multicluster.ctrlkit.dev/cluster"
)

// Sharding spreads a Fleet's clusters over the replicas that run it: each
// replica is a member of Config.Ring (a member Lease in Config.Namespace of
// the hub, renewed as sharding's members are), each cluster is given to one
// live member by rendezvous hashing (sharding.Ring), and a replica engages
// only the clusters it is given. A cluster moves without ever being engaged
// by two replicas at once: its holder records it in a claim Lease
// (<ring>-cluster-<hash>) before engaging it and deletes that claim only
// after disengaging it and its reconciles in flight returned; the next
// holder engages it only once it wrote the claim itself, over no claim or
// over the claim of a member whose Lease expired. A replica that cannot
// renew its member Lease within RenewDeadline disengages every cluster,
// before LeaseDuration lets another take them; it then joins again.
//
// Joining or leaving moves about 1/N of the clusters; a replica of
// Config.Weight w is given about w/W of them (W the live members' total).
// The hub's client needs get, list, watch, create, update, patch and delete
// on Leases in Config.Namespace.
type Sharding struct {
	// Client reaches the hub that holds the Leases.
	Client kubernetes.Interface
	// Config is the ring: Ring, Identity, Namespace and Weight, and the
	// member Lease's timings (sharding.Config's defaults). Its Mode and write
	// rates do not apply.
	Config sharding.Config
}

// keeper is a sharded Fleet's member side: it engages the clusters the
// ring gives this replica once it holds their claims.
type keeper struct {
	f      *Fleet
	client kubernetes.Interface
	cfg    sharding.Config
	member *sharding.Member
	kicks  chan struct{}

	mu    sync.Mutex
	known map[string]*offer // the Provider's clusters, by name
	held  map[string]*holding
	// seen is when each member Lease was last seen renewed (the local
	// clock), by Lease name: a member is judged dead only after no renewal
	// of it was seen for LeaseDuration, as client-go's leader election
	// judges a leader, whatever the clocks of the others.
	seen   map[string]observed
	holder string // this process's member holder identity, once joined
	leases informer.Informer[*coordinationv1.Lease]
}

type offer struct {
	ctx  context.Context
	conn Connection
}

// holding is a cluster this replica engaged: with the offer it was engaged
// from, and how to disengage it.
type holding struct {
	offer  *offer
	cancel context.CancelFunc
	done   <-chan struct{}
}

type observed struct {
	holder, renew string
	at            time.Time
}

func newKeeper(f *Fleet, s *Sharding) (*keeper, error) {
	if s.Client == nil {
		return nil, fmt.Errorf("multicluster: %w: Sharding needs the hub's Client", ErrInvalidOptions)
	}
	cfg := s.Config.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("multicluster: Sharding: %w", err)
	}
	m, err := sharding.NewMember(s.Client, cfg, sharding.MemberOptions{Clock: f.clock})
	if err != nil {
		return nil, fmt.Errorf("multicluster: Sharding: %w", err)
	}
	return &keeper{f: f, client: s.Client, cfg: cfg, member: m, kicks: make(chan struct{}, 1),
		known: map[string]*offer{}, held: map[string]*holding{}, seen: map[string]observed{}}, nil
}

func (k *keeper) kick() {
	select {
	case k.kicks <- struct{}{}:
	default:
	}
}

// offer records a cluster the Provider engaged, until ctx ends.
func (k *keeper) offer(ctx context.Context, name string, conn Connection) {
	o := &offer{ctx: ctx, conn: conn}
	k.mu.Lock()
	k.known[name] = o
	k.mu.Unlock()
	context.AfterFunc(ctx, func() {
		k.mu.Lock()
		if k.known[name] == o {
			delete(k.known, name)
		}
		k.mu.Unlock()
		k.kick()
	})
	k.kick()
}

// run keeps this replica a member of the ring until ctx ends, joining again
// after a lost membership.
func (k *keeper) run(ctx context.Context) error {
	logger := k.f.logger.WithValues("ring", k.cfg.Ring, "member", k.cfg.Identity)
	ctx = klog.NewContext(ctx, logger)
	fac := informer.NewFactory(k.client, informer.Options{Namespace: k.cfg.Namespace, Logger: logger})
	defer fac.Shutdown()
	leases, err := informer.For[*coordinationv1.Lease](fac)
	if err != nil {
		return fmt.Errorf("multicluster: Sharding: %w", err)
	}
	k.leases = leases
	reg, err := leases.AddHandler(informer.HandlerFuncs[*coordinationv1.Lease]{
		OnAdd:    func(*coordinationv1.Lease, bool) { k.kick() },
		OnUpdate: func(_, _ *coordinationv1.Lease) { k.kick() },
		OnDelete: func(*coordinationv1.Lease) { k.kick() },
	})
	if err != nil {
		return fmt.Errorf("multicluster: Sharding: %w", err)
	}
	defer func() { _ = leases.RemoveHandler(reg) }()
	fac.Start(ctx)
	for {
		err := k.member.Run(ctx, k.work)
		if ctx.Err() != nil {
			return nil
		}
		var dup *sharding.DuplicateIdentityError
		if errors.As(err, &dup) {
			return fmt.Errorf("multicluster: Sharding: %w", err)
		}
		logger.Info("Left the ring; every cluster was disengaged; joining again", "err", err)
	}
}

// work runs while this replica holds its member Lease.
func (k *keeper) work(ctx context.Context) {
	logger := klog.FromContext(ctx)
	l, err := k.client.CoordinationV1().Leases(k.cfg.Namespace).Get(ctx, k.memberLease(k.cfg.Identity), metav1.GetOptions{})
	if err == nil && holderOf(l) != "" {
		k.mu.Lock()
		k.holder = holderOf(l)
		k.mu.Unlock()
	}
	defer k.leave(logger)
	if err != nil {
		logger.Error(err, "Cannot read the member Lease")
		return
	}
	t := k.f.clock.NewTicker(k.cfg.RetryPeriod)
	defer t.Stop()
	for {
		if err := k.step(ctx); err != nil && ctx.Err() == nil {
			logger.V(2).Info("Assigning clusters failed; retrying", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-k.kicks:
		case <-t.C():
		}
	}
}

// leave disengages every cluster and deletes this replica's claims: the
// member Lease is released (or expires) only after this returned.
func (k *keeper) leave(logger klog.Logger) {
	k.mu.Lock()
	names := slices.Collect(maps.Keys(k.held))
	k.mu.Unlock()
	for _, name := range names {
		k.release(name)
	}
	ctx, cancel := context.WithTimeout(context.Background(), k.cfg.RetryPeriod)
	defer cancel()
	for name, claim := range k.claims() {
		if holderOf(claim) == k.holder {
			if err := k.deleteClaim(ctx, claim); err != nil {
				// It is taken over once the member Lease expired.
				logger.V(2).Info("Cannot delete a claim", "cluster", name, "err", err)
			}
		}
	}
}

// step engages the clusters given to this replica whose claims it can take
// and disengages those given to another.
func (k *keeper) step(ctx context.Context) error {
	ring := sharding.NewWeightedRing(k.cfg.Ring, k.liveMembers())
	claims := k.claims()
	k.mu.Lock()
	names := map[string]bool{}
	for n := range k.known {
		names[n] = true
	}
	for n := range k.held {
		names[n] = true
	}
	k.mu.Unlock()
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(names)) {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		k.mu.Lock()
		off, h := k.known[name], k.held[name]
		k.mu.Unlock()
		claim := claims[name]
		mine := off != nil && ring.Owner(name) == k.cfg.Identity
		ours := claim != nil && holderOf(claim) == k.holder
		switch {
		case !mine:
			if h != nil {
				k.release(name)
			}
			if ours {
				errs = append(errs, k.deleteClaim(ctx, claim))
			}
		case h != nil && h.offer == off:
		case h != nil:
			// Offered again (a rotated credential): the claim stays ours.
			k.release(name)
			errs = append(errs, k.hold(name, off))
		case ours:
			// A claim of ours this replica does not hold: one it wrote and
			// has yet to engage, or one from before it left the ring, which
			// another member may have taken since without this cache having
			// seen it yet (a watch broken by the outage that made it leave).
			// Writing it again, preconditioned on the version read, engages
			// only over the claim as it is on the server.
			if err := k.takeClaim(ctx, claim); err != nil {
				errs = append(errs, err)
				continue
			}
			errs = append(errs, k.hold(name, off))
		case claim == nil:
			if err := k.createClaim(ctx, name); err != nil {
				errs = append(errs, err)
				continue
			}
			errs = append(errs, k.hold(name, off))
		default:
			holder := holderOf(claim)
			if holder != "" && k.alive(ctx, holder) {
				continue // its holder lets it go first
			}
			if err := k.takeClaim(ctx, claim); err != nil {
				errs = append(errs, err)
				continue
			}
			k.mu.Lock()
			o := k.seen[k.memberLease(sharding.IdentityOfHolder(holder))]
			k.mu.Unlock()
			klog.FromContext(ctx).Info("Took over a cluster from a member that left", "cluster", name, "from", holder, "sinceLastRenewalSeen", k.f.clock.Since(o.at))
			errs = append(errs, k.hold(name, off))
		}
	}
	errs = append(errs, k.sweep(ctx, claims, names))
	return errors.Join(errs...)
}

// sweep deletes the claims of clusters no longer offered (not in names)
// whose holder is gone: a member killed while it held a cluster that then
// left the Provider leaves a claim nobody else would delete. A claim of a
// live member stays: that member deletes it when the cluster leaves its
// Provider too.
func (k *keeper) sweep(ctx context.Context, claims map[string]*coordinationv1.Lease, names map[string]bool) error {
	var errs []error
	for cluster, claim := range claims {
		if names[cluster] || ctx.Err() != nil {
			continue
		}
		holder := holderOf(claim)
		if holder != k.holder && holder != "" && k.alive(ctx, holder) {
			continue
		}
		if err := k.deleteClaim(ctx, claim); err != nil {
			errs = append(errs, err)
			continue
		}
		klog.FromContext(ctx).V(2).Info("Deleted the claim of a cluster no longer offered, left by a member that is gone", "cluster", cluster, "holder", holder)
	}
	return errors.Join(errs...)
}

// hold engages a cluster whose claim this replica holds.
func (k *keeper) hold(name string, off *offer) error {
	ctx, cancel := context.WithCancel(off.ctx)
	if err := k.f.engage(ctx, name, off.conn); err != nil {
		cancel()
		return err
	}
	cl, err := k.f.Get(name)
	if err != nil {
		cancel()
		return err
	}
	k.mu.Lock()
	k.held[name] = &holding{offer: off, cancel: cancel, done: cl.done}
	k.mu.Unlock()
	return nil
}

// release disengages a held cluster and waits until its reconciles and
// informers stopped.
func (k *keeper) release(name string) {
	k.mu.Lock()
	h := k.held[name]
	delete(k.held, name)
	k.mu.Unlock()
	if h != nil {
		h.cancel()
		<-h.done
	}
}

// liveMembers returns the identities of the members whose Leases were seen
// renewed within LeaseDuration, with the weights (Config.Weight) their Leases
// publish.
func (k *keeper) liveMembers() map[string]int {
	live := map[string]int{}
	objs, err := k.leases.Lister().List(labels.SelectorFromSet(labels.Set{sharding.RingLabel: k.cfg.Ring}))
	if err != nil {
		return live
	}
	for _, l := range objs {
		if !strings.HasPrefix(l.Name, k.memberLease("")) {
			continue
		}
		if h := k.observe(l); h != "" {
			live[sharding.IdentityOfHolder(h)] = sharding.MemberWeight(l)
		}
	}
	return live
}

// memberLease is the name of identity's member Lease in the ring
// (sharding's <ring>.<identity>).
func (k *keeper) memberLease(identity string) string { return k.cfg.Ring + "." + identity }

// holderOf is l's holder identity, "" when none.
func holderOf(l *coordinationv1.Lease) string {
	if l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// observe records l's renewal and returns its holder when it is alive.
func (k *keeper) observe(l *coordinationv1.Lease) string {
	holder, renew := holderOf(l), ""
	if l.Spec.RenewTime != nil {
		renew = l.Spec.RenewTime.String()
	}
	now := k.f.clock.Now()
	k.mu.Lock()
	defer k.mu.Unlock()
	o, ok := k.seen[l.Name]
	if !ok || o.holder != holder || o.renew != renew {
		o = observed{holder: holder, renew: renew, at: now}
		k.seen[l.Name] = o
	}
	if holder == "" || now.Sub(o.at) > k.cfg.LeaseDuration {
		return ""
	}
	return holder
}

// alive reads holder's member Lease afresh (a cache that lags must not make
// a live member look dead) and reports whether it was seen renewed within
// LeaseDuration.
func (k *keeper) alive(ctx context.Context, holder string) bool {
	l, err := k.client.CoordinationV1().Leases(k.cfg.Namespace).Get(ctx, k.memberLease(sharding.IdentityOfHolder(holder)), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false
	}
	if err != nil {
		return true // not known to be dead
	}
	return k.observe(l) == holder
}

// claims returns the claim Leases of the ring, by cluster.
func (k *keeper) claims() map[string]*coordinationv1.Lease {
	out := map[string]*coordinationv1.Lease{}
	if k.leases == nil {
		return out
	}
	objs, err := k.leases.Lister().List(labels.SelectorFromSet(labels.Set{claimRingLabel: k.cfg.Ring}))
	if err != nil {
		return out
	}
	for _, l := range objs {
		out[l.Annotations[claimClusterAnnotation]] = l
	}
	return out
}

// claimName is the claim Lease's name of cluster.
func (k *keeper) claimName(cluster string) string {
	h := fnv.New64a()
	h.Write([]byte(cluster))
	return k.cfg.Ring + "-cluster-" + strconv.FormatUint(h.Sum64(), 16)
}

func (k *keeper) createClaim(ctx context.Context, cluster string) error {
	holder := k.holder
	_, err := k.client.CoordinationV1().Leases(k.cfg.Namespace).Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: k.claimName(cluster), Namespace: k.cfg.Namespace,
			Labels:      map[string]string{claimRingLabel: k.cfg.Ring},
			Annotations: map[string]string{claimClusterAnnotation: cluster}},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder},
	}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("claiming cluster %q: %w", cluster, err)
	}
	return nil
}

// takeClaim writes this replica's holder over claim, preconditioned on the
// version read: of two takers, one wins.
func (k *keeper) takeClaim(ctx context.Context, claim *coordinationv1.Lease) error {
	c := claim.DeepCopy()
	holder := k.holder
	c.Spec.HolderIdentity = &holder
	if _, err := k.client.CoordinationV1().Leases(k.cfg.Namespace).Update(ctx, c, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("taking over cluster %q: %w", claim.Annotations[claimClusterAnnotation], err)
	}
	return nil
}

func (k *keeper) deleteClaim(ctx context.Context, claim *coordinationv1.Lease) error {
	err := k.client.CoordinationV1().Leases(k.cfg.Namespace).Delete(ctx, claim.Name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &claim.UID, ResourceVersion: &claim.ResourceVersion}})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("releasing cluster %q: %w", claim.Annotations[claimClusterAnnotation], err)
	}
	return nil
}
