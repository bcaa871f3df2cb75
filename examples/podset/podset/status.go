package podset

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/ctrlkit/ctrlkit/examples/podset/api/v1alpha1"
)

// Reasons of the conditions when nothing is wrong.
const (
	// ReasonReplicasReady: Available is True, every wanted Pod is ready.
	ReasonReplicasReady = "ReplicasReady"
	// ReasonReplicasNotReady: Available is False, fewer ready Pods than wanted.
	ReasonReplicasNotReady = "ReplicasNotReady"
	// ReasonNoFailure: ReplicaFailure is False, the last creates and deletes succeeded.
	ReasonNoFailure = "NoFailure"
)

// calculateStatus is the status the PodSet should have given the Pods it controls (as the
// cache showed them before this Reconcile's writes, as in kube-controller-manager: the writes
// show up in the next pass) and the error of managing them. Conditions keep their
// lastTransitionTime while their status stays, so an unchanged world gives an equal status and
// no write.
func calculateStatus(ps *v1alpha1.PodSet, pods []*corev1.Pod, manageErr error) v1alpha1.PodSetStatus {
	st := *ps.Status.DeepCopy()
	st.Replicas = int32(len(pods))
	st.ReadyReplicas = 0
	for _, p := range pods {
		if isReady(p) {
			st.ReadyReplicas++
		}
	}
	st.ObservedGeneration = ps.Generation

	desired := ps.Spec.DesiredReplicas()
	avail := metav1.Condition{Type: v1alpha1.ConditionAvailable, ObservedGeneration: ps.Generation,
		Message: fmt.Sprintf("%d of %d Pods ready", st.ReadyReplicas, desired)}
	if st.ReadyReplicas >= desired {
		avail.Status, avail.Reason = metav1.ConditionTrue, ReasonReplicasReady
	} else {
		avail.Status, avail.Reason = metav1.ConditionFalse, ReasonReplicasNotReady
	}
	meta.SetStatusCondition(&st.Conditions, avail)

	var re *replicaError
	if errors.As(manageErr, &re) {
		setFailure(&st, ps.Generation, re.reason, re.err)
	} else {
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: v1alpha1.ConditionReplicaFailure,
			Status: metav1.ConditionFalse, Reason: ReasonNoFailure, ObservedGeneration: ps.Generation})
	}
	return st
}

// setFailure sets ReplicaFailure True with reason and err's message.
func setFailure(st *v1alpha1.PodSetStatus, generation int64, reason string, err error) {
	st.ObservedGeneration = generation
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: v1alpha1.ConditionReplicaFailure,
		Status: metav1.ConditionTrue, Reason: reason, Message: err.Error(), ObservedGeneration: generation})
}

// writeStatus writes st through the status subresource when it differs from ps's. A Conflict
// means the PodSet changed since the cache's copy: the watch event of the newer version is on
// its way and will reconcile it again, so it is not an error. NotFound means it was deleted.
func (c *Controller) writeStatus(ctx context.Context, ps *v1alpha1.PodSet, st v1alpha1.PodSetStatus) error {
	if equality.Semantic.DeepEqual(ps.Status, st) {
		return nil
	}
	next := ps.DeepCopy() // never modify the cache's object
	next.Status = st
	_, err := c.crs.UpdateStatus(ctx, next, metav1.UpdateOptions{})
	switch {
	case apierrors.IsConflict(err), apierrors.IsNotFound(err):
		klog.FromContext(ctx).V(2).Info("Status not written; a newer version will be reconciled", "err", err)
		return nil
	case err != nil:
		return fmt.Errorf("updating status of %s/%s: %w", ps.Namespace, ps.Name, err)
	}
	klog.FromContext(ctx).V(2).Info("Updated status", "replicas", st.Replicas, "readyReplicas", st.ReadyReplicas,
		"observedGeneration", st.ObservedGeneration)
	return nil
}
