package replicas

import corev1 "k8s.io/api/core/v1"

// IsPodActive reports whether p counts as a replica: it has not finished (phase neither
// Succeeded nor Failed) and is not being deleted (no deletionTimestamp). A nil Pod is not
// active.
//
// It mirrors kube-controller-manager's controller.IsPodActive. A Pod being deleted does not
// count even though it may still run for its grace period: its replacement should start now,
// not when the old one is gone, and the controller's expectations observe its deletion at
// the update that sets deletionTimestamp.
func IsPodActive(p *corev1.Pod) bool {
	return p != nil &&
		p.Status.Phase != corev1.PodSucceeded &&
		p.Status.Phase != corev1.PodFailed &&
		p.DeletionTimestamp == nil
}

// FilterActivePods returns the active Pods of pods (IsPodActive), in their order, in a new
// slice; pods is not modified.
//
// It mirrors kube-controller-manager's controller.FilterActivePods, which the ReplicaSet
// controller applies to the namespace's Pods before claiming them: only active Pods are
// adopted, counted and chosen for deletion.
func FilterActivePods(pods []*corev1.Pod) []*corev1.Pod {
	out := make([]*corev1.Pod, 0, len(pods))
	for _, p := range pods {
		if IsPodActive(p) {
			out = append(out, p)
		}
	}
	return out
}
