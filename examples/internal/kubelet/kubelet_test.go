package kubelet_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ctrlkit/ctrlkit/examples/internal/kubelet"
	"github.com/ctrlkit/ctrlkit/testkit/fakecluster"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func newPod(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx"}, {Name: "sidecar", Image: "envoy"}}},
	}
}

func ready(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

func TestPodsAreScheduledThenRunningAndReady(t *testing.T) {
	cluster, err := fakecluster.New()
	require.NoError(t, err)
	client := cluster.Clientset()
	const delay = 50 * time.Millisecond
	k, err := kubelet.New(client, kubelet.Options{Nodes: []string{"n1", "n2"}, StartupDelay: delay})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- k.Run(ctx) }()
	defer func() {
		cancel()
		require.NoError(t, <-done)
	}()

	start := time.Now()
	for i := range 4 {
		_, err := client.CoreV1().Pods("default").Create(ctx, newPod(fmt.Sprintf("p%d", i)), metav1.CreateOptions{})
		require.NoError(t, err)
	}

	var pods []corev1.Pod
	require.Eventually(t, func() bool {
		list, err := client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		pods = list.Items
		for i := range pods {
			if !ready(&pods[i]) {
				return false
			}
		}
		return len(pods) == 4
	}, 10*time.Second, 10*time.Millisecond)
	assert.GreaterOrEqual(t, time.Since(start), delay, "no pod may turn ready before its startup delay")

	nodes := map[string]int{}
	for _, p := range pods {
		nodes[p.Spec.NodeName]++
		assert.Equal(t, corev1.PodRunning, p.Status.Phase)
		require.Len(t, p.Status.ContainerStatuses, 2)
		assert.True(t, p.Status.ContainerStatuses[0].Ready)
		assert.Equal(t, "sidecar", p.Status.ContainerStatuses[1].Name)
	}
	assert.Equal(t, map[string]int{"n1": 2, "n2": 2}, nodes, "round-robin over the nodes")
	// Started counts after UpdateStatus returned, a moment after the API shows the status.
	require.Eventually(t, func() bool { return k.Started() == 4 }, 10*time.Second, time.Millisecond)
}

func TestFinishedPodsAreLeftAlone(t *testing.T) {
	cluster, err := fakecluster.New()
	require.NoError(t, err)
	client := cluster.Clientset()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p, err := client.CoreV1().Pods("default").Create(ctx, newPod("done"), metav1.CreateOptions{})
	require.NoError(t, err)
	p.Status.Phase = corev1.PodSucceeded
	_, err = client.CoreV1().Pods("default").UpdateStatus(ctx, p, metav1.UpdateOptions{})
	require.NoError(t, err)
	_, err = client.CoreV1().Pods("default").Create(ctx, newPod("live"), metav1.CreateOptions{})
	require.NoError(t, err)

	k, err := kubelet.New(client, kubelet.Options{StartupDelay: -1, Namespace: "default"})
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- k.Run(ctx) }()
	require.Eventually(t, func() bool { return k.Started() == 1 }, 10*time.Second, 5*time.Millisecond)
	cancel()
	require.NoError(t, <-done)

	got, err := client.CoreV1().Pods("default").Get(context.Background(), "done", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Empty(t, got.Spec.NodeName, "a finished pod is not scheduled")
	assert.Equal(t, corev1.PodSucceeded, got.Status.Phase)
}

func TestNewNeedsAClient(t *testing.T) {
	_, err := kubelet.New(nil, kubelet.Options{})
	assert.ErrorIs(t, err, kubelet.ErrNilClient)
}
