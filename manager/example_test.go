package manager_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/ctrlkit/ctrlkit/controller"
	"github.com/ctrlkit/ctrlkit/featuregate"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/manager"
)

// A Manager runs controllers over one factory; a controller behind a
// disabled feature gate is not started, and /readyz reports when the caches
// synced.
func Example() {
	gate := featuregate.New()
	_ = gate.Add(map[featuregate.Feature]featuregate.FeatureSpec{
		"ConfigMapMirror": {Default: false, PreRelease: featuregate.Alpha},
	})
	client := fake.NewClientset(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "settings"}})
	mgr, err := manager.New(manager.Options{Client: client, FeatureGate: gate})
	if err != nil {
		fmt.Println(err)
		return
	}
	configMaps, _ := informer.For[*corev1.ConfigMap](mgr.Factory())

	done := make(chan struct{})
	audit, _ := controller.New("configmap-audit", controller.ReconcilerFunc[controller.Key](
		func(ctx context.Context, key controller.Key) (controller.Result, error) {
			fmt.Println("audited", key)
			close(done)
			return controller.Result{}, nil
		}), controller.Options[controller.Key]{})
	_ = controller.Watch(audit, configMaps, controller.EnqueueObject)
	mirror, _ := controller.New("configmap-mirror", controller.ReconcilerFunc[controller.Key](
		func(ctx context.Context, key controller.Key) (controller.Result, error) {
			fmt.Println("mirrored", key) // never: its gate is off
			return controller.Result{}, nil
		}), controller.Options[controller.Key]{Feature: "ConfigMapMirror"})
	_ = controller.Watch(mirror, configMaps, controller.EnqueueObject)
	if err := mgr.Add(audit, mirror); err != nil {
		fmt.Println(err)
		return
	}

	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan error)
	go func() { started <- mgr.Start(ctx) }()
	<-done
	for {
		rec := httptest.NewRecorder()
		mgr.ReadyzHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
		if rec.Code == http.StatusOK {
			fmt.Println("readyz:", rec.Body.String())
			break
		}
		runtime.Gosched()
	}
	cancel()
	fmt.Println("start returned:", <-started)
	// Output:
	// audited default/settings
	// readyz: ok
	// start returned: <nil>
}

// A check of your own on /healthz (AddReadyzCheck is the same for /readyz): a failing one is
// named in the answer.
func ExampleManager_AddHealthzCheck() {
	mgr, _ := manager.New(manager.Options{Client: fake.NewClientset()})
	_ = mgr.AddHealthzCheck("license", func(*http.Request) error { return errors.New("expired") })
	rec := httptest.NewRecorder()
	mgr.HealthzHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
	fmt.Print(rec.Code, " ", rec.Body.String())
	// Output: 500 license: expired
}
