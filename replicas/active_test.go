package replicas

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The case of kube-controller-manager's TestActivePodFiltering, plus deletion and nil.
func TestFilterActivePods(t *testing.T) {
	pod := func(name string, phase corev1.PodPhase) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.PodStatus{Phase: phase}}
	}
	deleting := pod("deleting", corev1.PodRunning)
	deleting.DeletionTimestamp = &metav1.Time{}
	pods := []*corev1.Pod{
		pod("pod-1", corev1.PodSucceeded),
		pod("pod-2", corev1.PodFailed),
		pod("pod-3", ""),
		pod("pod-4", corev1.PodPending),
		pod("pod-5", corev1.PodRunning),
		pod("pod-6", corev1.PodUnknown),
		deleting,
		nil,
	}
	var names []string
	for _, p := range FilterActivePods(pods) {
		names = append(names, p.Name)
	}
	assert.Equal(t, []string{"pod-3", "pod-4", "pod-5", "pod-6"}, names)
	assert.Len(t, pods, 8, "the input is left alone")
	assert.Empty(t, FilterActivePods(nil))

	assert.False(t, IsPodActive(nil))
	assert.False(t, IsPodActive(deleting))
	assert.True(t, IsPodActive(pod("x", corev1.PodRunning)))
}
