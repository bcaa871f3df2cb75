package sharding

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
)

// The sharder's steps of the protocol for one key (docs/design/sharding.md,
// "The protocol"); the term in label_term.go feeds them keys.

// childPatchesInFlight bounds the parallel relabels of one owner's children.
const childPatchesInFlight = 8

// Reasons of a reassignment, the values of the metric's reason label.
const (
	reasonNew     = "new"
	reasonDead    = "dead"
	reasonDrained = "drained"
)

// sync moves one owner key one step through the protocol. It returns a delay
// after which to look again, or an error to retry with backoff.
func (t *term) sync(ctx context.Context, key string) (time.Duration, error) {
	view := t.snapshot()
	// Taken after the view and before the owner are read: children listed
	// after the mark include every child written before either showed a
	// member stopped (a Lease expired, a drain acknowledged). The mark of
	// the event that brought this version of the owner is as good when it
	// is also later than the view (it lets the keys of one burst of
	// handovers share a LIST); an earlier one is not: refresh re-marks the
	// owners after it publishes a view, and a worker may sync a key in
	// between, when the key's mark still predates the member's death.
	var mark uint64
	if t.lists != nil {
		mark = t.lists.observe()
	}
	owner, ok := t.ownerGet(key)
	if !ok {
		t.settle(key)
		t.setRelabelling(key, "")
		t.forgetFence(key)
		return 0, nil
	}
	if behind, err := t.ownerBehind(ctx, key, owner); behind || err != nil {
		return 0, err
	}
	t.mu.Lock()
	if m, ok := t.marks[key]; ok && m.rv == owner.ResourceVersion && m.mark > view.mark {
		mark = m.mark
	}
	t.mu.Unlock()
	labels := owner.GetLabels()
	cur, draining := labels[Label(t.cfg.Ring)], labels[DrainLabel(t.cfg.Ring)] != ""
	// The key is cur's only while it is stamped for the process holding
	// cur's Lease now: a process restarted with cur's identity does not
	// reconcile the keys of its former incarnation (dead, since its Lease
	// has a new holder), which are assigned again like any dead member's.
	holder := owner.GetAnnotations()[HolderAnnotation(t.cfg.Ring)]
	curLive := cur != "" && view.live[cur] != "" && holder == view.live[cur]
	if !curLive && cur != "" {
		// The view comes from a watch, which may lag: before giving a
		// member's keys away without a drain, read its Lease. The verdict
		// is the view after the read, not whether the read changed it:
		// the other worker's read, or the watch, may have refreshed the
		// view since this sync took it.
		read, err := t.readLease(ctx, cur)
		if err != nil {
			return 0, err
		}
		view = t.snapshot()
		curLive = view.live[cur] != "" && holder == view.live[cur]
		if (read || mark <= view.mark) && !curLive && t.lists != nil {
			// Children listed after this mark include every child written
			// before the read, or the view refreshed meanwhile, showed cur
			// stopped.
			mark = t.lists.observe()
		}
	}
	if len(view.live) == 0 {
		return 0, nil // nobody to assign to; a member joining queues every key
	}
	desired := view.ring.Owner(key)
	logger := klog.FromContext(ctx).WithValues("key", key)

	switch {
	case !curLive:
		reason := reasonNew
		t.mu.Lock()
		_, drained := t.drainStart[key]
		t.mu.Unlock()
		switch {
		case cur != "":
			reason = reasonDead
		case drained:
			reason = reasonDrained
		}
		// An owner that had a member (it is labelled, or stamped with a
		// holder) may have children labelled for it: the previous member
		// may have created one just before it stopped, so they are read
		// from the API server, not from a cache that may lag. So may one
		// whose assignment labelled its children and then failed to write
		// it. An owner never assigned has only children without the ring's
		// label, which the sharder caches.
		_, stamped := owner.GetAnnotations()[HolderAnnotation(t.cfg.Ring)]
		t.mu.Lock()
		_, relabelled := t.relabelling[key]
		if d, ok := t.drainStart[key]; ok {
			d.assigning = true
			t.drainStart[key] = d
		}
		t.mu.Unlock()
		fromAPI := cur != "" || stamped || relabelled
		t.setRelabelling(key, desired)
		if err := t.assign(ctx, key, owner, desired, view.live[desired], fromAPI, mark); err != nil {
			return 0, err
		}
		t.setRelabelling(key, "")
		logger.V(2).Info("Assigned", "member", desired, "from", cur, "reason", reason)
		t.metrics.reassigned(t.cfg.Ring, reason)
		t.mu.Lock()
		if d, ok := t.drainStart[key]; ok {
			t.metrics.handover(t.cfg.Ring, t.clock.Since(d.at).Seconds())
		}
		t.mu.Unlock()
		t.settle(key)
		return 0, nil
	case draining:
		// Waiting for cur to acknowledge (also when cur is wanted again: the
		// drain runs to its end, then the key is assigned afresh). A drain
		// this term did not see written (a lost reply, an earlier sharder) is
		// timed from now.
		t.noteDrain(key)
		return 0, nil
	case cur == desired:
		t.mu.Lock()
		d, ok := t.drainStart[key]
		t.mu.Unlock()
		if ok && d.assigning {
			// The assignment was written but its reply lost.
			t.metrics.handover(t.cfg.Ring, t.clock.Since(d.at).Seconds())
		}
		t.settle(key)
		// An assignment to another member that labelled the children for it,
		// then failed to write the owner (cur was live again when looked at
		// next), left them out of this sharder's cache: they are listed.
		t.mu.Lock()
		to, failed := t.relabelling[key]
		t.mu.Unlock()
		fromAPI := failed && to != desired
		if fromAPI && t.lists != nil {
			mark = t.lists.observe()
		}
		err := t.relabelChildren(ctx, owner, desired, nil, fromAPI, mark)
		if err == nil {
			t.setRelabelling(key, "")
		}
		return 0, err
	default:
		out, err := t.w.patch(ctx, t.opts.Resource, owner.Namespace, owner.Name,
			metaPatch(owner.ResourceVersion, map[string]*string{DrainLabel(t.cfg.Ring): ptr("true")}, nil))
		t.wroteOwner(key, owner.ResourceVersion, out, err)
		// Noted even on an error: the write may have been stored and
		// acknowledged before this sharder sees the drain label.
		t.noteDrain(key)
		if err != nil {
			return 0, ignoreNotFound(err)
		}
		logger.V(2).Info("Draining", "member", cur, "to", desired)
		return 0, nil
	}
}

// readLease reads member's Lease from the API server into the sharder's
// view, and reports whether it read. A member whose Lease holder in the
// view is what the last read left there is not read again for
// RetryPeriod, so the keys of a dead member, or of a restarted member's
// former process, cost one read, not one per key.
func (t *term) readLease(ctx context.Context, member string) (read bool, err error) {
	if t.getLease == nil {
		return false, nil
	}
	t.mu.Lock()
	last, ok := t.leaseReads[member]
	t.mu.Unlock()
	if ok && t.clock.Since(last.at) < t.cfg.RetryPeriod && t.snapshot().live[member] == last.holder {
		return false, nil
	}
	lease, err := t.getLease(ctx, memberLeaseName(t.cfg.Ring, member))
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return false, fmt.Errorf("reading the Lease of member %q: %w", member, err)
	default:
		t.live.observe(lease)
		// A change queues every key, this sync's included.
		t.refresh()
	}
	holder := t.snapshot().live[member]
	t.mu.Lock()
	t.leaseReads[member] = leaseRead{at: t.clock.Now(), holder: holder}
	t.mu.Unlock()
	return true, nil
}

// setRelabelling records that key's children may be labelled for member
// by an assignment not known to be stored; "" forgets key.
func (t *term) setRelabelling(key, member string) {
	if len(t.opts.Children) == 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if member == "" {
		delete(t.relabelling, key)
	} else {
		t.relabelling[key] = member
	}
}

// noteDrain records a drain of key, timed from its first note.
func (t *term) noteDrain(key string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.drainStart[key]; !ok {
		t.drainStart[key] = drainRecord{at: t.clock.Now()}
	}
	t.metrics.setDrainsPending(t.cfg.Ring, len(t.drainStart))
}

// settle forgets the per-key state of a key that is assigned or gone.
func (t *term) settle(key string) {
	t.mu.Lock()
	delete(t.drainStart, key)
	delete(t.marks, key)
	t.metrics.setDrainsPending(t.cfg.Ring, len(t.drainStart))
	t.mu.Unlock()
}

// assign relabels owner's children to member, then owner itself (queued as key), stamped for
// member's process holder, with the children barrier, removing any drain
// label. With fromAPI the labelled children are listed after mark.
func (t *term) assign(ctx context.Context, key string, owner *metav1.PartialObjectMetadata, member, holder string, fromAPI bool, mark uint64) error {
	f := barrier{}
	if err := t.relabelChildren(ctx, owner, member, f, fromAPI, mark); err != nil {
		return err
	}
	ann := map[string]*string{HolderAnnotation(t.cfg.Ring): ptr(holder)}
	if len(f) > 0 {
		ann[barrierAnnotation(t.cfg.Ring)] = ptr(f.String())
	} else if _, ok := owner.GetAnnotations()[barrierAnnotation(t.cfg.Ring)]; ok {
		ann[barrierAnnotation(t.cfg.Ring)] = nil
	}
	out, err := t.w.patch(ctx, t.opts.Resource, owner.Namespace, owner.Name, metaPatch(owner.ResourceVersion,
		map[string]*string{Label(t.cfg.Ring): ptr(member), DrainLabel(t.cfg.Ring): nil}, ann))
	t.wroteOwner(key, owner.ResourceVersion, out, err)
	if err = ignoreNotFound(err); err != nil {
		t.dropLists(owner.Namespace) // the children were relabelled: listed versions are stale
	}
	return err
}

// dropLists forgets the children lists of ns.
func (t *term) dropLists(ns string) {
	if t.lists == nil {
		return
	}
	for _, gvr := range t.opts.Children {
		t.lists.drop(gvr, ns)
	}
}

// relabelChildren labels every child of owner for member, each
// preconditioned on the version seen: the cached children without the
// ring's label and, with fromAPI, the labelled children of a LIST started
// after mark; f, when not nil, collects the resourceVersion per resource
// that member's caches must reach. A failed relabel drops the LIST, whose
// versions the relabel may have made stale.
func (t *term) relabelChildren(ctx context.Context, owner *metav1.PartialObjectMetadata, member string, f barrier, fromAPI bool, mark uint64) error {
	children := t.childrenOf(owner.UID)
	if fromAPI && t.lists != nil {
		listed, err := t.lists.children(ctx, t.opts.Children, owner, mark)
		if err != nil {
			return err
		}
		// A child labelled since the stray cache saw it is in both; the
		// listed version is the newer.
		seen := make(map[childKey]bool, len(listed))
		for _, c := range listed {
			seen[keyOf(c)] = true
		}
		for _, c := range children {
			if !seen[keyOf(c)] {
				listed = append(listed, c)
			}
		}
		children = listed
	}
	// The children of one owner are relabelled in parallel, at most
	// childPatchesInFlight at once: an owner with hundreds of Pods is one
	// handover, not hundreds of sequential round trips.
	rvs := make([]string, len(children))
	errs := make([]error, len(children))
	sem := make(chan struct{}, childPatchesInFlight)
	var wg sync.WaitGroup
	for i, c := range children {
		if c.obj.GetLabels()[Label(t.cfg.Ring)] == member {
			rvs[i] = c.obj.ResourceVersion
			continue
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			out, err := t.w.patch(ctx, c.gvr, c.obj.Namespace, c.obj.Name,
				metaPatch(c.obj.ResourceVersion, map[string]*string{Label(t.cfg.Ring): ptr(member)}, nil))
			switch {
			case apierrors.IsNotFound(err):
			case err != nil:
				errs[i] = fmt.Errorf("relabelling %s %s/%s: %w", c.gvr.GroupResource(), c.obj.Namespace, c.obj.Name, err)
			default:
				rvs[i] = out.ResourceVersion
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.dropLists(owner.Namespace)
		return err
	}
	if f != nil {
		for i, c := range children {
			if rvs[i] != "" {
				f.raise(c.gvr.GroupResource().String(), rvs[i])
			}
		}
	}
	return nil
}

type childKey struct {
	gvr       schema.GroupVersionResource
	namespace string
	name      string
}

func keyOf(c child) childKey {
	return childKey{gvr: c.gvr, namespace: c.obj.Namespace, name: c.obj.Name}
}
