package informer_test

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/testkit/fakecluster"
)

// An informer whose namespaces change while it runs: a namespace added is
// listed and replayed to the handlers, one removed leaves them as out of
// scope (not deleted), and reads there say "not watched", not "not found".
func ExampleInNamespaceSet() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cluster, err := fakecluster.New(examplePod("team-a", "web-0", nil), examplePod("team-b", "api-0", nil))
	if err != nil {
		panic(err)
	}
	f := informer.NewFactory(cluster.Clientset(), informer.Options{})
	defer f.Shutdown()
	set, err := informer.NewNamespaceSet("team-a")
	if err != nil {
		panic(err)
	}
	pods, err := informer.For(f, informer.InNamespaceSet[*corev1.Pod](set))
	if err != nil {
		panic(err)
	}
	events := make(chan string, 10)
	_, err = pods.AddHandler(informer.HandlerFuncs[*corev1.Pod]{
		OnAdd: func(p *corev1.Pod, initial bool) {
			events <- fmt.Sprintf("add %s/%s initial=%v", p.Namespace, p.Name, initial)
		},
		OnDelete:     func(p *corev1.Pod) { events <- "delete " + p.Name }, // real deletes only
		OnOutOfScope: func(p *corev1.Pod) { events <- fmt.Sprintf("out of scope %s/%s", p.Namespace, p.Name) },
	})
	if err != nil {
		panic(err)
	}
	f.Start(ctx)
	fmt.Println(<-events)

	if err := set.Add("team-b"); err != nil {
		panic(err)
	}
	fmt.Println(<-events)
	set.Remove("team-a")
	fmt.Println(<-events)
	if err := f.WaitForCacheSync(ctx); err != nil { // the latest change is applied
		panic(err)
	}
	_, err = pods.Lister().Get("team-a", "web-0")
	fmt.Println(errors.Is(err, informer.ErrNamespaceNotWatched), err)
	// Output:
	// add team-a/web-0 initial=true
	// add team-b/api-0 initial=true
	// out of scope team-a/web-0
	// true informer pods: namespace "team-a" is not watched (not in its NamespaceSet)
}
