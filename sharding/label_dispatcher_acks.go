package sharding

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/cache"
	kworkqueue "k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
)

// requestAck asks for the drain of k to be acknowledged. d.mu is held.
func (d *labelDispatcher[K]) requestAck(k string) {
	if d.acks != nil {
		d.acks.Add(k)
		return
	}
	d.pendingAcks[k] = true
}

// processAck acknowledges the next drain of acks; false once acks shut down.
func (d *labelDispatcher[K]) processAck(ctx context.Context, acks kworkqueue.TypedRateLimitingInterface[string]) bool {
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
func (d *labelDispatcher[K]) ack(ctx context.Context, k string) error {
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
