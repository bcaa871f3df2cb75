package manager_test

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	metadatafake "k8s.io/client-go/metadata/fake"

	"github.com/ctrlkit/ctrlkit/controller"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/manager"
	"github.com/ctrlkit/ctrlkit/sharding"
)

// A sharded controller in a few lines: the Manager names the ring, the
// controller's informers come from ShardFactory (they select this replica's
// label), and AddSharded runs it on every replica behind the ring's dispatcher.
// Every replica runs the same code with its own identity (--shard-identity,
// a Pod's name); in a real binary Options.Config replaces the fake clients
// and the ring comes from sharding.Config.AddFlags.
func ExampleAddSharded() {
	mgr, err := manager.New(manager.Options{
		Client: fake.NewClientset(),
		Sharding: &manager.ShardingOptions{
			Config: sharding.Config{Ring: "replicasets", Namespace: "my-system", Identity: "controller-0"},
			Sharder: sharding.SharderOptions{
				Resource: appsv1.SchemeGroupVersion.WithResource("replicasets"),
				Children: []schema.GroupVersionResource{corev1.SchemeGroupVersion.WithResource("pods")},
			},
			Metadata: metadatafake.NewSimpleMetadataClient(runtime.NewScheme()),
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer mgr.Factory().Shutdown()
	defer mgr.ShardFactory().Shutdown()

	rss, _ := informer.For[*appsv1.ReplicaSet](mgr.ShardFactory())
	pods, _ := informer.For[*corev1.Pod](mgr.ShardFactory())
	c, _ := controller.New("replicaset", controller.ReconcilerFunc[controller.Key](
		func(ctx context.Context, key controller.Key) (controller.Result, error) {
			// Reads from rss and pods see only this replica's ReplicaSets and their Pods;
			// Pods it creates copy the ReplicaSet's label with sharding.Inherit.
			return controller.Result{}, nil
		}), controller.Options[controller.Key]{})
	_ = controller.Watch(c, rss, controller.EnqueueObject)
	if err := manager.AddSharded(mgr, c, rss, pods); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("informers select", mgr.ShardMember().Selector())
	// mgr.Start(ctx) would check the ring's RBAC, join it, and serve /readyz's "shard-replicasets".
	// Output:
	// informers select shard.ctrlkit.dev/replicasets=controller-0
}
