package sim

import (
	"cmp"
	"context"
	"slices"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	clienttesting "k8s.io/client-go/testing"

	"github.com/ctrlkit/ctrlkit/testkit/fakecluster"
)

// collector is the world's garbage collector, as kube-controller-manager runs one in every
// cluster: once an object's owners are all gone it deletes the object (background
// propagation), and it acts on the finalizers a deletion's propagation policy set: an owner
// deleted with foregroundDeletion goes once its dependents are gone, one deleted with orphan
// goes once its dependents no longer name it. Without it a controller that leaves owned
// objects to the garbage collector (a ConfigMap owned by a deleted Deployment) would end, in a
// run where it missed the owner's deletion, unlike the reference. Its writes are the world's,
// not the processes'; the trace names it.
type collector struct {
	w   *world
	dyn dynamic.Interface

	mu      sync.Mutex
	pending bool // a pass is scheduled
}

func newCollector(w *world, cluster *fakecluster.Cluster) *collector {
	conn := cluster.Connect()
	conn.SetLatency(latency)
	conn.Observe(func(a clienttesting.Action, obj runtime.Object, err error) {
		w.observe(nil, "garbage collector", a, obj, err)
	})
	return &collector{w: w, dyn: conn.Dynamic()}
}

// schedule runs a pass a moment from now, unless one is due already. It runs on a request's
// path: it must not block.
func (c *collector) schedule() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pending {
		return
	}
	c.pending = true
	c.w.after(gcDelay, c.pass)
}

// gcDelay is how long after a delete the collector looks: kube-controller-manager's reacts to
// the owner's watch event within milliseconds.
const gcDelay = 5 * latency

// dependent is an object with owner references, as a pass sees it.
type dependent struct {
	gvr  schema.GroupVersionResource
	meta metav1.Object
}

// pass deletes what lost its owners and finishes the deletions waiting on dependents.
func (c *collector) pass() {
	c.mu.Lock()
	c.pending = false
	c.mu.Unlock()
	ctx := c.w.ctx
	if ctx.Err() != nil {
		return
	}
	objs := c.w.cluster.Snapshot().Objects()
	alive := map[types.UID]metav1.Object{}
	var deps []dependent
	gvrs := make([]schema.GroupVersionResource, 0, len(objs))
	for gvr := range objs {
		gvrs = append(gvrs, gvr)
	}
	slices.SortFunc(gvrs, func(a, b schema.GroupVersionResource) int { return cmp.Compare(a.String(), b.String()) })
	for _, gvr := range gvrs {
		for _, o := range objs[gvr] {
			m, err := meta.Accessor(o)
			if err != nil {
				continue
			}
			alive[m.GetUID()] = m
			if len(m.GetOwnerReferences()) > 0 {
				deps = append(deps, dependent{gvr: gvr, meta: m})
			}
		}
	}
	dependents := map[types.UID][]dependent{} // by owner
	for _, d := range deps {
		ownersLeft := false
		for _, ref := range d.meta.GetOwnerReferences() {
			owner, ok := alive[ref.UID]
			switch {
			case ok && owner.GetNamespace() != "" && d.meta.GetNamespace() == "":
				// A cluster-scoped object cannot have a namespaced owner: the reference is
				// unresolvable, and the garbage collector leaves the object alone.
				ownersLeft = true
			case ok && (owner.GetNamespace() == "" || owner.GetNamespace() == d.meta.GetNamespace()):
				ownersLeft = true
				dependents[ref.UID] = append(dependents[ref.UID], d)
			}
			// An owner in another namespace is looked up in the dependent's, as absent.
		}
		if !ownersLeft && d.meta.GetDeletionTimestamp() == nil {
			c.delete(ctx, d)
		}
	}
	for _, gvr := range gvrs {
		for _, o := range objs[gvr] {
			m, err := meta.Accessor(o)
			if err != nil || m.GetDeletionTimestamp() == nil {
				continue
			}
			fins := m.GetFinalizers()
			switch {
			case slices.Contains(fins, metav1.FinalizerDeleteDependents):
				if ds := dependents[m.GetUID()]; len(ds) > 0 {
					for _, d := range ds {
						if d.meta.GetDeletionTimestamp() == nil {
							c.delete(ctx, d)
						}
					}
					continue // the owner goes once they are gone (the next pass)
				}
				c.removeFinalizer(ctx, gvr, m, metav1.FinalizerDeleteDependents)
			case slices.Contains(fins, metav1.FinalizerOrphanDependents):
				for _, d := range dependents[m.GetUID()] {
					c.orphan(ctx, d, m.GetUID())
				}
				c.removeFinalizer(ctx, gvr, m, metav1.FinalizerOrphanDependents)
			}
		}
	}
}

func (c *collector) delete(ctx context.Context, d dependent) {
	uid := d.meta.GetUID()
	bg := metav1.DeletePropagationBackground
	err := c.dyn.Resource(d.gvr).Namespace(d.meta.GetNamespace()).Delete(ctx, d.meta.GetName(),
		metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}, PropagationPolicy: &bg})
	c.failed(err)
}

// orphan removes the reference to owner from d.
func (c *collector) orphan(ctx context.Context, d dependent, owner types.UID) {
	c.edit(ctx, d.gvr, d.meta, func(u *unstructured.Unstructured) {
		refs := u.GetOwnerReferences()
		u.SetOwnerReferences(slices.DeleteFunc(refs, func(r metav1.OwnerReference) bool { return r.UID == owner }))
	})
}

func (c *collector) removeFinalizer(ctx context.Context, gvr schema.GroupVersionResource, m metav1.Object, finalizer string) {
	c.edit(ctx, gvr, m, func(u *unstructured.Unstructured) {
		u.SetFinalizers(slices.DeleteFunc(u.GetFinalizers(), func(f string) bool { return f == finalizer }))
	})
}

// edit reads the object, changes it and writes it back, as the garbage collector's patches do;
// a conflict or a vanished object is left to the next pass.
func (c *collector) edit(ctx context.Context, gvr schema.GroupVersionResource, m metav1.Object, change func(*unstructured.Unstructured)) {
	ri := c.dyn.Resource(gvr).Namespace(m.GetNamespace())
	u, err := ri.Get(ctx, m.GetName(), metav1.GetOptions{})
	if err != nil || u.GetUID() != m.GetUID() {
		c.failed(err)
		return
	}
	change(u)
	_, err = ri.Update(ctx, u, metav1.UpdateOptions{})
	c.failed(err)
}

// failed schedules another pass after a conflict, which the next pass reads past; NotFound
// means someone else finished the work, and other errors are not retried (the next write of
// the world schedules a pass anyway).
func (c *collector) failed(err error) {
	if apierrors.IsConflict(err) && c.w.ctx.Err() == nil {
		c.schedule()
	}
}
