package directinformer_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/internal/directinformer"
)

// An informer of Pods over a client: the handler is called on the
// informer's goroutine as each change is applied.
func ExampleResource() {
	client := fake.NewClientset(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-0"}})
	pods := client.CoreV1().Pods("")
	inf := directinformer.Resource(corev1.SchemeGroupVersion.WithResource("pods"), client,
		func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return pods.List(ctx, opts)
		},
		func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return pods.Watch(ctx, opts)
		},
		nil, directinformer.Options{ObjectType: &corev1.Pod{}})
	reg, _ := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { fmt.Println("add", obj.(*corev1.Pod).Name) },
	})

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		inf.RunWithContext(ctx)
	}()
	cache.WaitForCacheSync(ctx.Done(), reg.HasSynced)
	fmt.Println("synced:", inf.HasSynced())
	cancel()
	<-done
	// Output:
	// add web-0
	// synced: true
}
