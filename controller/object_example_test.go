package controller_test

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/ctrlkit/ctrlkit/client"
	"github.com/ctrlkit/ctrlkit/controller"
	"github.com/ctrlkit/ctrlkit/finalizer"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/testkit/fakecluster"
)

// An object reconciler: the Reconcile gets the object, live and carrying the registered
// finalizer; not-found keys and deleting objects never reach it, and the finalizer's cleanup
// runs when the object is deleted. The status is written with client.PatchStatus only when it
// changed, and Fences.Auto keeps the next pass from reading a cache older than that write.
func ExampleAsReconciler() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cluster, _ := fakecluster.New(&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
		Spec: appsv1.DeploymentSpec{Replicas: new(int32(2))}})
	f := informer.NewFactory(cluster.Clientset(), informer.Options{})
	defer f.Shutdown()
	deployments, _ := informer.For[*appsv1.Deployment](f)
	deps, _ := client.For[*appsv1.Deployment](cluster.Clientset())

	fins := finalizer.New[*appsv1.Deployment]()
	_ = fins.Register("example.com/dns-record", func(ctx context.Context, d *appsv1.Deployment) error {
		fmt.Println("removing the DNS record of", d.Name)
		return nil
	})
	r, err := controller.AsReconciler(deployments.Lister(), controller.ObjectReconcilerFunc[*appsv1.Deployment](
		func(ctx context.Context, d *appsv1.Deployment) (controller.Result, error) {
			// d is the cache's object: read it, never modify it.
			_, res, err := client.PatchStatus(ctx, deps, d, func(d *appsv1.Deployment) error {
				d.Status.Replicas = *d.Spec.Replicas
				return nil
			})
			if res != client.OperationResultNone {
				fmt.Println("reconciled", d.Name, "with finalizers", d.Finalizers, "status", res)
			}
			return controller.Result{}, err
		}), controller.WithFinalizers(fins, deps))
	if err != nil {
		fmt.Println(err)
		return
	}
	c, _ := controller.New("deployments", r, controller.Options[controller.Key]{Fences: &controller.Fences{Auto: true}})
	_ = controller.Watch(c, deployments, controller.EnqueueObject)
	f.Start(ctx)
	stopped := make(chan error)
	go func() { stopped <- c.Run(ctx) }()

	gone := func(ctx context.Context) (bool, error) {
		_, err := deps.Get(ctx, "default", "web", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	}
	_ = wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		d, err := deps.Get(ctx, "default", "web", metav1.GetOptions{})
		return err == nil && d.Status.Replicas == 2, nil
	})
	_ = deps.Delete(ctx, "default", "web", metav1.DeleteOptions{})
	if err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 10*time.Second, true, gone); err == nil {
		fmt.Println("web is gone")
	}
	cancel()
	<-stopped
	// Output:
	// reconciled web with finalizers [example.com/dns-record] status updatedStatusOnly
	// removing the DNS record of web
	// web is gone
}
