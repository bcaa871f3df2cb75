package manager_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/ctrlkit/ctrlkit/controller"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/manager"
	"github.com/ctrlkit/ctrlkit/testkit/fakecluster"
)

// A controller of a custom resource whose CRD is installed after the
// process started: /readyz names what it waits for, and the controller is
// built and started once the CRD is established.
func ExampleManager_AddWhenServed() {
	cluster, err := fakecluster.New()
	if err != nil {
		panic(err)
	}
	mgr, err := manager.New(manager.Options{Client: cluster.Clientset(), Dynamic: cluster.Dynamic()})
	if err != nil {
		panic(err)
	}
	gadgets := schema.GroupVersionResource{Group: "example.ctrlkit.dev", Version: "v1", Resource: "gadgets"}
	reconciled := make(chan controller.Key, 1)
	err = mgr.AddWhenServed(manager.WhenServed{
		Name:      "gadgets",
		Resources: []schema.GroupVersionResource{gadgets},
		// Called for each period the CRD is served, with a factory view held for it.
		Build: func(ctx context.Context, f *informer.Factory) (manager.Runnable, error) {
			inf, err := informer.ForResource[*unstructured.Unstructured](f, gadgets)
			if err != nil {
				return nil, err
			}
			c, err := controller.New("gadgets", controller.ReconcilerFunc[controller.Key](
				func(_ context.Context, key controller.Key) (controller.Result, error) {
					reconciled <- key
					return controller.Result{}, nil
				}), controller.Options[controller.Key]{})
			if err != nil {
				return nil, err
			}
			return c, controller.Watch(c, inf, controller.EnqueueObject)
		},
	})
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan error)
	go func() { started <- mgr.Start(ctx) }()

	readyz := func() string {
		rec := httptest.NewRecorder()
		mgr.ReadyzHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
		return strings.TrimSpace(rec.Body.String())
	}
	_ = wait.PollUntilContextCancel(ctx, time.Millisecond, true, func(context.Context) (bool, error) {
		return strings.Contains(readyz(), "waiting for"), nil
	})
	fmt.Println("readyz:", readyz())

	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "gadgets.example.ctrlkit.dev"},
		"spec": map[string]any{
			"group": "example.ctrlkit.dev", "scope": "Namespaced",
			"names": map[string]any{"plural": "gadgets", "singular": "gadget", "kind": "Gadget", "listKind": "GadgetList"},
			"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}},
		},
	}}
	if _, err := cluster.Dynamic().Resource(fakecluster.CRDResource).Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		panic(err)
	}
	gadget := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.ctrlkit.dev/v1", "kind": "Gadget", "metadata": map[string]any{"namespace": "default", "name": "g"},
	}}
	if _, err := cluster.Dynamic().Resource(gadgets).Namespace("default").Create(ctx, gadget, metav1.CreateOptions{}); err != nil {
		panic(err)
	}
	fmt.Println("reconciled:", <-reconciled)
	cancel()
	fmt.Println("start returned:", <-started)
	// Output:
	// readyz: controllers not synced: gadgets (waiting for gadgets.example.ctrlkit.dev/v1: no CRD gadgets.example.ctrlkit.dev and not served)
	// reconciled: default/g
	// start returned: <nil>
}
