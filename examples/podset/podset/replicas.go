package podset

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/ctrlkit/ctrlkit/client"
	"github.com/ctrlkit/ctrlkit/examples/podset/api/v1alpha1"
	"github.com/ctrlkit/ctrlkit/ownerref"
	"github.com/ctrlkit/ctrlkit/replicas"
)

// replicaError is a failed create or delete; its reason becomes the ReplicaFailure condition's.
type replicaError struct {
	reason string // ReasonFailedCreate or ReasonFailedDelete
	err    error
}

func (e *replicaError) Error() string { return e.err.Error() }
func (e *replicaError) Unwrap() error { return e.err }

// manageReplicas creates or deletes Pods so that len(pods) moves to spec.replicas, at most
// BurstReplicas at a time. Before any write it records what the Pod informer should observe
// (expectations), so that the next Reconcile waits for the cache instead of acting on a count
// that does not include these writes yet — the one thing that keeps a slow watch from causing
// duplicate Pods. As kube-controller-manager's ReplicaSet controller does, creates go in
// slow-start batches (a quota that refuses every Pod costs one request, not hundreds) and
// deletes all at once.
func (c *Controller) manageReplicas(ctx context.Context, ps *v1alpha1.PodSet, pods []*corev1.Pod) error {
	logger := klog.FromContext(ctx)
	desired := int(ps.Spec.DesiredReplicas())
	diff := len(pods) - desired
	if diff != 0 {
		// A cache can lag (a restart onto a lagging API server) and then replay the versions
		// it missed: scaling to each of them created and deleted Pods for nothing. Only the
		// API server's current spec is acted on (its generation: this controller's own status
		// writes change the resourceVersion, not the spec); a newer one's event brings the key
		// back.
		live, err := c.crs.Get(ctx, ps.Namespace, ps.Name, metav1.GetOptions{})
		if err != nil {
			return client.IgnoreNotFound(err)
		}
		if live.Generation != ps.Generation {
			logger.V(2).Info("The cached PodSet's spec is not the API server's; waiting for the cache", "cached", ps.Generation, "live", live.Generation)
			return nil
		}
	}
	switch {
	case diff < 0:
		n := min(-diff, c.burst)
		logger.V(1).Info("Too few Pods; creating", "want", desired, "have", len(pods), "creating", n)
		c.exp.ExpectCreations(ps.UID, n)
		created, err := replicas.SlowStartBatch(ctx, n, replicas.SlowStartInitialBatchSize, func() error { return c.createPod(ctx, ps) })
		// Creations that failed or were never attempted will never be observed.
		if skipped := n - created; skipped > 0 {
			c.exp.LowerExpectations(ps.UID, skipped, 0)
		}
		if err != nil {
			return &replicaError{reason: ReasonFailedCreate, err: err}
		}
	case diff > 0:
		n := min(diff, c.burst)
		// A PodSet has no parent whose other children could crowd a node: its own Pods are
		// the related ones, so a scale-down thins out the nodes holding most of them.
		victims := replicas.PodsToDelete(pods, pods, n, c.clock.Now())
		logger.V(1).Info("Too many Pods; deleting", "want", desired, "have", len(pods), "deleting", n)
		uids := make([]types.UID, len(victims))
		for i, p := range victims {
			uids[i] = p.UID
		}
		c.exp.ExpectDeletions(ps.UID, uids)
		if err := replicas.InParallel(victims, 0, func(p *corev1.Pod) error { return c.deletePodOf(ctx, ps, p) }); err != nil {
			return &replicaError{reason: ReasonFailedDelete, err: err}
		}
	}
	return nil
}

// createPod creates one Pod from the template, controlled by ps.
func (c *Controller) createPod(ctx context.Context, ps *v1alpha1.PodSet) error {
	pod, err := c.client.CoreV1().Pods(ps.Namespace).Create(ctx, newPod(ps), metav1.CreateOptions{})
	if err != nil {
		c.recorder.Eventf(ps, corev1.EventTypeWarning, ReasonFailedCreate, "Error creating: %v", err)
		return fmt.Errorf("creating a pod for %s/%s: %w", ps.Namespace, ps.Name, err)
	}
	klog.FromContext(ctx).V(2).Info("Created pod", "pod", klog.KObj(pod))
	c.recorder.Eventf(ps, corev1.EventTypeNormal, ReasonSuccessfulCreate, "Created pod: %s", pod.Name)
	return nil
}

// deletePodOf deletes one of ps's Pods. A Pod already gone is fine, but its deletion will not
// be observed any more, so the expectation is lowered here; so it is for any failure.
func (c *Controller) deletePodOf(ctx context.Context, ps *v1alpha1.PodSet, pod *corev1.Pod) error {
	err := c.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name,
		metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &pod.UID}})
	if err != nil {
		c.exp.DeletionObserved(ps.UID, pod.UID)
		if apierrors.IsNotFound(err) {
			return nil
		}
		c.recorder.Eventf(ps, corev1.EventTypeWarning, ReasonFailedDelete, "Error deleting: %v", err)
		return fmt.Errorf("deleting pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	klog.FromContext(ctx).V(2).Info("Deleted pod", "pod", klog.KObj(pod))
	c.recorder.Eventf(ps, corev1.EventTypeNormal, ReasonSuccessfulDelete, "Deleted pod: %s", pod.Name)
	return nil
}

// newPod is the Pod stamped from ps's template: a generated name prefixed with the PodSet's,
// the template's metadata, and a controller reference with blockOwnerDeletion, so that the
// garbage collector deletes it with the PodSet (and a foreground deletion of the PodSet waits
// for it).
func newPod(ps *v1alpha1.PodSet) *corev1.Pod {
	t := ps.Spec.Template.DeepCopy()
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName:    ps.Name + "-",
			Namespace:       ps.Namespace,
			Labels:          t.Labels,
			Annotations:     t.Annotations,
			Finalizers:      t.Finalizers,
			OwnerReferences: []metav1.OwnerReference{*ownerref.NewControllerRef(ps, v1alpha1.GVK)},
		},
		Spec: t.Spec,
	}
}

// isReady reports whether the Pod's Ready condition is True.
func isReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
