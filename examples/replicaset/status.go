package main

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"

	"github.com/ctrlkit/ctrlkit/controller"
)

// calculateStatus is rs's status for the Pods it owns. manageErr, the error of this sync's
// creates or deletes, becomes the ReplicaFailure condition (removed again by a clean sync).
func calculateStatus(rs *appsv1.ReplicaSet, pods []*corev1.Pod, manageErr error, now time.Time) appsv1.ReplicaSetStatus {
	st := *rs.Status.DeepCopy()
	// Pods whose labels carry the whole template's labels, not just the selector's: a
	// Deployment uses it to tell Pods of the current template from adopted ones.
	template := labels.Set(rs.Spec.Template.Labels).AsSelectorPreValidated()
	var fully, ready, available int32
	for _, p := range pods {
		if template.Matches(labels.Set(p.Labels)) {
			fully++
		}
		if podReady(p) {
			ready++
			if podAvailable(p, rs.Spec.MinReadySeconds, now) {
				available++
			}
		}
	}
	st.Replicas = int32(len(pods))
	st.FullyLabeledReplicas, st.ReadyReplicas, st.AvailableReplicas = fully, ready, available

	failure := findCondition(st.Conditions, appsv1.ReplicaSetReplicaFailure)
	switch {
	case manageErr != nil && failure == nil:
		reason := ReasonFailedCreate
		if len(pods) > int(ptrOr(rs.Spec.Replicas, 1)) {
			reason = ReasonFailedDelete
		}
		st.Conditions = append(st.Conditions, appsv1.ReplicaSetCondition{
			Type: appsv1.ReplicaSetReplicaFailure, Status: corev1.ConditionTrue, Reason: reason,
			Message: manageErr.Error(), LastTransitionTime: metav1.NewTime(now),
		})
	case manageErr == nil && failure != nil:
		kept := st.Conditions[:0]
		for _, c := range st.Conditions {
			if c.Type != appsv1.ReplicaSetReplicaFailure {
				kept = append(kept, c)
			}
		}
		st.Conditions = kept
	}
	return st
}

func findCondition(cs []appsv1.ReplicaSetCondition, t appsv1.ReplicaSetConditionType) *appsv1.ReplicaSetCondition {
	for i := range cs {
		if cs[i].Type == t {
			return &cs[i]
		}
	}
	return nil
}

// updateStatus writes st as rs's status, with observedGeneration, unless nothing changed: a
// status write per sync would cost a request and wake every watcher of ReplicaSets for
// nothing. The write is fenced: the next sync of rs waits until the informer shows it, so it
// never computes from, and writes over, the status this write replaced (which would conflict).
// A Conflict (someone else changed rs since our cache saw it) is retried once on a fresh copy;
// other errors go back to the worker loop, which retries the whole sync.
func (c *ReplicaSetController) updateStatus(ctx context.Context, rs *appsv1.ReplicaSet, st appsv1.ReplicaSetStatus) (*appsv1.ReplicaSet, error) {
	st.ObservedGeneration = rs.Generation
	if equality.Semantic.DeepEqual(rs.Status, st) {
		return rs, nil
	}
	client := c.client.AppsV1().ReplicaSets(rs.Namespace)
	for attempt := 0; ; attempt++ {
		next := rs.DeepCopy()
		next.Status = st
		updated, err := client.UpdateStatus(ctx, next, metav1.UpdateOptions{})
		if err == nil {
			controller.Fence(ctx, c.rss, updated)
			klog.FromContext(ctx).Info("Updated status", "replicas", st.Replicas, "fullyLabeled", st.FullyLabeledReplicas,
				"ready", st.ReadyReplicas, "available", st.AvailableReplicas, "observedGeneration", st.ObservedGeneration)
			return updated, nil
		}
		if attempt > 0 || !apierrors.IsConflict(err) {
			return nil, fmt.Errorf("updating status of replicaset %s/%s: %w", rs.Namespace, rs.Name, err)
		}
		klog.FromContext(ctx).V(2).Info("Status write conflicted; retrying on a fresh copy", "resourceVersion", next.ResourceVersion)
		if rs, err = client.Get(ctx, rs.Name, metav1.GetOptions{}); err != nil {
			return nil, fmt.Errorf("updating status of replicaset %s/%s: %w", next.Namespace, next.Name, err)
		}
		if rs.Generation != st.ObservedGeneration {
			// The spec moved on; this status describes the old one. The update event of the
			// new spec requeues the ReplicaSet.
			return rs, nil
		}
	}
}

// nextAvailable is how long until a ready Pod of rs becomes available (ready for
// minReadySeconds), 0 when none is waiting for that: no event marks that moment, so the sync
// asks to be run again then.
func nextAvailable(rs *appsv1.ReplicaSet, pods []*corev1.Pod, now time.Time) time.Duration {
	if rs.Spec.MinReadySeconds <= 0 {
		return 0
	}
	minReady := time.Duration(rs.Spec.MinReadySeconds) * time.Second
	var next time.Duration
	for _, p := range pods {
		if !podReady(p) || podAvailable(p, rs.Spec.MinReadySeconds, now) {
			continue
		}
		if d := readySince(p).Add(minReady).Sub(now); d > 0 && (next == 0 || d < next) {
			next = d
		}
	}
	return next
}

func readyCondition(p *corev1.Pod) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == corev1.PodReady {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

func podReady(p *corev1.Pod) bool {
	c := readyCondition(p)
	return c != nil && c.Status == corev1.ConditionTrue
}

// readySince is when the Pod last turned ready (zero when it is not ready).
func readySince(p *corev1.Pod) time.Time {
	if c := readyCondition(p); c != nil && c.Status == corev1.ConditionTrue {
		return c.LastTransitionTime.Time
	}
	return time.Time{}
}

// podAvailable reports whether p has been ready for at least minReadySeconds.
func podAvailable(p *corev1.Pod, minReadySeconds int32, now time.Time) bool {
	if !podReady(p) {
		return false
	}
	if minReadySeconds <= 0 {
		return true
	}
	since := readySince(p)
	return !since.IsZero() && !since.Add(time.Duration(minReadySeconds)*time.Second).After(now)
}
