package replicas

import (
	"fmt"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// rankPod builds a Pod the way kube-controller-manager's TestSortingActivePodsWithRanks does:
// a ready Pod gets a Ready condition since readySince, restarts on its container and
// sideRestarts on its sidecar (a restartable init container).
func rankPod(name, node string, phase corev1.PodPhase, ready bool, restarts, sideRestarts int32, readySince, created time.Time, annotations map[string]string) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(created), Annotations: annotations},
		Spec: corev1.PodSpec{
			NodeName:       node,
			InitContainers: []corev1.Container{{Name: "sidecar", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways)}},
		},
		Status: corev1.PodStatus{Phase: phase},
	}
	if ready {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(readySince)}}
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{RestartCount: restarts}}
		p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "sidecar", RestartCount: sideRestarts}}
	}
	return p
}

// The cases of kube-controller-manager's TestSortingActivePodsWithRanks
// (pkg/controller/controller_utils_test.go), plus ctrlkit's own.
func TestActivePodsWithRanksLess(t *testing.T) {
	now := time.Now()
	then1Month := now.AddDate(0, -1, 0)
	then2Hours := now.Add(-2 * time.Hour)
	then5Hours := now.Add(-5 * time.Hour)
	then8Hours := now.Add(-8 * time.Hour)
	var zero time.Time
	var (
		unscheduled               = rankPod("unscheduled", "", corev1.PodPending, false, 0, 0, zero, zero, nil)
		scheduledPending          = rankPod("pending", "node", corev1.PodPending, false, 0, 0, zero, zero, nil)
		unknownPhase              = rankPod("unknown-phase", "node", corev1.PodUnknown, false, 0, 0, zero, zero, nil)
		runningNotReady           = rankPod("not-ready", "node", corev1.PodRunning, false, 0, 0, zero, zero, nil)
		readyNoLastTransitionTime = rankPod("ready-no-last-transition-time", "node", corev1.PodRunning, true, 0, 0, zero, zero, nil)
		readyNow                  = rankPod("ready-now", "node", corev1.PodRunning, true, 0, 0, now, now, nil)
		readyThen                 = rankPod("ready-then", "node", corev1.PodRunning, true, 0, 0, then1Month, then1Month, nil)
		readyNowHighRestarts      = rankPod("ready-high-restarts", "node", corev1.PodRunning, true, 9001, 0, now, now, nil)
		readyNowHighSideRestarts  = rankPod("ready-high-restarts", "node", corev1.PodRunning, true, 9001, 9001, now, now, nil)
		readyNowCreatedThen       = rankPod("ready-now-created-then", "node", corev1.PodRunning, true, 0, 0, now, then1Month, nil)
		lowDeletionCost           = rankPod("low-deletion-cost", "node", corev1.PodRunning, true, 0, 0, now, then1Month, map[string]string{corev1.PodDeletionCost: "10"})
		highDeletionCost          = rankPod("high-deletion-cost", "node", corev1.PodRunning, true, 0, 0, now, then1Month, map[string]string{corev1.PodDeletionCost: "100"})
		unscheduled5Hours         = rankPod("unscheduled-5-hours", "", corev1.PodPending, false, 0, 0, then5Hours, then5Hours, nil)
		unscheduled8Hours         = rankPod("unscheduled-10-hours", "", corev1.PodPending, false, 0, 0, then8Hours, then8Hours, nil)
		ready2Hours               = rankPod("ready-2-hours", "", corev1.PodRunning, true, 0, 0, then2Hours, then1Month, nil)
		ready5Hours               = rankPod("ready-5-hours", "", corev1.PodRunning, true, 0, 0, then5Hours, then1Month, nil)
		ready10Hours              = rankPod("ready-10-hours", "", corev1.PodRunning, true, 0, 0, then8Hours, then1Month, nil)
		noPhase                   = rankPod("no-phase", "node", "", false, 0, 0, zero, zero, nil)
		invalidDeletionCost       = rankPod("invalid-deletion-cost", "node", corev1.PodRunning, true, 0, 0, now, then1Month, map[string]string{corev1.PodDeletionCost: "+5"})
		negativeDeletionCost      = rankPod("negative-deletion-cost", "node", corev1.PodRunning, true, 0, 0, now, then1Month, map[string]string{corev1.PodDeletionCost: "-1"})
		readyFalseCondition       = rankPod("ready-false", "node", corev1.PodRunning, false, 0, 0, zero, zero, nil)
		created5Hours             = rankPod("created-5-hours", "node", corev1.PodRunning, false, 0, 0, zero, then5Hours, nil)
		created8Hours             = rankPod("created-8-hours", "node", corev1.PodRunning, false, 0, 0, zero, then8Hours, nil)
	)
	readyFalseCondition.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}
	// Same log2 bucket of age (2^44 ns is about 4.9 hours, 2^45 about 9.8): the UIDs decide.
	created5Hours.UID, created8Hours.UID = types.UID("b"), types.UID("a")

	for i, tc := range []struct{ p1, p2 *corev1.Pod }{
		{p1: unscheduled},
		{p1: scheduledPending},
		{p1: unknownPhase},
		{p1: runningNotReady},
		{p1: readyNowCreatedThen},
		{p1: readyNow},
		{p1: readyThen},
		{p1: readyNowHighRestarts},
		{p1: readyNowCreatedThen},
		{p1: unscheduled5Hours, p2: unscheduled8Hours},
		{p1: ready5Hours, p2: ready10Hours},
		// ctrlkit's: no phase is Pending; an invalid cost is 0; a False Ready condition is
		// not ready.
		{p1: noPhase, p2: scheduledPending},
		{p1: invalidDeletionCost, p2: readyNowCreatedThen},
		{p1: readyFalseCondition, p2: runningNotReady},
	} {
		t.Run(fmt.Sprintf("equal %d", i), func(t *testing.T) {
			if tc.p2 == nil {
				tc.p2 = tc.p1
			}
			s := ActivePodsWithRanks{Pods: []*corev1.Pod{tc.p1, tc.p2}, Rank: []int{1, 1}, Now: now}
			assert.False(t, s.Less(0, 1), "%s < %s", tc.p1.Name, tc.p2.Name)
			assert.False(t, s.Less(1, 0), "%s < %s", tc.p2.Name, tc.p1.Name)
		})
	}

	type ranked struct {
		pod  *corev1.Pod
		rank int
	}
	for i, tc := range []struct {
		lesser, greater    ranked
		ignoreDeletionCost bool
		zeroNow            bool
	}{
		{lesser: ranked{unscheduled, 1}, greater: ranked{scheduledPending, 2}},
		{lesser: ranked{unscheduled, 2}, greater: ranked{scheduledPending, 1}},
		{lesser: ranked{scheduledPending, 1}, greater: ranked{unknownPhase, 2}},
		{lesser: ranked{unknownPhase, 1}, greater: ranked{runningNotReady, 2}},
		{lesser: ranked{runningNotReady, 1}, greater: ranked{readyNoLastTransitionTime, 1}},
		{lesser: ranked{readyNoLastTransitionTime, 1}, greater: ranked{readyNow, 1}},
		{lesser: ranked{readyNow, 2}, greater: ranked{readyNoLastTransitionTime, 1}},
		{lesser: ranked{readyNow, 1}, greater: ranked{readyThen, 1}},
		{lesser: ranked{readyNow, 2}, greater: ranked{readyThen, 1}},
		{lesser: ranked{readyNowHighRestarts, 1}, greater: ranked{readyNow, 1}},
		{lesser: ranked{readyNowHighSideRestarts, 1}, greater: ranked{readyNowHighRestarts, 1}},
		{lesser: ranked{readyNow, 2}, greater: ranked{readyNowHighRestarts, 1}},
		{lesser: ranked{readyNow, 1}, greater: ranked{readyNowCreatedThen, 1}},
		{lesser: ranked{readyNowCreatedThen, 2}, greater: ranked{readyNow, 1}},
		{lesser: ranked{lowDeletionCost, 2}, greater: ranked{highDeletionCost, 1}},
		{lesser: ranked{highDeletionCost, 2}, greater: ranked{lowDeletionCost, 1}, ignoreDeletionCost: true},
		{lesser: ranked{ready2Hours, 1}, greater: ranked{ready5Hours, 1}},
		// ctrlkit's.
		{lesser: ranked{negativeDeletionCost, 1}, greater: ranked{invalidDeletionCost, 2}},
		{lesser: ranked{created8Hours, 1}, greater: ranked{created5Hours, 1}},                // same bucket: UID a < b
		{lesser: ranked{created5Hours, 1}, greater: ranked{created8Hours, 1}, zeroNow: true}, // no Now: newer first
		{lesser: ranked{ready5Hours, 1}, greater: ranked{ready10Hours, 1}, zeroNow: true},
		{lesser: ranked{nil, 1}, greater: ranked{scheduledPending, 1}}, // nil: an empty, unassigned Pod
	} {
		t.Run(fmt.Sprintf("less %d", i), func(t *testing.T) {
			s := ActivePodsWithRanks{
				Pods:               []*corev1.Pod{tc.lesser.pod, tc.greater.pod},
				Rank:               []int{tc.lesser.rank, tc.greater.rank},
				Now:                now,
				IgnoreDeletionCost: tc.ignoreDeletionCost,
			}
			if tc.zeroNow {
				s.Now = time.Time{}
			}
			name := func(p *corev1.Pod) string {
				if p == nil {
					return "<nil>"
				}
				return p.Name
			}
			assert.True(t, s.Less(0, 1), "%s (rank %d) < %s (rank %d)", name(tc.lesser.pod), tc.lesser.rank, name(tc.greater.pod), tc.greater.rank)
			assert.False(t, s.Less(1, 0), "%s (rank %d) < %s (rank %d)", name(tc.greater.pod), tc.greater.rank, name(tc.lesser.pod), tc.lesser.rank)
		})
	}
}

// Swap keeps each Pod with its rank; a missing Rank means every rank is 0.
func TestActivePodsWithRanksSwap(t *testing.T) {
	a := rankPod("a", "n1", corev1.PodRunning, true, 0, 0, time.Now(), time.Now(), nil)
	b := rankPod("b", "n2", corev1.PodRunning, true, 0, 0, time.Now(), time.Now(), nil)
	s := ActivePodsWithRanks{Pods: []*corev1.Pod{a, b}, Rank: []int{1, 5}}
	sort.Sort(s)
	assert.Equal(t, []*corev1.Pod{b, a}, s.Pods, "the higher rank first")
	assert.Equal(t, []int{5, 1}, s.Rank)

	s = ActivePodsWithRanks{Pods: []*corev1.Pod{a, b}}
	s.Swap(0, 1)
	assert.Equal(t, []*corev1.Pod{b, a}, s.Pods)
}

// deletePod is a Pod on node (none: unscheduled) in phase, with a Ready condition when ready
// is set; the Pods of kube-controller-manager's
// TestGetPodsToDelete (pkg/controller/replicaset/replica_set_test.go).
func deletePod(name, node string, phase corev1.PodPhase, ready *bool) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec:       corev1.PodSpec{NodeName: node},
		Status:     corev1.PodStatus{Phase: phase},
	}
	if ready != nil {
		st := corev1.ConditionFalse
		if *ready {
			st = corev1.ConditionTrue
		}
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: st}}
	}
	return p
}

// The cases of kube-controller-manager's TestGetPodsToDelete.
func TestPodsToDelete(t *testing.T) {
	var (
		unscheduledPending = deletePod("unscheduled-pending-pod", "", corev1.PodPending, nil)
		scheduledPending   = deletePod("scheduled-pending-pod", "fake-node", corev1.PodPending, nil)
		runningNotReady    = deletePod("scheduled-running-not-ready-pod", "fake-node", corev1.PodRunning, ptr.To(false))
		readyOnNode1       = deletePod("scheduled-running-ready-pod-on-node-1", "fake-node-1", corev1.PodRunning, ptr.To(true))
		readyOnNode2       = deletePod("scheduled-running-ready-pod-on-node-2", "fake-node-2", corev1.PodRunning, ptr.To(true))
	)
	for _, tc := range []struct {
		name    string
		pods    []*corev1.Pod
		related []*corev1.Pod // nil: pods
		diff    int
		want    []*corev1.Pod
	}{
		{name: "no pods, diff 0", pods: []*corev1.Pod{}, diff: 0, want: nil},
		{name: "diff = len(pods)", pods: []*corev1.Pod{runningNotReady, readyOnNode1}, diff: 2,
			want: []*corev1.Pod{runningNotReady, readyOnNode1}},
		{name: "diff < len(pods)", pods: []*corev1.Pod{readyOnNode1, runningNotReady}, diff: 1,
			want: []*corev1.Pod{runningNotReady}},
		{name: "various phases and conditions, diff = len(pods): not sorted",
			pods: []*corev1.Pod{readyOnNode1, readyOnNode1, readyOnNode2, runningNotReady, scheduledPending, unscheduledPending},
			diff: 6,
			want: []*corev1.Pod{readyOnNode1, readyOnNode1, readyOnNode2, runningNotReady, scheduledPending, unscheduledPending}},
		{name: "various phases and conditions, diff = len(pods), related empty",
			pods:    []*corev1.Pod{readyOnNode1, readyOnNode1, readyOnNode2, runningNotReady, scheduledPending, unscheduledPending},
			related: []*corev1.Pod{},
			diff:    6,
			want:    []*corev1.Pod{readyOnNode1, readyOnNode1, readyOnNode2, runningNotReady, scheduledPending, unscheduledPending}},
		{name: "scheduled vs unscheduled", pods: []*corev1.Pod{scheduledPending, unscheduledPending}, diff: 1,
			want: []*corev1.Pod{unscheduledPending}},
		{name: "ready vs not ready", pods: []*corev1.Pod{readyOnNode1, runningNotReady, runningNotReady}, diff: 2,
			want: []*corev1.Pod{runningNotReady, runningNotReady}},
		{name: "ready and colocated with another ready pod vs not colocated",
			pods:    []*corev1.Pod{readyOnNode1, readyOnNode2},
			related: []*corev1.Pod{readyOnNode1, readyOnNode2, readyOnNode2},
			diff:    1,
			want:    []*corev1.Pod{readyOnNode2}},
		{name: "pending vs running", pods: []*corev1.Pod{scheduledPending, runningNotReady}, diff: 1,
			want: []*corev1.Pod{scheduledPending}},
		{name: "various phases and conditions, diff < len(pods)",
			pods: []*corev1.Pod{readyOnNode1, readyOnNode2, runningNotReady, scheduledPending, unscheduledPending},
			diff: 3,
			want: []*corev1.Pod{unscheduledPending, scheduledPending, runningNotReady}},
		// ctrlkit's.
		{name: "negative diff", pods: []*corev1.Pod{readyOnNode1}, diff: -1, want: nil},
		{name: "diff > len(pods)", pods: []*corev1.Pod{readyOnNode1}, diff: 3, want: []*corev1.Pod{readyOnNode1}},
		{name: "nil pods are skipped", pods: []*corev1.Pod{nil, readyOnNode1, nil, runningNotReady}, diff: 1,
			want: []*corev1.Pod{runningNotReady}},
		{name: "inactive related pods do not crowd a node",
			pods:    []*corev1.Pod{readyOnNode1, readyOnNode2},
			related: []*corev1.Pod{readyOnNode1, readyOnNode2, finished(readyOnNode2), finished(readyOnNode2)},
			diff:    1,
			want:    []*corev1.Pod{readyOnNode1}}, // equal ranks: by name
	} {
		t.Run(tc.name, func(t *testing.T) {
			related := tc.related
			if related == nil {
				related = tc.pods
			}
			before := slices.Clone(tc.pods)
			got := PodsToDelete(tc.pods, related, tc.diff, time.Now())
			assert.Equal(t, tc.want, got)
			assert.Equal(t, before, tc.pods, "the input is not reordered")
		})
	}
}

func finished(p *corev1.Pod) *corev1.Pod {
	p = p.DeepCopy()
	p.Status.Phase = corev1.PodSucceeded
	return p
}

// Pods the rules cannot tell apart are chosen by name, whatever the order of the input.
func TestPodsToDeleteIsReproducible(t *testing.T) {
	created := time.Now().Add(-time.Hour).Truncate(time.Second)
	var pods []*corev1.Pod
	for _, name := range []string{"e", "b", "d", "a", "c"} {
		pods = append(pods, rankPod(name, "node-"+name, corev1.PodRunning, true, 0, 0, created, created, nil))
	}
	names := func(ps []*corev1.Pod) []string {
		var out []string
		for _, p := range ps {
			out = append(out, p.Name)
		}
		return out
	}
	assert.Equal(t, []string{"a", "b"}, names(PodsToDelete(pods, pods, 2, time.Now())))
	reversed := []*corev1.Pod{pods[4], pods[3], pods[2], pods[1], pods[0]}
	assert.Equal(t, []string{"a", "b"}, names(PodsToDelete(reversed, reversed, 2, time.Now())))
}

// The logarithmic scale: among Pods whose ages fall in the same power of two, the UID picks
// the victim, not the exact age; a zero now compares exact ages.
func TestPodsToDeleteLogarithmicScaleDown(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	// 5 and 8 hours are both in [2^44, 2^45) ns; 2 hours is in [2^42, 2^43).
	youngest := rankPod("5h", "n1", corev1.PodRunning, true, 0, 0, now.Add(-5*time.Hour), now.Add(-5*time.Hour), nil)
	older := rankPod("8h", "n2", corev1.PodRunning, true, 0, 0, now.Add(-8*time.Hour), now.Add(-8*time.Hour), nil)
	young := rankPod("2h", "n3", corev1.PodRunning, true, 0, 0, now.Add(-2*time.Hour), now.Add(-2*time.Hour), nil)
	youngest.UID, older.UID, young.UID = "z", "a", "m"
	pods := []*corev1.Pod{youngest, older, young}

	got := PodsToDelete(pods, nil, 2, now)
	assert.Equal(t, []*corev1.Pod{young, older}, got, "2h first (its own bucket), then 8h by UID")
	got = PodsToDelete(pods, nil, 2, time.Time{})
	assert.Equal(t, []*corev1.Pod{young, youngest}, got, "without now: exact ages")
}

func TestDeletionCost(t *testing.T) {
	for v, want := range map[string]int32{
		"0": 0, "10": 10, "-10": -10, "2147483647": 2147483647, "-2147483648": -2147483648,
		"2147483648": 0, "+1": 0, "01": 0, "": 0, "1.5": 0, "-": 0, "abc": 0,
	} {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{corev1.PodDeletionCost: v}}}
		assert.Equal(t, want, DeletionCost(p), "%q", v)
	}
	assert.Zero(t, DeletionCost(&corev1.Pod{}))
	assert.Zero(t, DeletionCost(nil))
}
