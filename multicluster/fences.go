package multicluster

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ctrlkit/ctrlkit/controller"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/internal/fencehook"
)

// With controller.Options.Fences.Auto, a write a Reconcile makes through a
// ctrlkit client holds its key until the informer of the written type in the
// key's cluster shows it, as a single-cluster controller's key waits for its
// own informer. The controller's fence table holds the fences
// (controller.Fence on the cluster's informer) and forgets them when the
// cluster's watches end. A write of a resource no Watch or Owns built in the
// cluster is not fenced: nothing in the cluster would show it, and the hub's
// informer of that resource would hold the key until the fence's TTL (name an
// informer with controller.Fence for such writes). Writes are matched to
// informers by resource (group and resource), not Go type, so that informers
// of unstructured or metadata-only objects of different resources stay
// apart.

// fencer fences a write (or, gone, a delete) of obj on one informer.
type fencer func(ctx context.Context, obj metav1.Object, gone bool)

// fenceOn records inf, built in cl by a Watch or Owns, as where writes of its
// resource in cl are fenced.
func fenceOn[T informer.Object](cl *Cluster, inf informer.Informer[T]) {
	cl.fenceMu.Lock()
	defer cl.fenceMu.Unlock()
	if cl.fencers == nil {
		cl.fencers = map[schema.GroupResource]fencer{}
	}
	cl.fencers[inf.GVR().GroupResource()] = func(ctx context.Context, obj metav1.Object, gone bool) {
		if gone {
			controller.FenceGone(ctx, inf, obj)
			return
		}
		controller.Fence(ctx, inf, obj)
	}
}

func (c *Cluster) fencer(gr schema.GroupResource) fencer {
	c.fenceMu.Lock()
	defer c.fenceMu.Unlock()
	return c.fencers[gr]
}

// fenceIn returns ctx with a recorder that fences key's writes on its
// cluster's informers, when the controller records fences for the key.
func (a *admission) fenceIn(ctx context.Context, key Key) context.Context {
	if fencehook.From(ctx) == nil {
		return ctx
	}
	a.mu.Lock()
	cl := a.in[key]
	a.mu.Unlock()
	if cl == nil {
		return ctx
	}
	return fencehook.With(ctx, &clusterFencer{ctx: ctx, cl: cl})
}

// clusterFencer is the fencehook.Recorder of one Reconcile of a
// multicluster controller with Fences.Auto.
type clusterFencer struct {
	ctx context.Context // the Reconcile's, with the controller's recorder
	cl  *Cluster
}

func (f *clusterFencer) Written(gr schema.GroupResource, obj metav1.Object) {
	if fn := f.cl.fencer(gr); fn != nil {
		fn(f.ctx, obj, false)
	}
}

func (f *clusterFencer) Deleted(gr schema.GroupResource, namespace, name string) {
	if fn := f.cl.fencer(gr); fn != nil {
		fn(f.ctx, &metav1.ObjectMeta{Namespace: namespace, Name: name}, true)
	}
}
