package controller_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ctrlkit/ctrlkit/controller"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/testkit/fakecluster"
)

// Freshness.Gate keeps the workers from starting until the caches have reached the API
// server's state: a process started onto a watch cache that lags (here a connection whose
// ConfigMaps are served from the past, without "settings") reconciles nothing until it
// caught up, so no Reconcile decides on a cache without "settings".
func ExampleFreshness() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cluster, err := fakecluster.New(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "old"}})
	if err != nil {
		panic(err)
	}
	conn := cluster.Connect()
	catchUp := conn.Lag(cluster.Snapshot(), corev1.SchemeGroupVersion.WithResource("configmaps"))
	_, err = cluster.Clientset().CoreV1().ConfigMaps("default").Create(ctx,
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "settings"}}, metav1.CreateOptions{})
	if err != nil {
		panic(err)
	}

	f := informer.NewFactory(conn.Clientset(), informer.Options{})
	defer f.Shutdown()
	cms, err := informer.For[*corev1.ConfigMap](f)
	if err != nil {
		panic(err)
	}
	reconciled := make(chan controller.Key)
	c, err := controller.New("settings", controller.ReconcilerFunc[controller.Key](func(ctx context.Context, key controller.Key) (controller.Result, error) {
		_, err := cms.Lister().Namespace("default").Get("settings")
		fmt.Println("reconciling", key, "with settings cached:", err == nil)
		reconciled <- key
		return controller.Result{}, nil
	}), controller.Options[controller.Key]{Freshness: controller.Freshness{Gate: true}})
	if err != nil {
		panic(err)
	}
	if err := controller.Watch(c, cms, controller.EnqueueObject); err != nil {
		panic(err)
	}
	f.Start(ctx)
	ran := make(chan error)
	go func() { ran <- c.Run(ctx) }()
	catchUp()
	<-reconciled
	<-reconciled
	cancel()
	<-ran
	// Unordered output:
	// reconciling default/old with settings cached: true
	// reconciling default/settings with settings cached: true
}
