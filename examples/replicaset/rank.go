package main

import (
	"cmp"
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// podsToDelete picks the n Pods to delete when scaling down: the ones whose loss hurts least,
// ranked as kube-controller-manager ranks them (a subset of its ActivePodsWithRanks order):
//
//  1. not yet scheduled before scheduled;
//  2. Pending before Unknown before Running;
//  3. not ready before ready;
//  4. on a node with more Pods of this ReplicaSet before fewer (spreads the survivors);
//  5. ready for a shorter time before longer (a Pod that just came up has warmed no cache);
//  6. more container restarts before fewer;
//  7. created later before earlier;
//
// then by name, so the choice is deterministic.
func podsToDelete(pods []*corev1.Pod, n int) []*corev1.Pod {
	if n >= len(pods) {
		return slices.Clone(pods)
	}
	perNode := map[string]int{}
	for _, p := range pods {
		if p.Spec.NodeName != "" {
			perNode[p.Spec.NodeName]++
		}
	}
	ranked := slices.Clone(pods)
	slices.SortStableFunc(ranked, func(a, b *corev1.Pod) int {
		return deletionOrder(a, b, perNode)
	})
	return ranked[:n]
}

// deletionOrder is negative when a should be deleted before b.
func deletionOrder(a, b *corev1.Pod, perNode map[string]int) int {
	// Each comparison is phrased as "is a better kept than b": false sorts first.
	if c := cmpBool(a.Spec.NodeName != "", b.Spec.NodeName != ""); c != 0 {
		return c
	}
	if c := cmp.Compare(phaseRank(a.Status.Phase), phaseRank(b.Status.Phase)); c != 0 {
		return c
	}
	if c := cmpBool(podReady(a), podReady(b)); c != 0 {
		return c
	}
	if c := cmp.Compare(perNode[b.Spec.NodeName], perNode[a.Spec.NodeName]); c != 0 {
		return c // more colocated Pods first
	}
	if podReady(a) && podReady(b) {
		if c := readySince(b).Compare(readySince(a)); c != 0 {
			return c // ready later (for less time) first
		}
	}
	if c := cmp.Compare(restarts(b), restarts(a)); c != 0 {
		return c // more restarts first
	}
	if c := b.CreationTimestamp.Time.Compare(a.CreationTimestamp.Time); c != 0 {
		return c // newer first
	}
	return cmp.Compare(a.Name, b.Name)
}

func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case !a:
		return -1
	default:
		return 1
	}
}

func phaseRank(p corev1.PodPhase) int {
	switch p {
	case corev1.PodPending:
		return 0
	case corev1.PodUnknown:
		return 1
	case corev1.PodRunning:
		return 2
	default:
		return 3
	}
}

func restarts(p *corev1.Pod) int32 {
	var n int32
	for _, c := range p.Status.ContainerStatuses {
		n += c.RestartCount
	}
	return n
}
