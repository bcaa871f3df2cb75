package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/ctrlkit/ctrlkit/controller"
	"github.com/ctrlkit/ctrlkit/featuregate"
)

func newGate(t *testing.T, set string) *featuregate.Gate {
	t.Helper()
	g := featuregate.New()
	require.NoError(t, AddFeatures(g))
	require.NoError(t, g.Set(set))
	return g
}

// trace records the order in which calls start and end.
type trace struct {
	mu     sync.Mutex
	events []string
}

func (tr *trace) add(ev string) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.events = append(tr.events, ev)
}

// Batches are 1, 2, 4, ...: every call of a batch ends before any call of the next starts.
func TestSlowStartBatchSizes(t *testing.T) {
	var tr trace
	ok, attempted, err := slowStartBatch(context.Background(), 10, 1, func(_ context.Context, i int) error {
		tr.add(fmt.Sprintf("start %d", i))
		tr.add(fmt.Sprintf("end %d", i))
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, 10, ok)
	assert.Equal(t, 10, attempted)
	batches := [][]int{{0}, {1, 2}, {3, 4, 5, 6}, {7, 8, 9}} // the last one is what is left
	pos := func(ev string) int { return slices.Index(tr.events, ev) }
	for b := 0; b+1 < len(batches); b++ {
		for _, i := range batches[b] {
			for _, j := range batches[b+1] {
				assert.Less(t, pos(fmt.Sprintf("end %d", i)), pos(fmt.Sprintf("start %d", j)),
					"call %d (batch %d) must end before call %d (batch %d) starts", i, b, j, b+1)
			}
		}
	}
}

func TestSlowStartBatchStopsAfterAFailingBatch(t *testing.T) {
	boom := errors.New("quota exceeded")
	var calls []int
	var mu sync.Mutex
	ok, attempted, err := slowStartBatch(context.Background(), 10, 1, func(_ context.Context, i int) error {
		mu.Lock()
		calls = append(calls, i)
		mu.Unlock()
		if i == 2 {
			return boom
		}
		return nil
	})
	assert.ErrorIs(t, err, boom)
	assert.Equal(t, 2, ok, "calls 0 and 1 succeeded")
	assert.Equal(t, 3, attempted, "batches {0} and {1,2} ran; 3..9 never did")
	assert.ElementsMatch(t, []int{0, 1, 2}, calls)

	// Skipped calls are neither successes nor failures.
	ok, attempted, err = slowStartBatch(context.Background(), 3, 1, func(context.Context, int) error { return errSkipped })
	assert.NoError(t, err)
	assert.Zero(t, ok)
	assert.Equal(t, 3, attempted)

	ok, attempted, err = slowStartBatch(context.Background(), 0, 1, func(context.Context, int) error { return boom })
	assert.NoError(t, err)
	assert.Zero(t, ok+attempted)
}

func TestPodsToDeleteRanking(t *testing.T) {
	now := time.Now()
	pod := func(name, node string, phase corev1.PodPhase, readyFor time.Duration, restarts int32, age time.Duration) *corev1.Pod {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(now.Add(-age))},
			Spec:       corev1.PodSpec{NodeName: node},
			Status:     corev1.PodStatus{Phase: phase, ContainerStatuses: []corev1.ContainerStatus{{RestartCount: restarts}}},
		}
		if readyFor > 0 {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue,
				LastTransitionTime: metav1.NewTime(now.Add(-readyFor))}}
		}
		return p
	}
	pods := []*corev1.Pod{
		pod("veteran", "n1", corev1.PodRunning, time.Hour, 0, 2*time.Hour),
		pod("unscheduled", "", corev1.PodPending, 0, 0, time.Minute),
		pod("pending", "n2", corev1.PodPending, 0, 0, time.Minute),
		pod("unknown", "n3", corev1.PodUnknown, 0, 0, time.Minute),
		pod("not-ready", "n3", corev1.PodRunning, 0, 0, time.Minute),
		pod("crowded", "n4", corev1.PodRunning, time.Hour, 0, 2*time.Hour),
		pod("crowded-too", "n4", corev1.PodRunning, time.Hour, 0, 2*time.Hour),
		pod("fresh", "n5", corev1.PodRunning, time.Minute, 0, 2*time.Hour),
		pod("flaky", "n6", corev1.PodRunning, time.Hour, 5, 2*time.Hour),
		pod("young", "n7", corev1.PodRunning, time.Hour, 0, 90*time.Minute),
	}
	var names []string
	for _, p := range podsToDelete(pods, len(pods)-1) {
		names = append(names, p.Name)
	}
	assert.Equal(t, []string{
		"unscheduled", // 1. not scheduled
		"pending",     // 2. Pending before Unknown before Running
		"unknown",
		"not-ready",   // 3. not ready
		"crowded",     // 4. shares its node with another Pod of the set (n3 too, but those went earlier)
		"crowded-too", //    (by name)
		"fresh",       // 5. ready for less time
		"flaky",       // 6. more restarts
		"young",       // 7. newer
	}, names, "veteran is kept")
	assert.Len(t, podsToDelete(pods, 20), len(pods))
}

// availableReplicas counts Pods ready for minReadySeconds. No event marks that moment, so the
// sync asks to be run again when the next Pod gets there.
func TestMinReadySecondsRequeuesUntilAvailable(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now().Truncate(time.Second)) // the API stores whole seconds
	e := newTestEnv(t, envOptions{noStart: true, opts: Options{Clock: clk}})
	rs := replicaSet(ns, "web", "", 1)
	rs.Spec.MinReadySeconds = 10
	created, err := e.Client().AppsV1().ReplicaSets(ns).Create(e.ctx, rs, metav1.CreateOptions{})
	require.NoError(t, err)
	p := readyPod("web-1", map[string]string{"app": "web"}, created)
	p.Status.Conditions[0].LastTransitionTime = metav1.NewTime(clk.Now().Add(-4 * time.Second))
	e.createPod(p)
	e.waitCached("web")
	e.waitPodsCached()
	key := controller.Key{Namespace: ns, Name: "web"}

	res, err := e.rsc.Reconcile(e.ctx, key)
	require.NoError(t, err)
	assert.Equal(t, controller.Result{RequeueAfter: 6 * time.Second}, res)
	require.Eventually(t, func() bool { return e.getRS("web").Status.ReadyReplicas == 1 }, quiet, 5*time.Millisecond)
	st := e.getRS("web").Status
	assert.Equal(t, int32(0), st.AvailableReplicas, "ready for 4s of the 10 needed")

	clk.Step(6 * time.Second)
	waitForCachedStatus(t, e, 1)
	res, err = e.rsc.Reconcile(e.ctx, key)
	require.NoError(t, err)
	assert.True(t, res.IsZero())
	assert.Equal(t, int32(1), e.getRS("web").Status.AvailableReplicas)
}

// waitForCachedStatus waits until the informer has the status write, so the next Reconcile
// starts from it.
func waitForCachedStatus(t *testing.T, e *testEnv, ready int32) {
	t.Helper()
	require.Eventually(t, func() bool {
		rs, err := e.rsc.rss.Lister().Get(ns, "web")
		return err == nil && rs.Status.ReadyReplicas == ready
	}, quiet, 5*time.Millisecond)
}

func TestCalculateStatus(t *testing.T) {
	now := time.Now()
	rs := replicaSet(ns, "web", "uid", 3)
	rs.Spec.Template.Labels = map[string]string{"app": "web", "tier": "frontend"}
	ready := readyPod("a", map[string]string{"app": "web", "tier": "frontend"}, rs)
	partial := readyPod("b", map[string]string{"app": "web"}, rs) // adopted: selector matches, template does not
	notReady := readyPod("c", map[string]string{"app": "web", "tier": "frontend"}, rs)
	notReady.Status.Conditions = nil

	st := calculateStatus(rs, []*corev1.Pod{ready, partial, notReady}, nil, now)
	assert.Equal(t, appsv1.ReplicaSetStatus{Replicas: 3, FullyLabeledReplicas: 2, ReadyReplicas: 2, AvailableReplicas: 2}, st)

	st = calculateStatus(rs, []*corev1.Pod{ready}, errors.New("quota"), now)
	require.Len(t, st.Conditions, 1)
	assert.Equal(t, "FailedCreate", st.Conditions[0].Reason)
	assert.Equal(t, "quota", st.Conditions[0].Message)

	rs.Status = st
	again := calculateStatus(rs, []*corev1.Pod{ready}, errors.New("other"), now.Add(time.Minute))
	assert.Equal(t, st.Conditions, again.Conditions, "an existing failure condition keeps its time")
	rs.Status = again
	assert.Empty(t, calculateStatus(rs, []*corev1.Pod{ready}, nil, now).Conditions)
}
