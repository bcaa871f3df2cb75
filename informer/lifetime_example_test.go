package informer_test

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/testkit/fakecluster"
)

// A controller that runs for a while inside a longer-lived process builds
// its informers on a view held for its run: once the run's context ends
// (and the release grace passed, none here), the informers only it used
// stop and their caches are freed.
func ExampleFactory_HeldUntil() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cluster, err := fakecluster.New(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "settings"}})
	if err != nil {
		panic(err)
	}
	f := informer.NewFactory(cluster.Clientset(), informer.Options{ReleaseGrace: -1})
	defer f.Shutdown()
	f.Start(ctx)

	run, endRun := context.WithCancel(ctx)
	configMaps, err := informer.For[*corev1.ConfigMap](f.HeldUntil(run))
	if err != nil {
		panic(err)
	}
	if err := informer.WaitForCacheSync(ctx, configMaps); err != nil {
		panic(err)
	}
	cm, err := configMaps.Lister().Get("default", "settings")
	fmt.Println("cached:", cm.Name, err)

	endRun()
	err = wait.PollUntilContextCancel(ctx, time.Millisecond, true, func(context.Context) (bool, error) {
		return configMaps.Informer().IsStopped(), nil
	})
	fmt.Println("stopped after the run:", err == nil)
	// Output:
	// cached: settings <nil>
	// stopped after the run: true
}
