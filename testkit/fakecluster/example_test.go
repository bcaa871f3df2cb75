package fakecluster_test

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	applycorev1 "k8s.io/client-go/applyconfigurations/core/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/ctrlkit/ctrlkit/testkit/fakecluster"
)

// A Pod created with generateName gets a name, a UID and a resourceVersion, as from an API
// server; client-go's plain fake clientset would store it nameless.
func ExampleNew() {
	cluster, err := fakecluster.New()
	if err != nil {
		panic(err)
	}
	pod, err := cluster.Clientset().CoreV1().Pods("default").Create(context.Background(), &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "web-", Namespace: "default"},
	}, metav1.CreateOptions{})
	if err != nil {
		panic(err)
	}
	fmt.Println(len(pod.Name) == len("web-")+5, pod.UID != "", pod.ResourceVersion != "", pod.Status.Phase)
	// Output: true true true Pending
}

// The typed and the dynamic client share one store: what one writes, the other reads.
func ExampleCluster_Dynamic() {
	ctx := context.Background()
	cluster, _ := fakecluster.New()
	_, _ = cluster.Clientset().CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "settings"}, Data: map[string]string{"mode": "fast"},
	}, metav1.CreateOptions{})

	configMaps := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	u, _ := cluster.Dynamic().Resource(configMaps).Namespace("default").Get(ctx, "settings", metav1.GetOptions{})
	mode, _, _ := unstructured.NestedString(u.Object, "data", "mode")
	fmt.Println(u.GetKind(), mode)
	// Output: ConfigMap fast
}

// A status update of a custom resource with a status subresource changes only the status and
// leaves generation alone; a spec update bumps generation; a stale update conflicts.
func ExampleNewWithOptions() {
	ctx := context.Background()
	gvr := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	cluster, err := fakecluster.NewWithOptions(fakecluster.Options{
		Resources: []fakecluster.Resource{{GVR: gvr, Kind: "Widget", Namespaced: true, StatusSubresource: true}},
	})
	if err != nil {
		panic(err)
	}
	widgets := cluster.Dynamic().Resource(gvr).Namespace("default")
	w := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w"},
		"spec":     map[string]any{"size": int64(1)},
	}}
	w, _ = widgets.Create(ctx, w, metav1.CreateOptions{})

	st := w.DeepCopy()
	st.Object["status"] = map[string]any{"seen": int64(1)}
	st.Object["spec"] = map[string]any{"size": int64(99)} // ignored by /status
	st, _ = widgets.UpdateStatus(ctx, st, metav1.UpdateOptions{})
	fmt.Println(st.Object["spec"], st.Object["status"], st.GetGeneration())

	st.Object["spec"] = map[string]any{"size": int64(2)}
	up, _ := widgets.Update(ctx, st, metav1.UpdateOptions{})
	fmt.Println(up.Object["spec"], up.GetGeneration())

	_, err = widgets.Update(ctx, st, metav1.UpdateOptions{}) // st's resourceVersion is stale now
	fmt.Println(err)
	// Output:
	// map[size:1] map[seen:1] 1
	// map[size:2] 2
	// Operation cannot be fulfilled on widgets.example.com "w": the object has been modified; please apply your changes to the latest version and try again
}

// Server-side apply with client-go's apply configurations: two controllers share a ConfigMap,
// each owning its keys; one that sets the other's key conflicts unless it forces, and a key
// its manager no longer applies (color) is removed.
func ExampleCluster_Clientset_apply() {
	ctx := context.Background()
	clk := clocktesting.NewFakePassiveClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	cluster, _ := fakecluster.NewWithOptions(fakecluster.Options{Clock: clk})
	cms := cluster.Clientset().CoreV1().ConfigMaps("default")

	_, _ = cms.Apply(ctx, applycorev1.ConfigMap("settings", "default").WithData(map[string]string{"mode": "fast"}),
		metav1.ApplyOptions{FieldManager: "tuner"})
	cm, _ := cms.Apply(ctx, applycorev1.ConfigMap("settings", "default").WithData(map[string]string{"color": "blue"}),
		metav1.ApplyOptions{FieldManager: "painter"})
	fmt.Println(cm.Data)
	for _, e := range cm.ManagedFields {
		fmt.Println(e.Manager, e.Operation, string(e.FieldsV1.Raw))
	}

	_, err := cms.Apply(ctx, applycorev1.ConfigMap("settings", "default").WithData(map[string]string{"mode": "slow"}),
		metav1.ApplyOptions{FieldManager: "painter"})
	fmt.Println(apierrors.IsConflict(err), err)
	cm, _ = cms.Apply(ctx, applycorev1.ConfigMap("settings", "default").WithData(map[string]string{"mode": "slow"}),
		metav1.ApplyOptions{FieldManager: "painter", Force: true})
	fmt.Println(cm.Data)
	// Output:
	// map[color:blue mode:fast]
	// painter Apply {"f:data":{"f:color":{}}}
	// tuner Apply {"f:data":{"f:mode":{}}}
	// true Apply failed with 1 conflict: conflict with "tuner": .data.mode
	// map[mode:slow]
}

// A CRD's manifest in Options.CRDs (here inline; usually an embedded crd.yaml) is served with
// its structural schema, as kube-apiserver serves it: defaults are filled in, unknown fields
// pruned, and an invalid object refused with a 422 naming the field.
func ExampleNewWithOptions_crds() {
	crd := []byte(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  names: {kind: Widget, listKind: WidgetList, plural: widgets, singular: widget}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer, minimum: 1, default: 3}
`)
	ctx := context.Background()
	cluster, err := fakecluster.NewWithOptions(fakecluster.Options{CRDs: [][]byte{crd}})
	if err != nil {
		panic(err)
	}
	widgets := cluster.Dynamic().Resource(schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}).Namespace("default")
	w := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w"},
		"spec":     map[string]any{"colour": "blue"},
	}}
	created, err := widgets.Create(ctx, w, metav1.CreateOptions{})
	fmt.Println(created.Object["spec"], err)

	w.SetName("empty")
	w.Object["spec"] = map[string]any{"size": int64(0)}
	_, err = widgets.Create(ctx, w, metav1.CreateOptions{})
	fmt.Println(apierrors.IsInvalid(err), err)
	// Output:
	// map[size:3] <nil>
	// true Widget.example.com "empty" is invalid: spec.size: Invalid value: 0: spec.size in body should be greater than or equal to 1
}
