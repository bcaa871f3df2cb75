package informer_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/testkit/fakecluster"
)

// A cache that lags behind the API server (here a connection whose ConfigMaps are served from
// the past, as by a watch cache that fell behind) has not reached a consistent read taken after
// a write it missed; once it caught up, Wait returns.
func ExampleVersionOf() {
	ctx := context.Background()
	cluster, err := fakecluster.New()
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
	f.Start(ctx)
	if err := f.WaitForCacheSync(ctx); err != nil {
		panic(err)
	}

	v, err := informer.VersionOf(ctx, cms)
	if err != nil {
		panic(err)
	}
	fmt.Println("reached:", v.Reached())
	confirmed, err := v.Confirm(ctx) // a consistent list, compared with the cache
	if err != nil {
		panic(err)
	}
	fmt.Println("confirmed:", confirmed)

	catchUp()
	if err := v.Wait(ctx); err != nil {
		panic(err)
	}
	_, err = cms.Lister().Namespace("default").Get("settings")
	fmt.Println("reached:", v.Reached(), "cached:", err == nil)
	// Output:
	// reached: false
	// confirmed: false
	// reached: true cached: true
}
