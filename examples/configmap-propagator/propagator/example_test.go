package propagator_test

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/ctrlkit/ctrlkit/examples/configmap-propagator/propagator"
	"github.com/ctrlkit/ctrlkit/manager"
	"github.com/ctrlkit/ctrlkit/testkit/fakecluster"
)

// The propagator in a Manager: a labelled ConfigMap of the source namespace appears in every
// namespace labelled as a target.
func ExampleNew() {
	cluster, _ := fakecluster.New(
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a", Labels: map[string]string{propagator.LabelPropagate: "true"}}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "platform", Name: "settings",
			Labels: map[string]string{propagator.LabelPropagate: "true"}}, Data: map[string]string{"region": "eu"}},
	)
	client := cluster.Clientset()
	mgr, _ := manager.New(manager.Options{Client: client})
	c, _ := propagator.New(mgr.Factory(), client, propagator.Options{SourceNamespace: "platform"})
	_ = mgr.Add(c)

	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logr.Discard())) // quiet output
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	var cp *corev1.ConfigMap
	_ = wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		var err error
		cp, err = client.CoreV1().ConfigMaps("team-a").Get(ctx, "settings", metav1.GetOptions{})
		return err == nil, nil
	})
	cancel()
	<-done
	fmt.Println(cp.Data["region"], cp.Annotations[propagator.AnnotationSource])
	// Output: eu platform/settings
}
