package fakecluster

import (
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// delete removes an object (or, when it has finalizers, marks it deleted), after checking the
// UID and resourceVersion preconditions.
func (c *Cluster) delete(gvr schema.GroupVersionResource, ns, name string, opts metav1.DeleteOptions) error {
	c.store.mu.Lock()
	defer c.store.mu.Unlock()
	stored, ok := c.store.getLocked(gvr, ns, name)
	if !ok {
		return apierrors.NewNotFound(gvr.GroupResource(), name)
	}
	if pre := opts.Preconditions; pre != nil {
		sm, _ := meta.Accessor(stored)
		if pre.UID != nil && *pre.UID != sm.GetUID() {
			return apierrors.NewConflict(gvr.GroupResource(), name,
				fmt.Errorf("Precondition failed: UID in precondition: %s, UID in object meta: %s", *pre.UID, sm.GetUID()))
		}
		if pre.ResourceVersion != nil && *pre.ResourceVersion != sm.GetResourceVersion() {
			return apierrors.NewConflict(gvr.GroupResource(), name,
				fmt.Errorf("Precondition failed: ResourceVersion in precondition: %s, ResourceVersion in object meta: %s", *pre.ResourceVersion, sm.GetResourceVersion()))
		}
	}
	return c.deleteOrMarkLocked(gvr, stored, opts)
}

// deleteOrMarkLocked deletes stored at once unless it has finalizers once the propagation
// policy's are set: then, as an API server does, it only marks the object (deletionTimestamp,
// once) and the object goes when an update removes its last finalizer.
func (c *Cluster) deleteOrMarkLocked(gvr schema.GroupVersionResource, stored runtime.Object, opts metav1.DeleteOptions) error {
	sm, _ := meta.Accessor(stored)
	finalizers := propagationFinalizers(sm.GetFinalizers(), opts)
	if len(finalizers) == 0 {
		if gvr.Group == "" && gvr.Resource == "pods" && sm.GetDeletionTimestamp() == nil {
			// Pods are deleted gracefully: kube-apiserver writes the deletionTimestamp first
			// (a grace period of 0 for a Pod on no node, as here: there is no kubelet), then
			// deletes, so watchers see the Pod marked, then gone.
			if err := c.store.putLocked(gvr, c.markDeleting(stored), false); err != nil {
				return err
			}
		}
		_, err := c.store.deleteLocked(gvr, sm.GetNamespace(), sm.GetName())
		return err
	}
	marked := c.markDeleting(stored)
	mm, _ := meta.Accessor(marked)
	mm.SetFinalizers(finalizers)
	if equality.Semantic.DeepEqual(stored, marked) {
		return nil // already being deleted, with the same finalizers: nothing is written
	}
	return c.store.putLocked(gvr, marked, false)
}

// markDeleting returns a copy of stored marked for deletion: deletionTimestamp set once (and,
// as kube-apiserver's rest.BeforeDelete does, generation bumped with it: the deletion is a
// change of the object's desired state, so a controller filtering on generation sees it), and a
// grace period of 0.
func (c *Cluster) markDeleting(stored runtime.Object) runtime.Object {
	marked := stored.DeepCopyObject()
	mm, _ := meta.Accessor(marked)
	if mm.GetDeletionTimestamp() == nil {
		now := metav1.NewTime(c.clock.Now().Truncate(time.Second))
		mm.SetDeletionTimestamp(&now)
		if g := mm.GetGeneration(); g > 0 {
			mm.SetGeneration(g + 1)
		}
	}
	mm.SetDeletionGracePeriodSeconds(new(int64))
	return marked
}

// propagationFinalizers are the finalizers an object has once a delete with opts asks for its
// dependents to be orphaned ("orphan") or deleted first ("foregroundDeletion"), as the API
// server sets them for the garbage collector. The cluster has no garbage collector: like a
// kube-apiserver without kube-controller-manager, such an object stays, being deleted, until a
// test removes the finalizer.
func propagationFinalizers(current []string, opts metav1.DeleteOptions) []string {
	orphan := slices.Contains(current, metav1.FinalizerOrphanDependents)
	foreground := slices.Contains(current, metav1.FinalizerDeleteDependents)
	switch {
	case opts.OrphanDependents != nil: //nolint:staticcheck // honoured as the API server does
		orphan, foreground = *opts.OrphanDependents, false //nolint:staticcheck
	case opts.PropagationPolicy != nil:
		orphan = *opts.PropagationPolicy == metav1.DeletePropagationOrphan
		foreground = *opts.PropagationPolicy == metav1.DeletePropagationForeground
	}
	out := make([]string, 0, len(current)+1)
	for _, f := range current {
		if f != metav1.FinalizerOrphanDependents && f != metav1.FinalizerDeleteDependents {
			out = append(out, f)
		}
	}
	if orphan {
		out = append(out, metav1.FinalizerOrphanDependents)
	}
	if foreground {
		out = append(out, metav1.FinalizerDeleteDependents)
	}
	if slices.Equal(slices.Sorted(slices.Values(out)), slices.Sorted(slices.Values(current))) {
		return current
	}
	return out
}

func (c *Cluster) deleteCollection(gvr schema.GroupVersionResource, ns string, opts metav1.ListOptions, del metav1.DeleteOptions) error {
	sel, err := newSelector(opts)
	if err != nil {
		return err
	}
	c.store.mu.Lock()
	defer c.store.mu.Unlock()
	var doomed []runtime.Object
	for _, obj := range c.store.objects[gvr] {
		if sel.matches(obj, ns) {
			doomed = append(doomed, obj)
		}
	}
	sortObjects(doomed)
	for _, obj := range doomed {
		if err := c.deleteOrMarkLocked(gvr, obj, del); err != nil {
			return err
		}
	}
	return nil
}
