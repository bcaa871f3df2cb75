package multicluster_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ctrlkit/ctrlkit/controller"
	"github.com/ctrlkit/ctrlkit/customresource"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/manager"
	"github.com/ctrlkit/ctrlkit/multicluster"
	"github.com/ctrlkit/ctrlkit/testkit"
)

const widgetCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.test.ctrlkit.dev
spec:
  group: test.ctrlkit.dev
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, listKind: WidgetList}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
`

var widgets = schema.GroupVersionResource{Group: "test.ctrlkit.dev", Version: "v1", Resource: "widgets"}

// An operator's view of a controller over two clusters, one of which lacks
// the controller's CRD: the other cluster's Widgets are reconciled, the
// process stays ready and /readyz?verbose names the cluster and the
// resource; installing the CRD there (kubectl apply) reconciles its Widgets
// without a restart. Black box against two kube-apiservers: the CRD, its
// discovery and the watch that waits for it are the servers'.
func TestAClusterWithoutTheCRDHoldsNoOtherBackAPIServer(t *testing.T) {
	east, west := testkit.NewAPIServer(t), testkit.NewAPIServer(t)
	ctx := context.Background()
	require.NoError(t, customresource.EnsureCRDFromYAML(ctx, east.Dynamic(), []byte(widgetCRD)))
	createWidget := func(env *testkit.Env, name string) {
		t.Helper()
		w := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "test.ctrlkit.dev/v1", "kind": "Widget",
			"metadata": map[string]any{"namespace": env.Namespace(), "name": name},
		}}
		_, err := env.Dynamic().Resource(widgets).Namespace(env.Namespace()).Create(ctx, w, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	createWidget(east, "e1")

	fleet, err := multicluster.New(multicluster.Options{Provider: multicluster.NewList(map[string]multicluster.Connection{
		"east": {Config: east.Config()}, "west": {Config: west.Config()},
	})})
	require.NoError(t, err)
	var mu sync.Mutex
	seen := map[multicluster.Key]bool{}
	r := controller.ReconcilerFunc[multicluster.Key](func(_ context.Context, k multicluster.Key) (controller.Result, error) {
		mu.Lock()
		defer mu.Unlock()
		seen[k] = true
		return controller.Result{}, nil
	})
	reconciled := func(cluster, ns, name string) func() bool {
		return func() bool {
			mu.Lock()
			defer mu.Unlock()
			return seen[key(cluster, ns, name)]
		}
	}
	c, err := multicluster.NewController(fleet, "widgets", r, controller.Options[multicluster.Key]{})
	require.NoError(t, err)
	require.NoError(t, multicluster.Watch(fleet, c, func(cl *multicluster.Cluster) (informer.Informer[*unstructured.Unstructured], error) {
		return informer.ForResource[*unstructured.Unstructured](cl.Factory, widgets)
	}, controller.EnqueueObject))
	mgr, err := manager.New(manager.Options{Client: east.Client(), HealthProbeAddr: "127.0.0.1:0"})
	require.NoError(t, err)
	require.NoError(t, mgr.Add(fleet))
	require.NoError(t, mgr.Add(c))
	run(t, startable{mgr})

	require.Eventually(t, reconciled("east", east.Namespace(), "e1"), wait, pollEvery, "east's Widget is reconciled")
	readyz := readyzOf(mgr)
	var body string
	if !assert.Eventually(t, func() bool {
		var code int
		code, body = readyz()
		return code == http.StatusOK && strings.Contains(body, "[+]synced ok, but: multicluster-fleet: cluster west: caches not synced: widgets.test.ctrlkit.dev")
	}, wait, pollEvery, "/readyz?verbose names west and the resource it lacks, and the process stays ready") {
		t.Fatalf("/readyz?verbose: %s", body)
	}
	assert.NotContains(t, body, "cluster east")

	// kubectl apply -f the CRD in west, then a Widget there.
	require.NoError(t, customresource.EnsureCRDFromYAML(ctx, west.Dynamic(), []byte(widgetCRD)))
	require.Eventually(t, func() bool {
		_, err := west.Dynamic().Resource(widgets).Namespace(west.Namespace()).List(ctx, metav1.ListOptions{})
		return err == nil
	}, wait, pollEvery, "west serves Widgets")
	createWidget(west, "w1")
	require.Eventually(t, reconciled("west", west.Namespace(), "w1"), wait, pollEvery, "west's Widget is reconciled once its CRD is there, without a restart")
	require.Eventually(t, func() bool {
		code, body := readyz()
		return code == http.StatusOK && !strings.Contains(body, "cluster west")
	}, wait, pollEvery, "/readyz?verbose no longer names west")
	createWidget(east, "e2")
	require.Eventually(t, reconciled("east", east.Namespace(), "e2"), wait, pollEvery)
}
