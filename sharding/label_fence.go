package sharding

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
)

// The sharder decides on its cache of owners, which lags its own writes. A
// sync that reads an owner older than the sharder's last write of it decides
// on a state the sharder has already replaced, and an assignment made on it
// relabels the children before the owner's precondition fails: the children
// leave the member the newer write gave the owner to, whose barrier has
// already passed, and that member reconciles without them. So each owner
// write fences its key: until the cache holds the written version, a sync of
// the key waits for the owner's event (which queues the key again).

// ownerFence is the sharder's last write of one owner: the version it
// stored or, when the outcome is unknown (a lost reply, a 5xx), the
// version it was preconditioned on.
type ownerFence struct {
	rv      uint64
	unknown bool // rv is the precondition; the write may not be stored
}

// wroteOwner records the outcome of a write of key's owner preconditioned on
// version from.
func (t *term) wroteOwner(key, from string, out *metav1.PartialObjectMetadata, err error) {
	var f ownerFence
	switch {
	case err == nil:
		rv, ok := parseRV(out.ResourceVersion)
		if !ok {
			return
		}
		f = ownerFence{rv: rv}
	case apierrors.IsConflict(err), apierrors.IsNotFound(err):
		return // not stored
	default:
		rv, ok := parseRV(from)
		if !ok {
			return
		}
		f = ownerFence{rv: rv, unknown: true}
	}
	t.mu.Lock()
	t.fences[key] = f
	t.mu.Unlock()
}

// ownerBehind reports whether the cached owner of key is older than the
// sharder's last write of it. An unknown outcome is settled by reading the
// owner from the API server once the cache still shows the version the
// write started from.
func (t *term) ownerBehind(ctx context.Context, key string, owner *metav1.PartialObjectMetadata) (bool, error) {
	t.mu.Lock()
	f, ok := t.fences[key]
	t.mu.Unlock()
	if !ok {
		return false, nil
	}
	cached, ok := parseRV(owner.ResourceVersion)
	if !ok || (f.unknown && cached > f.rv) || (!f.unknown && cached >= f.rv) {
		t.forgetFence(key)
		return false, nil
	}
	if f.unknown {
		if t.getOwner == nil {
			t.forgetFence(key)
			return false, nil
		}
		cur, err := t.getOwner(ctx, owner.Namespace, owner.Name)
		switch {
		case apierrors.IsNotFound(err):
			t.forgetFence(key)
			return true, nil // the cache's deletion queues the key
		case err != nil:
			return false, fmt.Errorf("reading %s %s after a write of unknown outcome: %w", t.opts.Resource.GroupResource(), key, err)
		}
		stored, ok := parseRV(cur.ResourceVersion)
		if !ok || stored <= cached {
			t.forgetFence(key) // not stored
			return false, nil
		}
		f = ownerFence{rv: stored}
		t.mu.Lock()
		t.fences[key] = f
		t.mu.Unlock()
	}
	klog.FromContext(ctx).V(4).Info("Owner's cache is behind the sharder's write; waiting for it",
		"key", key, "cached", cached, "written", f.rv)
	return true, nil
}

func (t *term) forgetFence(key string) {
	t.mu.Lock()
	delete(t.fences, key)
	t.mu.Unlock()
}
