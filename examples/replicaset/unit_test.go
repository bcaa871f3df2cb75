package main

import (
	"errors"
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
