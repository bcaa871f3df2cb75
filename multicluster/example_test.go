package multicluster_test

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ctrlkit/ctrlkit/controller"
	"github.com/ctrlkit/ctrlkit/multicluster"
	"github.com/ctrlkit/ctrlkit/testkit/fakecluster"
)

// One controller over two clusters: each ConfigMap is reconciled with its
// cluster in the key, through that cluster's client.
func Example() {
	clusters := map[string]multicluster.Connection{}
	for _, name := range []string{"east", "west"} {
		fc, _ := fakecluster.New(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "settings"}})
		clusters[name] = multicluster.Connection{Client: fc.Clientset(), Dynamic: fc.Dynamic(), Metadata: fc.Metadata()}
	}
	fleet, _ := multicluster.New(multicluster.Options{Provider: multicluster.NewList(clusters)})

	seen := make(chan multicluster.Key, 2)
	r := controller.ReconcilerFunc[multicluster.Key](func(ctx context.Context, k multicluster.Key) (controller.Result, error) {
		cl, err := fleet.Get(k.Cluster)
		if err != nil {
			return controller.Result{}, err
		}
		if _, err := cl.Client.CoreV1().ConfigMaps(k.Namespace).Get(ctx, k.Name, metav1.GetOptions{}); err != nil {
			return controller.Result{}, err
		}
		seen <- k
		return controller.Result{}, nil
	})
	c, _ := multicluster.NewController(fleet, "settings", r, controller.Options[multicluster.Key]{})
	_ = multicluster.Watch(fleet, c, multicluster.For[*corev1.ConfigMap](), controller.EnqueueObject)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	done := make(chan struct{}, 2)
	go func() { _ = fleet.Run(ctx); done <- struct{}{} }()
	go func() { _ = c.Run(ctx); done <- struct{}{} }()
	got := map[string]bool{}
	for range 2 {
		got[(<-seen).String()] = true
	}
	cancel()
	<-done
	<-done
	fmt.Println(got["east/default/settings"], got["west/default/settings"])
	// Output: true true
}
