package controller

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/klog/v2"
)

// Waiting names what a controller's keys wait for: the keys held back by write fences, with
// their fences, and the keys waiting out a retry backoff. It is for failure messages and
// debugging (testkit.WaitForQuiet prints it when the controllers do not become quiet);
// Stats has the counts and is the cheaper one to poll.
type Waiting struct {
	// Fenced are the keys held back by write fences (counted in Stats.Fenced), ordered by
	// their printed form.
	Fenced []FencedKey
	// Retrying are the keys whose last Reconcile failed and that wait out a backoff or, past
	// their retries, the slow interval (counted in Stats.Retrying and Stats.SlowRetrying),
	// ordered by their printed form.
	Retrying []RetryingKey
}

// FencedKey is a key held until informers show its last Reconcile's writes.
type FencedKey struct {
	// Key is the key, of the controller's key type.
	Key any
	// Fences are the fences it waits for, oldest first.
	Fences []OpenFence
}

// OpenFence is one write fence that has not been released: what the cache must show.
type OpenFence struct {
	// Informer names the informer whose cache must show the write.
	Informer string
	// Object is the written object.
	Object klog.ObjectRef
	// ResourceVersion is the version the write returned ("" after a delete). Unless Gone is
	// set, the cache must show this version or a newer one.
	ResourceVersion string
	// Gone is set when the fence waits for the object's deletion: the write deleted the object
	// (a delete, FenceGone) or removed it (it removed the last finalizer of an object being
	// deleted).
	Gone bool
	// Since is when the fence was recorded, on the controller's clock; it is dropped
	// Fences.TTL after.
	Since time.Time
}

// RetryingKey is a key whose last Reconcile failed, waiting out its backoff or the slow
// interval.
type RetryingKey struct {
	// Key is the key, of the controller's key type.
	Key any
	// Retries is how many times it has been retried so far.
	Retries int
}

// Waiting returns what the controller's keys wait for now. It takes the locks Stats takes and
// allocates per key: call it to explain a wait, not in a polling loop.
func (c *Controller[K]) Waiting() Waiting {
	var w Waiting
	if ft := c.fences.Load(); ft != nil {
		w.Fenced = ft.heldFences()
	}
	q := c.q.Load()
	for k, slow := range c.retries.list() {
		r := RetryingKey{Key: k}
		if q != nil {
			// Past its retries, the limiter's count stays put and the slow
			// retries add up on top of it.
			r.Retries = q.numRequeues(k) + max(slow-1, 0)
		}
		w.Retrying = append(w.Retrying, r)
	}
	slices.SortFunc(w.Retrying, func(a, b RetryingKey) int { return cmp.Compare(fmt.Sprint(a.Key), fmt.Sprint(b.Key)) })
	return w
}

// heldFences lists the held keys with their open fences.
func (ft *fenceTable[K]) heldFences() []FencedKey {
	ft.mu.Lock()
	var out []FencedKey
	for k, kf := range ft.keys {
		if !kf.held {
			continue
		}
		fk := FencedKey{Key: k, Fences: make([]OpenFence, len(kf.fences))}
		for i, f := range kf.fences {
			fk.Fences[i] = OpenFence{Informer: f.ref.t.name, Object: klog.KRef(f.ref.namespace, f.ref.name),
				ResourceVersion: f.rv, Gone: f.kind != versionFence, Since: f.since}
		}
		out = append(out, fk)
	}
	ft.mu.Unlock()
	for _, fk := range out {
		slices.SortStableFunc(fk.Fences, func(a, b OpenFence) int { return a.Since.Compare(b.Since) })
	}
	slices.SortFunc(out, func(a, b FencedKey) int { return cmp.Compare(fmt.Sprint(a.Key), fmt.Sprint(b.Key)) })
	return out
}

// String describes w in one line, sized for a test failure or a log line:
//
//	key ns/a waits for ns/a at resourceVersion 12 or newer in configmaps (fenced since
//	15:04:05.000), key ns/b retrying (3 retries)
func (w Waiting) String() string {
	parts := make([]string, 0, len(w.Fenced)+len(w.Retrying))
	for _, k := range w.Fenced {
		fences := make([]string, len(k.Fences))
		for i, f := range k.Fences {
			fences[i] = f.String()
		}
		parts = append(parts, fmt.Sprintf("key %v waits for %s", k.Key, strings.Join(fences, " and ")))
	}
	for _, k := range w.Retrying {
		parts = append(parts, fmt.Sprintf("key %v retrying (%d retries)", k.Key, k.Retries))
	}
	if len(parts) == 0 {
		return "no key held by a write fence or retrying"
	}
	return strings.Join(parts, ", ")
}

// String describes f: "ns/a at resourceVersion 12 or newer in configmaps (fenced since
// 15:04:05.000)", or "ns/a deleted in configmaps (...)".
func (f OpenFence) String() string {
	want := "at resourceVersion " + f.ResourceVersion + " or newer"
	if f.Gone {
		want = "deleted"
	}
	return fmt.Sprintf("%s %s in %s (fenced since %s)", f.Object, want, f.Informer, f.Since.Format("15:04:05.000"))
}
