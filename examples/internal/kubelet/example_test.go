package kubelet_test

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/ctrlkit/ctrlkit/examples/internal/kubelet"
	"github.com/ctrlkit/ctrlkit/testkit/fakecluster"
)

// A Pod created on the in-memory cluster is bound to a node and turns Running and Ready.
func ExampleKubelet() {
	cluster, _ := fakecluster.New()
	client := cluster.Clientset()
	k, _ := kubelet.New(client, kubelet.Options{Nodes: []string{"node-a"}, StartupDelay: 10 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- k.Run(ctx) }()

	_, _ = client.CoreV1().Pods("default").Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx"}}},
	}, metav1.CreateOptions{})
	var pod *corev1.Pod
	_ = wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		pod, _ = client.CoreV1().Pods("default").Get(ctx, "web", metav1.GetOptions{})
		return pod != nil && pod.Status.Phase == corev1.PodRunning, nil
	})
	cancel()
	<-done
	fmt.Println(pod.Spec.NodeName, pod.Status.Phase)
	// Output: node-a Running
}
