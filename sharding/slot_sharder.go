package sharding

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/ctrlkit/ctrlkit/informer"
)

// slotTerm is a sharder's term in server-side mode. It writes no object:
// each live member's slots go in the member's Lease (SlotsAnnotation), and a
// slot moves from a live member only once that member's Lease no longer
// records it as served (ServingAnnotation), the drain of label mode per slot.
type slotTerm struct {
	cfg     Config
	leases  leaseClient
	clock   clock.PassiveClock
	live    *liveness
	metrics *Metrics
	// cached returns the ring's member Leases as the term's informer holds
	// them, by identity.
	cached func() map[string]*coordinationv1.Lease
	// reads is when each non-live member's Lease was last read from the
	// API server: its slots are free only after a read that still finds
	// it dead (the cache may lag behind a renewal).
	reads map[string]time.Time
}

// leaseClient is what a slotTerm and a SlotKeeper do with member Leases.
type leaseClient interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*coordinationv1.Lease, error)
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (*coordinationv1.Lease, error)
}

// leadSlots runs a server-side term until ctx ends.
func (s *Sharder) leadSlots(ctx context.Context) {
	logger := klog.FromContext(ctx)
	factory := informer.NewFactory(s.client, informer.Options{Namespace: s.cfg.Namespace, Logger: logger})
	defer factory.Shutdown()
	inf, err := informer.For(factory, informer.WithLabelSelector[*coordinationv1.Lease](RingLabel+"="+s.cfg.Ring))
	if err != nil {
		logger.Error(err, "Cannot shard")
		<-ctx.Done()
		return
	}
	t := &slotTerm{
		cfg: s.cfg, leases: s.client.CoordinationV1().Leases(s.cfg.Namespace), clock: s.clock,
		live: newLiveness(s.cfg.Ring, s.cfg.LeaseDuration, s.clock), metrics: s.opts.Metrics, reads: map[string]time.Time{},
		cached: func() map[string]*coordinationv1.Lease {
			out := map[string]*coordinationv1.Lease{}
			for _, obj := range inf.Informer().GetStore().List() {
				if l, ok := obj.(*coordinationv1.Lease); ok {
					if id, ok := identityOf(s.cfg.Ring, l.Name); ok {
						out[id] = l
					}
				}
			}
			return out
		},
	}
	wake := make(chan struct{}, 1)
	poke := func() {
		select {
		case wake <- struct{}{}:
		default:
		}
	}
	if _, err := inf.AddHandler(informer.HandlerFuncs[*coordinationv1.Lease]{
		OnAdd:    func(l *coordinationv1.Lease, _ bool) { t.live.observe(l); poke() },
		OnUpdate: func(_, l *coordinationv1.Lease) { t.live.observe(l); poke() },
		OnDelete: func(l *coordinationv1.Lease) { t.live.forget(l); poke() },
	}); err != nil {
		logger.Error(err, "Cannot shard")
		<-ctx.Done()
		return
	}
	factory.Start(ctx)
	if err := factory.WaitForCacheSync(ctx); err != nil {
		return // ctx ended
	}
	// The view changes with time too (a member unrenewed for LeaseDuration
	// is dead), not only with events.
	tick := s.clock.NewTicker(s.cfg.RetryPeriod)
	defer tick.Stop()
	for {
		t.round(ctx)
		select {
		case <-ctx.Done():
			return
		case <-wake:
		case <-tick.C():
		}
	}
}

// memberView is one member Lease as a round reads it.
type memberView struct {
	lease            *coordinationv1.Lease
	holder           string     // the Lease's holder
	assigned, served slotRecord // the annotations as written
}

func viewOf(ring string, l *coordinationv1.Lease) memberView {
	v := memberView{lease: l}
	if l.Spec.HolderIdentity != nil {
		v.holder = *l.Spec.HolderIdentity
	}
	// An annotation that does not parse counts as empty: the sharder
	// rewrites its own, and a member rewrites its record once it runs.
	v.assigned, _ = parseRecord(l.Annotations[SlotsAnnotation(ring)])
	v.served, _ = parseRecord(l.Annotations[ServingAnnotation(ring)])
	return v
}

// claims are the slots the member may reconcile now or soon: those assigned
// to its current process and those it records as served. Records written
// for another process of the identity are void.
func (v memberView) claims() slotSet {
	var s slotSet
	if v.assigned.holder == v.holder {
		s |= v.assigned.slots
	}
	if v.served.holder == v.holder {
		s |= v.served.slots
	}
	return s
}

// round reads the view once and writes what it allows: slots leave their
// live members at once, reach their new member only when no other member
// claims them, and a dead member's claims are void only once a read of its
// Lease from the API server still finds it dead (its records are then
// cleared, so that the process, should it renew again, finds nothing).
func (t *slotTerm) round(ctx context.Context) {
	logger := klog.FromContext(ctx)
	holders := t.live.holders()
	leases := t.cached()
	views := map[string]memberView{}
	current := map[string]slotSet{}
	var unconfirmed slotSet // the records of members that look dead, not yet confirmed
	for id, l := range leases {
		v := viewOf(t.cfg.Ring, l)
		if h, ok := holders[id]; ok && h == v.holder {
			views[id] = v
			if v.assigned.holder == v.holder {
				current[id] = v.assigned.slots
			}
			continue
		}
		if v.assigned.slots|v.served.slots == 0 {
			continue
		}
		// Dead in this view, with records: confirm, then clear.
		if err := t.confirmDead(ctx, id, l); err != nil {
			unconfirmed |= v.assigned.slots | v.served.slots
			logger.V(2).Info("Slots of a member not yet free", "member", id, "reason", err.Error())
		}
	}
	live := slices.Sorted(maps.Keys(views))
	target := balanceSlots(current, live, t.live.weights(holders))
	// claims are what each live member may reconcile now or soon, including
	// what this round gives it.
	claims := map[string]slotSet{}
	for _, id := range live {
		claims[id] = views[id].claims()
	}
	// Additions are decided on the members' records read from the API
	// server, not from the cache: a write of this term whose reply was lost
	// may be stored and not cached yet, and the slot it gave would look free.
	reread := false
	for _, id := range live {
		v := views[id]
		have := current[id]
		others := func() slotSet {
			others := unconfirmed
			for _, x := range live {
				if x != id {
					others |= claims[x]
				}
			}
			return others
		}
		if target[id]&^have&^others() != 0 && !reread {
			reread = true
			if err := t.reread(ctx, live, claims); err != nil {
				logger.V(2).Info("Cannot read the member Leases; slots are not given this round", "reason", err.Error())
				unconfirmed = ^slotSet(0) // removals only
			}
		}
		// Slots leave at once; they arrive only when no one else claims them.
		want := have&target[id] | (target[id] &^ have &^ others())
		if want == have && v.assigned.holder == v.holder {
			continue
		}
		rec := slotRecord{holder: v.holder, slots: want}
		_, err := t.leases.Patch(ctx, v.lease.Name, types.MergePatchType,
			metaPatch(v.lease.ResourceVersion, nil, map[string]*string{SlotsAnnotation(t.cfg.Ring): ptr(rec.String())}), metav1.PatchOptions{})
		if err != nil {
			// A Conflict is the member's renewal: the informer brings the
			// new version and the next round writes again.
			if !apierrors.IsConflict(err) {
				logger.Error(err, "Cannot write a member's slots", "member", id, "slots", rec.slots.String())
			}
			continue
		}
		logger.V(2).Info("Assigned slots", "member", id, "slots", want.String(), "added", (want &^ have).String(), "removed", (have &^ want).String())
		claims[id] |= want
	}
	t.metrics.setMembers(t.cfg.Ring, len(live))
}

// reread reads the Leases of the live members from the API server and adds
// the slots they claim there to claims.
func (t *slotTerm) reread(ctx context.Context, live []string, claims map[string]slotSet) error {
	for _, id := range live {
		l, err := t.leases.Get(ctx, memberLeaseName(t.cfg.Ring, id), metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("read Lease of %s: %w", id, err)
		}
		t.live.observe(l)
		claims[id] |= viewOf(t.cfg.Ring, l).claims()
	}
	return nil
}

// confirmDead reads a member Lease that looks dead, and clears its slot
// records when the read agrees; nil means its slots are free.
func (t *slotTerm) confirmDead(ctx context.Context, id string, cached *coordinationv1.Lease) error {
	l := cached
	if at, ok := t.reads[id]; !ok || t.clock.Since(at) >= t.cfg.RetryPeriod {
		got, err := t.leases.Get(ctx, cached.Name, metav1.GetOptions{})
		if err != nil {
			if apierrors.IsNotFound(err) {
				return nil // deleted: nothing left to clear, and its member is not renewing
			}
			return fmt.Errorf("read Lease %s: %w", cached.Name, err)
		}
		t.reads[id] = t.clock.Now()
		t.live.observe(got)
		l = got
	}
	if _, ok := t.live.holders()[id]; ok {
		return fmt.Errorf("renewed again")
	}
	v := viewOf(t.cfg.Ring, l)
	if v.assigned.slots|v.served.slots == 0 {
		return nil
	}
	_, err := t.leases.Patch(ctx, l.Name, types.MergePatchType, metaPatch(l.ResourceVersion, nil, map[string]*string{
		SlotsAnnotation(t.cfg.Ring): nil, ServingAnnotation(t.cfg.Ring): nil,
	}), metav1.PatchOptions{})
	if err != nil {
		return fmt.Errorf("clear the slot records of Lease %s: %w", l.Name, err)
	}
	klog.FromContext(ctx).Info("Freed the slots of a dead member", "member", id, "slots", (v.assigned.slots | v.served.slots).String())
	return nil
}
