package podset

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/ctrlkit/ctrlkit/examples/podset/api/v1alpha1"
	"github.com/ctrlkit/ctrlkit/ownerref"
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
// duplicate Pods.
func (c *Controller) manageReplicas(ctx context.Context, ps *v1alpha1.PodSet, pods []*corev1.Pod) error {
	logger := klog.FromContext(ctx)
	desired := int(ps.Spec.DesiredReplicas())
	diff := len(pods) - desired
	switch {
	case diff < 0:
		n := min(-diff, c.burst)
		logger.V(1).Info("Too few Pods; creating", "want", desired, "have", len(pods), "creating", n)
		c.exp.ExpectCreations(ps.UID, n)
		created, err := slowStartBatch(n, func() error { return c.createPod(ctx, ps) })
		// Creations that failed or were never attempted will never be observed.
		for range n - created {
			c.exp.CreationObserved(ps.UID)
		}
		if err != nil {
			return &replicaError{reason: ReasonFailedCreate, err: err}
		}
	case diff > 0:
		n := min(diff, c.burst)
		victims := podsToDelete(pods, n)
		logger.V(1).Info("Too many Pods; deleting", "want", desired, "have", len(pods), "deleting", n)
		uids := make([]types.UID, len(victims))
		for i, p := range victims {
			uids[i] = p.UID
		}
		c.exp.ExpectDeletions(ps.UID, uids)
		errs := make([]error, len(victims))
		var wg sync.WaitGroup
		for i, p := range victims {
			wg.Go(func() { errs[i] = c.deletePodOf(ctx, ps, p) })
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return &replicaError{reason: ReasonFailedDelete, err: err}
		}
	}
	return nil
}

// slowStartBatch calls fn count times in batches of 1, 2, 4, ... running each batch in
// parallel, and stops after the first batch with a failure. It returns how many calls
// succeeded. A quota or admission webhook that refuses every Pod thus costs one request, not
// hundreds. (kube-controller-manager's slowStartBatch, for the same reason.)
func slowStartBatch(count int, fn func() error) (int, error) {
	done := 0
	for batch := 1; done < count; batch *= 2 {
		batch = min(batch, count-done)
		errs := make([]error, batch)
		var wg sync.WaitGroup
		for i := range batch {
			wg.Go(func() { errs[i] = fn() })
		}
		wg.Wait()
		ok := 0
		for _, err := range errs {
			if err == nil {
				ok++
			}
		}
		done += ok
		if err := errors.Join(errs...); err != nil {
			return done, err
		}
	}
	return done, nil
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

// activePods drops Pods that no longer count: finished ones and those being deleted.
func activePods(pods []*corev1.Pod) []*corev1.Pod {
	out := make([]*corev1.Pod, 0, len(pods))
	for _, p := range pods {
		if p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			out = append(out, p)
		}
	}
	return out
}

// podsToDelete picks the n Pods whose loss hurts least, in the ReplicaSet controller's order:
// unscheduled before scheduled, Pending before Unknown before Running, not ready before ready,
// and younger before older (a young Pod has warmed fewer caches).
func podsToDelete(pods []*corev1.Pod, n int) []*corev1.Pod {
	ranked := slices.Clone(pods)
	phase := map[corev1.PodPhase]int{corev1.PodPending: 0, corev1.PodUnknown: 1, corev1.PodRunning: 2}
	rank := func(p *corev1.Pod) [3]int {
		scheduled, ready := 0, 0
		if p.Spec.NodeName != "" {
			scheduled = 1
		}
		if isReady(p) {
			ready = 1
		}
		ph, ok := phase[p.Status.Phase]
		if !ok {
			ph = 0 // no phase yet: as Pending
		}
		return [3]int{scheduled, ph, ready}
	}
	slices.SortStableFunc(ranked, func(a, b *corev1.Pod) int {
		ra, rb := rank(a), rank(b)
		for i := range ra {
			if c := cmp.Compare(ra[i], rb[i]); c != 0 {
				return c
			}
		}
		if c := b.CreationTimestamp.Compare(a.CreationTimestamp.Time); c != 0 {
			return c // newer first
		}
		return cmp.Compare(a.Name, b.Name)
	})
	return ranked[:n]
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
