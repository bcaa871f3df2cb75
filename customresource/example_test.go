package customresource_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/ctrlkit/ctrlkit/customresource"
	"github.com/ctrlkit/ctrlkit/examples/podset/api/v1alpha1"
)

// exampleFake is the in-memory dynamic client tests use; it needs the list kind of
// every resource it lists.
func exampleFake() *dynamicfake.FakeDynamicClient {
	return dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{v1alpha1.GVR: v1alpha1.ListKind})
}

func examplePodSet(name string, replicas int32) *v1alpha1.PodSet {
	return &v1alpha1.PodSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Labels: map[string]string{"app": name}},
		Spec: v1alpha1.PodSetSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx"}}},
			},
		},
	}
}

// A typed client for PodSets: every verb takes and returns *v1alpha1.PodSet.
func Example() {
	ctx := context.Background()
	dyn := exampleFake() // dynamic.NewForConfig(restConfig) against a real cluster

	client, err := customresource.NewClient[*v1alpha1.PodSet](dyn, v1alpha1.GVR)
	if err != nil {
		fmt.Println(err)
		return
	}
	podsets := client

	if _, err := podsets.Create(ctx, examplePodSet("web", 3), metav1.CreateOptions{}); err != nil {
		fmt.Println(err)
		return
	}
	ps, err := podsets.Get(ctx, "default", "web", metav1.GetOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(ps.Kind, ps.Namespace+"/"+ps.Name, "replicas:", *ps.Spec.Replicas)

	ps.Status.Replicas, ps.Status.ReadyReplicas = 3, 3
	if _, err := podsets.UpdateStatus(ctx, ps, metav1.UpdateOptions{}); err != nil {
		fmt.Println(err)
		return
	}
	list, err := client.List(ctx, metav1.NamespaceAll, metav1.ListOptions{LabelSelector: "app=web"})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, ps := range list.Items {
		fmt.Println(ps.Name, "ready:", ps.Status.ReadyReplicas)
	}
	// Output:
	// PodSet default/web replicas: 3
	// web ready: 3
}

// Custom resources take JSON merge patches (not strategic merge patches).
func ExampleClient_Patch() {
	ctx := context.Background()
	podsets, _ := customresource.NewClient[*v1alpha1.PodSet](exampleFake(), v1alpha1.GVR)
	_, _ = podsets.Create(ctx, examplePodSet("web", 1), metav1.CreateOptions{})

	ps, err := podsets.Patch(ctx, "default", "web", types.MergePatchType, []byte(`{"spec":{"replicas":5}}`), metav1.PatchOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(*ps.Spec.Replicas)
	// Output: 5
}

// A watch hands out typed objects; an object that does not fit the Go type arrives as
// an Error event naming it, and the watch goes on.
func ExampleClient_Watch() {
	ctx := context.Background()
	dyn := exampleFake()
	podsets, _ := customresource.NewClient[*v1alpha1.PodSet](dyn, v1alpha1.GVR)
	w, err := podsets.Watch(ctx, "", metav1.ListOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer w.Stop()

	_, _ = podsets.Create(ctx, examplePodSet("web", 2), metav1.CreateOptions{})
	bad := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "examples.ctrlkit.dev/v1alpha1", "kind": "PodSet",
		"metadata": map[string]any{"namespace": "default", "name": "bad"},
		"spec":     map[string]any{"replicas": "two"},
	}}
	_, _ = dyn.Resource(v1alpha1.GVR).Namespace("default").Create(ctx, bad, metav1.CreateOptions{})

	for range 2 {
		ev := <-w.ResultChan()
		var convErr *customresource.ConversionError
		switch {
		case errors.As(ev.Err, &convErr):
			fmt.Println(ev.Type, "cannot decode", convErr.Namespace+"/"+convErr.Name)
		case ev.Err != nil:
			fmt.Println(ev.Type, ev.Err)
		default:
			fmt.Println(ev.Type, ev.Object.Name, *ev.Object.Spec.Replicas)
		}
	}
	// Output:
	// ADDED web 2
	// ERROR cannot decode default/bad
}

// Server-side apply from a partial object: only the fields in the configuration are
// owned by the field manager.
func ExampleClient_ApplyUnstructured() {
	ctx := context.Background()
	dyn := exampleFake()
	// The fake only records apply requests (it cannot merge them); a real API server
	// would merge the configuration into the object.
	dyn.PrependReactor("patch", "podsets", func(a clienttesting.Action) (bool, runtime.Object, error) {
		p := a.(clienttesting.PatchActionImpl)
		fmt.Printf("%s %s fieldManager=%s: %s\n", p.GetPatchType(), p.GetName(), p.PatchOptions.FieldManager, bytes.TrimSpace(p.GetPatch()))
		return true, &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": p.GetName()}}}, nil
	})
	podsets, _ := customresource.NewClient[*v1alpha1.PodSet](dyn, v1alpha1.GVR)

	config := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"namespace": "default", "name": "web"},
		"spec":     map[string]any{"replicas": int64(4)},
	}}
	_, err := podsets.ApplyUnstructured(ctx, config, metav1.ApplyOptions{FieldManager: "scaler"})
	fmt.Println(err)
	// Output:
	// application/apply-patch+yaml web fieldManager=scaler: {"apiVersion":"examples.ctrlkit.dev/v1alpha1","kind":"PodSet","metadata":{"name":"web","namespace":"default"},"spec":{"replicas":4}}
	// <nil>
}

// A conversion failure is a *ConversionError that names the object and resource.
func ExampleConversionError() {
	ctx := context.Background()
	dyn := exampleFake()
	_, _ = dyn.Resource(v1alpha1.GVR).Namespace("default").Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "examples.ctrlkit.dev/v1alpha1", "kind": "PodSet",
		"metadata": map[string]any{"namespace": "default", "name": "bad"},
		"status":   map[string]any{"readyReplicas": "all of them"},
	}}, metav1.CreateOptions{})

	podsets, _ := customresource.NewClient[*v1alpha1.PodSet](dyn, v1alpha1.GVR)
	_, err := podsets.Get(ctx, "default", "bad", metav1.GetOptions{})
	var convErr *customresource.ConversionError
	if errors.As(err, &convErr) {
		fmt.Println(convErr.Resource.Resource, convErr.Namespace, convErr.Name, convErr.GoType)
	}
	// Output: podsets default bad *v1alpha1.PodSet
}

// Installing a CRD: against a fake there is no API server to establish it, so a
// reactor plays that part and marks the CRD Established when it is created.
func ExampleEnsureCRDFromYAML() {
	ctx := context.Background()
	dyn := exampleFake()
	dyn.PrependReactor("create", "customresourcedefinitions", func(a clienttesting.Action) (bool, runtime.Object, error) {
		crd := a.(clienttesting.CreateAction).GetObject().(*unstructured.Unstructured)
		_ = unstructured.SetNestedSlice(crd.Object, []any{
			map[string]any{"type": "Established", "status": "True"},
		}, "status", "conditions")
		return false, nil, nil // let the fake store it
	})

	if err := customresource.EnsureCRDFromYAML(ctx, dyn, v1alpha1.CRDManifest); err != nil {
		fmt.Println(err)
		return
	}
	// A second call finds it and returns at once.
	if err := customresource.EnsureCRDFromYAML(ctx, dyn, v1alpha1.CRDManifest); err != nil {
		fmt.Println(err)
		return
	}
	for _, a := range dyn.Actions() {
		fmt.Println(a.GetVerb(), a.GetResource().Resource)
	}
	// Output:
	// get customresourcedefinitions
	// create customresourcedefinitions
	// get customresourcedefinitions
}

// A cluster-scoped custom resource is declared with WithClusterScope; its calls take no
// namespace.
func ExampleWithClusterScope() {
	podsets, _ := customresource.NewClient[*v1alpha1.PodSet](exampleFake(), v1alpha1.GVR, customresource.WithClusterScope())
	fmt.Println(podsets.Namespaced())
	_, err := podsets.Get(context.Background(), "default", "web", metav1.GetOptions{})
	fmt.Println(err)
	// Output:
	// false
	// customresource: get podsets.v1alpha1.examples.ctrlkit.dev "default/web": the resource is cluster-scoped and takes no namespace: invalid input
}
