package replicas

import (
	"cmp"
	"math"
	"slices"
	"sort"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// ActivePodsWithRanks orders Pods for a scale-down: sort.Sort or sort.Stable puts first the
// Pods whose deletion hurts least. Less applies these rules in turn, the first that tells the
// two Pods apart deciding:
//
//  1. not assigned to a node before assigned;
//  2. Pending before Unknown before Running (a Pod with no phase counts as Pending);
//  3. not ready before ready;
//  4. lower controller.kubernetes.io/pod-deletion-cost annotation before higher (absent or
//     invalid: 0), unless IgnoreDeletionCost;
//  5. higher Rank before lower: PodsRankedByRelatedPodsOnSameNode ranks a Pod by how many
//     related Pods share its node, so a scale-down thins out doubled-up nodes first;
//  6. both ready: ready for a shorter time before longer (a Pod that just came up has warmed
//     no cache and carries the least traffic);
//  7. a container with more restarts than any of the other Pod's before (then the same for
//     restartable init containers, sidecars);
//  8. created later before earlier.
//
// In 6 and 8 a zero time comes first. When Now is set, the two ages (Now minus the time) are
// compared on a log2 scale, and two Pods whose ages fall into the same power of two are
// ordered by UID instead: among Pods of similar age the victim is then arbitrary but
// reproducible, rather than always the very youngest, which spreads deletions over nodes and
// zones (kube-controller-manager's LogarithmicScaleDown, GA, its feature gate since removed).
// With Now zero, times are compared as they are.
//
// It mirrors kube-controller-manager's controller.ActivePodsWithRanks, which the ReplicaSet
// controller's getPodsToDelete sorts. The pod-deletion-cost rule sits behind the
// PodDeletionCost feature gate there (beta, on by default); IgnoreDeletionCost is that gate
// turned off.
//
// Rank must have Pods' length or be empty (every rank 0). A nil Pod sorts as an empty one.
type ActivePodsWithRanks struct {
	// Pods are the Pods to order; sorting reorders this slice.
	Pods []*corev1.Pod
	// Rank is each Pod's rank, index for index; sorting reorders it along with Pods.
	Rank []int
	// Now is the reference time of the logarithmic age comparison (rules 6 and 8); zero
	// compares times directly.
	Now time.Time
	// IgnoreDeletionCost skips rule 4, as kube-controller-manager does with the
	// PodDeletionCost feature gate off.
	IgnoreDeletionCost bool
}

// Len is the number of Pods.
func (s ActivePodsWithRanks) Len() int { return len(s.Pods) }

// Swap swaps Pods i and j and their ranks.
func (s ActivePodsWithRanks) Swap(i, j int) {
	s.Pods[i], s.Pods[j] = s.Pods[j], s.Pods[i]
	if i < len(s.Rank) && j < len(s.Rank) {
		s.Rank[i], s.Rank[j] = s.Rank[j], s.Rank[i]
	}
}

// Less reports whether Pod i should be deleted before Pod j (see the type's rules).
func (s ActivePodsWithRanks) Less(i, j int) bool {
	a, b := s.pod(i), s.pod(j)
	if assignedA, assignedB := a.Spec.NodeName != "", b.Spec.NodeName != ""; assignedA != assignedB {
		return !assignedA
	}
	if pa, pb := phaseOrdinal(a.Status.Phase), phaseOrdinal(b.Status.Phase); pa != pb {
		return pa < pb
	}
	readyA, readySinceA := readiness(a)
	readyB, readySinceB := readiness(b)
	if readyA != readyB {
		return !readyA
	}
	if !s.IgnoreDeletionCost {
		if ca, cb := DeletionCost(a), DeletionCost(b); ca != cb {
			return ca < cb
		}
	}
	if ra, rb := s.rank(i), s.rank(j); ra != rb {
		return ra > rb
	}
	if readyA && readyB && !readySinceA.Equal(readySinceB) {
		return s.younger(readySinceA, readySinceB, a, b)
	}
	if c := compareRestarts(a, b); c != 0 {
		return c > 0
	}
	if ca, cb := a.CreationTimestamp.Time, b.CreationTimestamp.Time; !ca.Equal(cb) {
		return s.younger(ca, cb, a, b)
	}
	return false
}

// emptyPod stands in for a nil Pod, so that bad input sorts instead of panicking.
var emptyPod corev1.Pod

func (s ActivePodsWithRanks) pod(i int) *corev1.Pod {
	if p := s.Pods[i]; p != nil {
		return p
	}
	return &emptyPod
}

func (s ActivePodsWithRanks) rank(i int) int {
	if i < len(s.Rank) {
		return s.Rank[i]
	}
	return 0
}

// younger reports whether time ta (of a) sorts before tb (of b), the two being different:
// the later first, a zero time before any other; with Now set, by log2 of the age, ties by UID.
func (s ActivePodsWithRanks) younger(ta, tb time.Time, a, b *corev1.Pod) bool {
	if ta.IsZero() || tb.IsZero() {
		return ta.IsZero()
	}
	if s.Now.IsZero() {
		return ta.After(tb)
	}
	if d := logAge(s.Now.Sub(ta)) - logAge(s.Now.Sub(tb)); d != 0 {
		return d < 0
	}
	return a.UID < b.UID
}

// logAge is the integer part of log2 of age in nanoseconds, -1 for an age <= 0 (a time in
// the future).
func logAge(age time.Duration) int64 {
	if age <= 0 {
		return -1
	}
	return int64(math.Log2(float64(age)))
}

// phaseOrdinal orders phases for deletion; phases other than Unknown and Running (no phase
// yet, and finished Pods, which FilterActivePods removes) count as Pending.
func phaseOrdinal(p corev1.PodPhase) int {
	switch p {
	case corev1.PodUnknown:
		return 1
	case corev1.PodRunning:
		return 2
	default:
		return 0
	}
}

// readiness returns whether the Pod's (first) Ready condition is True, and since when.
func readiness(p *corev1.Pod) (bool, time.Time) {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			if c.Status != corev1.ConditionTrue {
				return false, time.Time{}
			}
			return true, c.LastTransitionTime.Time
		}
	}
	return false, time.Time{}
}

// compareRestarts is positive when a has more restarts than b: the highest restart count of a
// container, then (when equal) the highest of a restartable init container (sidecar).
func compareRestarts(a, b *corev1.Pod) int {
	regularA, sidecarA := maxRestarts(a)
	regularB, sidecarB := maxRestarts(b)
	if c := cmp.Compare(regularA, regularB); c != 0 {
		return c
	}
	return cmp.Compare(sidecarA, sidecarB)
}

func maxRestarts(p *corev1.Pod) (regular, sidecar int32) {
	for _, c := range p.Status.ContainerStatuses {
		regular = max(regular, c.RestartCount)
	}
	for _, st := range p.Status.InitContainerStatuses {
		if isSidecar(p, st.Name) {
			sidecar = max(sidecar, st.RestartCount)
		}
	}
	return regular, sidecar
}

func isSidecar(p *corev1.Pod, name string) bool {
	for _, c := range p.Spec.InitContainers {
		if c.Name == name {
			return c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
		}
	}
	return false
}

// DeletionCost is the Pod's controller.kubernetes.io/pod-deletion-cost annotation
// (corev1.PodDeletionCost): an int32 whose first character is a minus sign or a digit other
// than a leading zero. Absent or invalid, it is 0, as in kube-controller-manager (the API
// server's validation keeps invalid values out in the first place).
func DeletionCost(p *corev1.Pod) int32 {
	if p == nil {
		return 0
	}
	v := p.Annotations[corev1.PodDeletionCost]
	if v == "" || !(v == "0" || v[0] == '-' || ('1' <= v[0] && v[0] <= '9')) {
		return 0
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil {
		return 0
	}
	return int32(n)
}

// PodsRankedByRelatedPodsOnSameNode wraps podsToRank (not a copy: sorting the result reorders
// it) with each Pod's rank: the number of active Pods of related (IsPodActive) on the Pod's
// node. related is usually a superset of podsToRank: the Pods of every ReplicaSet of the same
// Deployment, so that a scale-down of one ReplicaSet also thins out nodes crowded by the
// others. now becomes Now.
//
// It mirrors kube-controller-manager's getPodsRankedByRelatedPodsOnSameNode
// (pkg/controller/replicaset).
func PodsRankedByRelatedPodsOnSameNode(podsToRank, related []*corev1.Pod, now time.Time) ActivePodsWithRanks {
	onNode := make(map[string]int)
	for _, p := range related {
		if IsPodActive(p) {
			onNode[p.Spec.NodeName]++
		}
	}
	ranks := make([]int, len(podsToRank))
	for i, p := range podsToRank {
		if p != nil {
			ranks[i] = onNode[p.Spec.NodeName]
		}
	}
	return ActivePodsWithRanks{Pods: podsToRank, Rank: ranks, Now: now}
}

// PodsToDelete returns the diff Pods of filtered to delete first in a scale-down, in order,
// ranked by ActivePodsWithRanks with the ranks of PodsRankedByRelatedPodsOnSameNode(filtered,
// related, now). filtered is the controller's active Pods; it is not modified (the result is a
// new slice). Nil entries are skipped. diff <= 0 returns nil; diff >= len(filtered) returns
// every Pod, unsorted, as there is nothing to choose.
//
// It mirrors kube-controller-manager's getPodsToDelete (pkg/controller/replicaset), except
// that Pods the rules cannot tell apart come in the order of their namespace and name, so the
// choice is reproducible (upstream leaves it to an unstable sort), and that upstream sorts the
// caller's slice in place.
//
// now should come from the controller's clock (clock.PassiveClock.Now): it is the reference of
// the logarithmic age comparison.
func PodsToDelete(filtered, related []*corev1.Pod, diff int, now time.Time) []*corev1.Pod {
	if diff <= 0 {
		return nil
	}
	pods := make([]*corev1.Pod, 0, len(filtered))
	for _, p := range filtered {
		if p != nil {
			pods = append(pods, p)
		}
	}
	if diff >= len(pods) {
		return pods
	}
	slices.SortFunc(pods, func(a, b *corev1.Pod) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	sort.Stable(PodsRankedByRelatedPodsOnSameNode(pods, related, now))
	return slices.Clip(pods[:diff])
}
