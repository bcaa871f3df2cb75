package podset_test

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"

	"github.com/ctrlkit/ctrlkit/controller"
	"github.com/ctrlkit/ctrlkit/customresource"
	"github.com/ctrlkit/ctrlkit/examples/podset/api/v1alpha1"
	"github.com/ctrlkit/ctrlkit/examples/podset/podset"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/testkit/fakecluster"
)

// The controller on an in-memory cluster: its typed clientset for Pods, its dynamic client for
// PodSets, one informer factory over both. A PodSet of three gets three Pods, each controlled
// by it. (newPodSet, in helpers_test.go, is a PodSet selecting and stamping app=<name>.)
func Example() {
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), klog.LoggerWithName(klog.Background(), "example")))
	defer cancel()
	cluster, err := fakecluster.NewWithOptions(fakecluster.Options{Resources: []fakecluster.Resource{podSetResource}})
	if err != nil {
		fmt.Println(err)
		return
	}
	client, dyn := cluster.Clientset(), cluster.Dynamic()
	podsets, _ := customresource.NewClient[*v1alpha1.PodSet](dyn, v1alpha1.GVR)
	if _, err := podsets.Create(ctx, newPodSet("web", 3), metav1.CreateOptions{}); err != nil {
		fmt.Println(err)
		return
	}

	factory := informer.NewFactory(client, informer.Options{DynamicClient: dyn})
	c, err := podset.New(factory, client, dyn, podset.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	factory.Start(ctx)
	defer factory.Shutdown()
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	defer func() { cancel(); <-done }()

	var pods []corev1.Pod
	err = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		list, err := client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil {
			return false, err
		}
		pods = list.Items
		return len(pods) == 3, nil
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	ref := metav1.GetControllerOf(&pods[0])
	fmt.Println(len(pods), "pods, controlled by", ref.Kind, ref.Name, "blockOwnerDeletion:", *ref.BlockOwnerDeletion)
	// Output: 3 pods, controlled by PodSet web blockOwnerDeletion: true
}

// Reconcile can be called directly, as in a unit test. The second call creates nothing: either
// the Pod cache has seen the three Pods, or the expectations the first call recorded say it has
// not yet — in neither case are there Pods to add.
func ExampleController_Reconcile() {
	ctx := context.Background()
	cluster, _ := fakecluster.NewWithOptions(fakecluster.Options{Resources: []fakecluster.Resource{podSetResource}})
	client, dyn := cluster.Clientset(), cluster.Dynamic()
	podsets, _ := customresource.NewClient[*v1alpha1.PodSet](dyn, v1alpha1.GVR)
	if _, err := podsets.Create(ctx, newPodSet("web", 3), metav1.CreateOptions{}); err != nil {
		fmt.Println(err)
		return
	}
	factory := informer.NewFactory(client, informer.Options{DynamicClient: dyn})
	c, _ := podset.New(factory, client, dyn, podset.Options{})
	factory.Start(ctx)
	defer factory.Shutdown()
	if err := factory.WaitForCacheSync(ctx); err != nil {
		fmt.Println(err)
		return
	}

	key := controller.Key{Namespace: "default", Name: "web"}
	for range 2 {
		if _, err := c.Reconcile(ctx, key); err != nil {
			fmt.Println(err)
			return
		}
		list, _ := client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
		fmt.Println(len(list.Items), "pods")
	}
	// Output:
	// 3 pods
	// 3 pods
}
