package main

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"

	"github.com/ctrlkit/ctrlkit/manager"
	"github.com/ctrlkit/ctrlkit/testkit/fakecluster"
)

// The controller in a Manager: a ReplicaSet of 3 gets its 3 Pods, each controlled by it.
func ExampleNewReplicaSetController() {
	cluster, _ := fakecluster.New(replicaSet("default", "web", "", 3))
	client := cluster.Clientset()
	mgr, _ := manager.New(manager.Options{Client: client})
	rsc, _ := NewReplicaSetController(mgr.Factory(), client, Options{})
	_ = mgr.Add(rsc)

	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logr.Discard()))
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	var owned int
	_ = wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		pods, err := client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		owned = 0
		for _, p := range pods.Items {
			if ref := metav1.GetControllerOf(&p); ref != nil && ref.Kind == "ReplicaSet" && ref.Name == "web" {
				owned++
			}
		}
		return owned == 3, nil
	})
	cancel()
	<-done
	fmt.Println(owned, "pods")
	// Output: 3 pods
}
