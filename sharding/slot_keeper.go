package sharding

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/ctrlkit/ctrlkit/informer"
)

// SlotKeeper is a member's side of a server-side ring (Config.Mode
// ModeServer). It follows the slots the sharder records in the member's
// Lease and, in this order,
//
//   - stops admitting the keys of a slot taken away (its Dispatcher refuses
//     them from then on) and waits for their reconciles to end;
//   - makes the member's ShardSet select exactly the assigned slots, so the
//     informers following it list and watch them (a slot dropped leaves
//     their caches as out of scope);
//   - once those informers have synced, records the slots it serves in its
//     Lease (ServingAnnotation), preconditioned on the version it read the
//     assignment in, and only then admits the keys of the slots gained.
//
// A slot therefore moves from a live member only after that member recorded
// it no longer serves it: no key is reconciled by two members at once, and
// no object is written.
type SlotKeeper struct {
	cfg    Config
	holder string
	client kubernetes.Interface
	leases leaseClient
	set    *informer.ShardSet
	synced func() bool
	clock  clock.WithTicker
	// metrics, when set, receive ctrlkit_shard_slots.
	metrics *Metrics

	mu sync.Mutex
	// wroteFrom is the resourceVersion of the Lease the last served record
	// was written over: until a newer version is seen, the record stands.
	wroteFrom string
	admitted  slotSet
	inFlight  [Slots]int
	idle      chan struct{} // closed (and replaced) when a slot's last reconcile ends
	listeners map[*int]func(gained slotSet)
}

// SlotKeeperOptions are the optional knobs of NewSlotKeeper.
type SlotKeeperOptions struct {
	// Metrics receive ctrlkit_shard_slots; nil records none.
	Metrics *Metrics
	// Clock paces the checks of the informers' sync. Default: the real
	// clock.
	Clock clock.WithTicker
}

// NewSlotKeeper returns the keeper of member's slots (member's Config.Mode
// must be ModeServer): set is the ShardSet the member's informers follow
// (informer.Options.ShardSet on the member's factory), synced reports whether
// they have all synced (that factory's HasSynced).
func NewSlotKeeper(member *Member, set *informer.ShardSet, synced func() bool, opts SlotKeeperOptions) (*SlotKeeper, error) {
	switch {
	case member == nil:
		return nil, &ConfigError{Field: "member", Rule: "member must not be nil"}
	case member.cfg.Mode != ModeServer:
		return nil, &ConfigError{Field: "mode", Rule: fmt.Sprintf("a SlotKeeper serves a ring in mode %q, not %q", ModeServer, member.cfg.Mode)}
	case set == nil:
		return nil, &ConfigError{Field: "set", Rule: "shard set must not be nil"}
	case synced == nil:
		return nil, &ConfigError{Field: "synced", Rule: "synced function must not be nil"}
	}
	k := &SlotKeeper{
		cfg: member.cfg, holder: member.holder, set: set, synced: synced, clock: opts.Clock, metrics: opts.Metrics,
		idle: make(chan struct{}), listeners: map[*int]func(slotSet){},
	}
	k.client = member.client
	k.leases = member.client.CoordinationV1().Leases(member.cfg.Namespace)
	if k.clock == nil {
		k.clock = clock.RealClock{}
	}
	return k, nil
}

// enter starts a reconcile in slot, if the slot is admitted.
func (k *SlotKeeper) enter(slot int) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	if slot < 0 || !k.admitted.has(slot) {
		return false
	}
	k.inFlight[slot]++
	return true
}

// admittedSlot reports whether slot is admitted.
func (k *SlotKeeper) admittedSlot(slot int) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return slot >= 0 && k.admitted.has(slot)
}

// exit ends a reconcile that enter started.
func (k *SlotKeeper) exit(slot int) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.inFlight[slot]--
	if k.inFlight[slot] == 0 {
		close(k.idle)
		k.idle = make(chan struct{})
	}
}

// onGained registers fn, called with the slots admitted each time some
// are, until the returned function is called.
func (k *SlotKeeper) onGained(fn func(gained slotSet)) (unsubscribe func()) {
	k.mu.Lock()
	defer k.mu.Unlock()
	id := new(int)
	k.listeners[id] = fn
	return func() {
		k.mu.Lock()
		defer k.mu.Unlock()
		delete(k.listeners, id)
	}
}

// admittedSlots returns the slots admitted now.
func (k *SlotKeeper) admittedSlots() slotSet {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.admitted
}

// Run follows the member's Lease until ctx ends; run it while the member
// holds its Lease (a Group's runnable), alongside the informers that follow
// set. It admits nothing before its first record is written, and nothing
// after it returns.
func (k *SlotKeeper) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx).WithValues("ring", k.cfg.Ring, "member", k.cfg.Identity)
	ctx = klog.NewContext(ctx, logger)
	name := memberLeaseName(k.cfg.Ring, k.cfg.Identity)
	defer func() {
		k.mu.Lock()
		k.admitted = 0
		k.mu.Unlock()
		k.metrics.setSlots(k.cfg.Ring, k.cfg.Identity, 0)
	}()

	// The member's own Lease, watched: every renewal and every write of the
	// sharder wakes the loop.
	wake := make(chan struct{}, 1)
	poke := func() {
		select {
		case wake <- struct{}{}:
		default:
		}
	}
	f := informer.NewFactory(k.client, informer.Options{Namespace: k.cfg.Namespace, Logger: logger})
	defer f.Shutdown()
	inf, err := informer.For(f, informer.WithFieldSelector[*coordinationv1.Lease]("metadata.name="+name))
	if err != nil {
		return fmt.Errorf("sharding: ring %q: member Lease informer: %w", k.cfg.Ring, err)
	}
	if _, err := inf.AddHandler(informer.HandlerFuncs[*coordinationv1.Lease]{
		OnAdd:    func(*coordinationv1.Lease, bool) { poke() },
		OnUpdate: func(_, _ *coordinationv1.Lease) { poke() },
	}); err != nil {
		return fmt.Errorf("sharding: ring %q: member Lease informer: %w", k.cfg.Ring, err)
	}
	f.Start(ctx)
	// Sync progress is not an event: it is polled while the member does not
	// serve all it is assigned (or a write failed).
	tick := k.clock.NewTicker(syncPoll)
	defer tick.Stop()
	for {
		settled := false
		if l, err := inf.Lister().Namespace(k.cfg.Namespace).Get(name); err == nil {
			var err error
			switch settled, err = k.step(ctx, l); {
			case err == nil || ctx.Err() != nil:
			case apierrors.IsConflict(err):
				// A renewal or the sharder wrote first: the next version comes.
				logger.V(2).Info("Cannot record the served slots yet", "reason", err.Error())
			default:
				logger.Error(err, "Cannot record the served slots")
			}
		}
		var poll <-chan time.Time
		if !settled {
			poll = tick.C()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-wake:
		case <-poll:
		}
	}
}

// syncPoll is how often the keeper looks at the informers' sync.
const syncPoll = 100 * time.Millisecond

// step moves the member one step towards the slots assigned in l, and
// reports whether it serves them all.
func (k *SlotKeeper) step(ctx context.Context, l *coordinationv1.Lease) (bool, error) {
	assigned, err := parseRecord(l.Annotations[SlotsAnnotation(k.cfg.Ring)])
	if err != nil || assigned.holder != k.holder {
		assigned = slotRecord{holder: k.holder} // written for another process: nothing is ours
	}
	want := assigned.slots

	// 1. Stop admitting what is no longer assigned, and let it finish.
	k.mu.Lock()
	dropping := k.admitted &^ want
	k.admitted &= want
	k.mu.Unlock()
	if dropping != 0 {
		klog.FromContext(ctx).V(2).Info("Dropping slots", "slots", dropping.String())
		if err := k.waitIdle(ctx, dropping); err != nil {
			return false, err
		}
	}
	// 2. The informers select exactly the assigned slots.
	if err := k.set.Set(want.selectors(k.cfg.HashField)...); err != nil {
		return false, err // not expected: the selectors are built here
	}
	// 3. Served: what is admitted, and once the informers have synced, all
	// that is assigned.
	k.mu.Lock()
	ready := k.admitted
	k.mu.Unlock()
	if k.synced() {
		ready = want
	}
	served, _ := parseRecord(l.Annotations[ServingAnnotation(k.cfg.Ring)])
	k.mu.Lock()
	if l.ResourceVersion == k.wroteFrom {
		served = slotRecord{holder: k.holder, slots: k.admitted}
	}
	k.mu.Unlock()
	if served.holder != k.holder || served.slots != ready {
		rec := slotRecord{holder: k.holder, slots: ready}
		// Preconditioned on the version the assignment was read in: a
		// record for slots the sharder has since taken away is refused.
		if _, err := k.leases.Patch(ctx, l.Name, types.MergePatchType,
			metaPatch(l.ResourceVersion, nil, map[string]*string{ServingAnnotation(k.cfg.Ring): ptr(rec.String())}), metav1.PatchOptions{}); err != nil {
			if apierrors.IsConflict(err) {
				return false, fmt.Errorf("Lease changed since it was read: %w", err)
			}
			return false, fmt.Errorf("record served slots %s: %w", ready, err)
		}
		klog.FromContext(ctx).V(2).Info("Serving slots", "slots", ready.String())
		k.mu.Lock()
		k.wroteFrom = l.ResourceVersion
		k.mu.Unlock()
	}
	// 4. Admit the slots gained, now that the record says so.
	k.mu.Lock()
	gained := ready &^ k.admitted
	k.admitted = ready
	listeners := slices.Collect(maps.Values(k.listeners))
	k.mu.Unlock()
	k.metrics.setSlots(k.cfg.Ring, k.cfg.Identity, ready.len())
	if gained != 0 {
		for _, fn := range listeners {
			fn(gained)
		}
	}
	return ready == want, nil
}

// waitIdle waits until no reconcile runs in slots.
func (k *SlotKeeper) waitIdle(ctx context.Context, slots slotSet) error {
	for {
		k.mu.Lock()
		busy := false
		for _, s := range slots.each() {
			busy = busy || k.inFlight[s] > 0
		}
		idle := k.idle
		k.mu.Unlock()
		if !busy {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-idle:
		}
	}
}
