package podset

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/ctrlkit/ctrlkit/controller"
	"github.com/ctrlkit/ctrlkit/examples/podset/api/v1alpha1"
	"github.com/ctrlkit/ctrlkit/expectations"
)

func TestSlowStartBatch(t *testing.T) {
	for _, tc := range []struct {
		name              string
		count, succeed    int // calls numbered above succeed fail
		wantOK, wantCalls int
		wantErr           bool
	}{
		{name: "all succeed", count: 10, succeed: 10, wantOK: 10, wantCalls: 10},
		{name: "first fails", count: 10, succeed: 0, wantOK: 0, wantCalls: 1, wantErr: true},
		// Batches 1, 2, 4: calls 1-3 succeed, the third batch (calls 4-7) has failures.
		{name: "third batch fails", count: 10, succeed: 4, wantOK: 4, wantCalls: 7, wantErr: true},
		{name: "last batch is short", count: 5, succeed: 5, wantOK: 5, wantCalls: 5},
		{name: "nothing to do", count: 0, wantOK: 0, wantCalls: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var calls atomic.Int64
			ok, err := slowStartBatch(tc.count, func() error {
				if int(calls.Add(1)) > tc.succeed {
					return errors.New("refused")
				}
				return nil
			})
			assert.Equal(t, tc.wantOK, ok)
			assert.Equal(t, tc.wantCalls, int(calls.Load()))
			assert.Equal(t, tc.wantErr, err != nil, "%v", err)
		})
	}
}

func TestPodsToDeleteRanksCheapestFirst(t *testing.T) {
	now := time.Now()
	pod := func(name, node string, phase corev1.PodPhase, ready bool, age time.Duration) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(now.Add(-age))},
			Spec: corev1.PodSpec{NodeName: node}, Status: corev1.PodStatus{Phase: phase}}
		if ready {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		}
		return p
	}
	pods := []*corev1.Pod{
		pod("ready-old", "n", corev1.PodRunning, true, time.Hour),
		pod("ready-young", "n", corev1.PodRunning, true, time.Minute),
		pod("running-unready", "n", corev1.PodRunning, false, time.Hour),
		pod("unknown", "n", corev1.PodUnknown, false, time.Hour),
		pod("pending", "n", corev1.PodPending, false, time.Hour),
		pod("unscheduled", "", corev1.PodPending, false, time.Hour),
	}
	var names []string
	for _, p := range podsToDelete(pods, len(pods)) {
		names = append(names, p.Name)
	}
	assert.Equal(t, []string{"unscheduled", "pending", "unknown", "running-unready", "ready-young", "ready-old"}, names)
	assert.Len(t, podsToDelete(pods, 2), 2)
	assert.Equal(t, "ready-old", pods[0].Name, "the input is not reordered")
}

func TestNewPodCarriesTemplateAndControllerRef(t *testing.T) {
	ps := &v1alpha1.PodSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "ps-uid"},
		Spec: v1alpha1.PodSetSpec{Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}, Finalizers: []string{"x/y"}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}},
		}},
	}
	p := newPod(ps)
	assert.Equal(t, "web-", p.GenerateName)
	assert.Equal(t, "ns", p.Namespace)
	assert.Equal(t, []string{"x/y"}, p.Finalizers)
	assert.Equal(t, []metav1.OwnerReference{{APIVersion: "examples.ctrlkit.dev/v1alpha1", Kind: "PodSet", Name: "web",
		UID: "ps-uid", Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}, p.OwnerReferences)
	p.Labels["app"] = "changed"
	assert.Equal(t, "web", ps.Spec.Template.Labels["app"], "the template is copied, not shared")
}

// A PodSet deleted and re-created under the same name starts with clean expectations, and a
// deleted one leaves no record behind.
func TestExpectationsFollowThePodSetUID(t *testing.T) {
	c := &Controller{exp: expectations.NewUIDTracking[types.UID](), uid: map[controller.Key]types.UID{}}
	k := controller.Key{Namespace: "ns", Name: "web"}
	c.remember(k, "old")
	c.exp.ExpectCreations("old", 3)
	assert.False(t, c.exp.Satisfied("old"))

	c.remember(k, "new")
	_, _, exists := c.exp.Get("old")
	assert.False(t, exists, "the replaced PodSet's record is dropped")

	c.exp.ExpectCreations("new", 1)
	c.forget(k)
	_, _, exists = c.exp.Get("new")
	assert.False(t, exists, "a deleted PodSet's record is dropped")
	assert.Empty(t, c.uid)
}
