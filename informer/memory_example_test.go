package informer_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/testkit/fakecluster"
)

// What a Pod cache holds, as the factory estimates it while objects come
// and go: objects, bytes (the Pods' equal labels and containers shared,
// counted once) and the largest namespaces. A budget of policy
// BudgetFailReadiness fails CheckMemoryBudget while the caches are over it.
func ExampleFactory_CacheMemory() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pod := func(ns, name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": "web"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "registry.example.com/web:1.4.2"}}}}
	}
	cluster, _ := fakecluster.New(pod("shop", "web-1"), pod("shop", "web-2"), pod("shop", "web-3"), pod("blog", "web-1"))
	f := informer.NewFactory(cluster.Clientset(), informer.Options{MemoryBudget: 1 << 10, BudgetPolicy: informer.BudgetFailReadiness})
	defer f.Shutdown()
	if _, err := informer.For(f, informer.InNamespaces[*corev1.Pod]("shop", "blog")); err != nil {
		fmt.Println(err)
		return
	}
	f.Start(ctx)
	if err := f.WaitForCacheSync(ctx); err != nil {
		fmt.Println(err)
		return
	}
	pods := f.CacheMemory().Informers[0]
	fmt.Println(pods.Resource, pods.Scope, pods.Objects, "objects")
	fmt.Println("shared:", pods.SharedBytes > 0, "saved by sharing:", pods.UnsharedBytes > pods.Bytes)
	fmt.Println("largest namespace:", pods.Namespaces[0].Namespace, pods.Namespaces[0].Objects)
	fmt.Println(f.CheckMemoryBudget() != nil)
	// Output:
	// pods namespaces=blog,shop 4 objects
	// shared: true saved by sharing: true
	// largest namespace: shop 3
	// true
}
