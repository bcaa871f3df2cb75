package informer_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/testkit/fakecluster"
)

// An informer over shards of the hash space of UIDs (the API server's
// sharded list and watch; ctrlkit's fake cluster serves it too): each shard
// is listed and watched on its own, and a shard removed leaves its objects
// out of scope while the other shard's cache stays as it was.
func ExampleInShardSet() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	web, api := examplePod("default", "web-0", nil), examplePod("default", "api-0", nil)
	web.UID, api.UID = types.UID("uid-web-0"), types.UID("uid-api-0") // hashes 0x0891… and 0xb313…
	cluster, err := fakecluster.New(web, api)
	if err != nil {
		panic(err)
	}
	const (
		lower = "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')"
		upper = "shardRange(object.metadata.uid, '0x8000000000000000', '0x10000000000000000')"
	)
	set, err := informer.NewShardSet(lower, upper)
	if err != nil {
		panic(err)
	}
	f := informer.NewFactory(cluster.Clientset(), informer.Options{ShardSet: set})
	defer f.Shutdown()
	pods, err := informer.For[*corev1.Pod](f) // follows the factory's ShardSet
	if err != nil {
		panic(err)
	}
	events := make(chan string, 10)
	_, err = pods.AddHandler(informer.HandlerFuncs[*corev1.Pod]{
		OnOutOfScope: func(p *corev1.Pod) { events <- "out of scope " + p.Name },
	})
	if err != nil {
		panic(err)
	}
	f.Start(ctx)
	if err := f.WaitForCacheSync(ctx); err != nil {
		panic(err)
	}
	all, _ := pods.Lister().List(nil)
	fmt.Println(len(all), "pods cached")

	if err := set.Set(lower); err != nil {
		panic(err)
	}
	fmt.Println(<-events)
	_, err = pods.Lister().Get("default", "web-0")
	fmt.Println("web-0 cached:", err == nil)
	// Output:
	// 2 pods cached
	// out of scope api-0
	// web-0 cached: true
}
