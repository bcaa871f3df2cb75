package client_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/ctrlkit/ctrlkit/client"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/testkit/fakecluster"
)

// exampleClientset is an in-memory cluster; kubernetes.NewForConfig(restConfig) against a
// real one.
func exampleClientset(objs ...*corev1.ConfigMap) kubernetes.Interface {
	c, err := fakecluster.New()
	if err != nil {
		panic(err)
	}
	for _, o := range objs {
		if _, err := c.Clientset().CoreV1().ConfigMaps(o.Namespace).Create(context.Background(), o, metav1.CreateOptions{}); err != nil {
			panic(err)
		}
	}
	return c.Clientset()
}

// One Client per type, with the namespace as an argument.
func Example() {
	ctx := context.Background()
	cms, err := client.For[*corev1.ConfigMap](exampleClientset())
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(cms.Resource().Resource, cms.GroupVersionKind().Kind, cms.Namespaced())

	_, err = cms.Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "settings"},
		Data:       map[string]string{"color": "blue"},
	}, metav1.CreateOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	cm, err := cms.Get(ctx, "default", "settings", metav1.GetOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(cm.Name, cm.Data["color"])

	// A namespaced resource without a namespace fails before any request.
	_, err = cms.Get(ctx, "", "settings", metav1.GetOptions{})
	fmt.Println(err)
	// Output:
	// configmaps ConfigMap true
	// settings blue
	// client: get configmaps "settings": the resource is namespaced and no namespace was given: invalid input
}

// For maps every built-in type through client-go's scheme, cluster-scoped ones included.
func ExampleFor() {
	cs := exampleClientset()
	nodes, _ := client.For[*corev1.Node](cs)
	fmt.Println(nodes.Resource(), nodes.Namespaced())

	_, err := client.For[*corev1.Binding](cs)
	fmt.Println(err)
	// Output:
	// /v1, Resource=nodes false
	// client: for *v1.Binding: type not served by the clientset: kubernetes.Interface has no typed client for [/v1, Kind=Binding]
}

// CreateOrUpdate creates the object, then updates it only when mutate changes something.
func ExampleCreateOrUpdate() {
	ctx := context.Background()
	cms, _ := client.For[*corev1.ConfigMap](exampleClientset())
	desired := func(cm *corev1.ConfigMap) error {
		cm.Data = map[string]string{"color": "blue"}
		return nil
	}
	for range 2 {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "settings"}}
		res, err := client.CreateOrUpdate(ctx, cms, cm, desired)
		fmt.Println(res, err, cm.Data["color"])
	}
	// Output:
	// created <nil> blue
	// unchanged <nil> blue
}

// CreateOrPatch sends only what mutate changed; status goes through the status subresource.
func ExampleCreateOrPatch() {
	ctx := context.Background()
	c, _ := fakecluster.New()
	pods, _ := client.For[*corev1.Pod](c.Clientset())
	_, _ = pods.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx"}}}}, metav1.CreateOptions{})

	c.ClearActions()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}}
	res, err := client.CreateOrPatch(ctx, pods, pod, func(p *corev1.Pod) error {
		p.Labels = map[string]string{"tier": "front"}
		p.Status.Message = "checked"
		return nil
	})
	fmt.Println(res, err)
	for _, a := range c.Actions() {
		if p, ok := a.(interface{ GetPatch() []byte }); ok {
			fmt.Printf("patch %q %s\n", a.GetSubresource(), p.GetPatch())
		}
	}
	// Output:
	// updatedStatus <nil>
	// patch "" {"metadata":{"labels":{"tier":"front"}}}
	// patch "status" {"status":{"message":"checked"}}
}

// With an optimistic lock the patch carries the resourceVersion it was computed from: a
// stale read fails with a Conflict instead of being merged over.
func ExampleWithOptimisticLock() {
	ctx := context.Background()
	cms, _ := client.For[*corev1.ConfigMap](exampleClientset())
	res, err := client.CreateOrPatch(ctx, cms,
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "counter"}},
		func(cm *corev1.ConfigMap) error {
			cm.Data = map[string]string{"n": "1"}
			return nil
		}, client.WithOptimisticLock())
	fmt.Println(res, err)
	// Output: created <nil>
}

// MergeFrom computes a merge patch between a copy taken before the change and the object.
func ExampleMergeFrom() {
	ctx := context.Background()
	cms, _ := client.For[*corev1.ConfigMap](exampleClientset(&corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "settings"},
		Data:       map[string]string{"color": "blue", "size": "L"},
	}))
	cm, _ := cms.Get(ctx, "default", "settings", metav1.GetOptions{})
	patch := client.MergeFrom(cm.DeepCopy())
	cm.Data["color"] = "red"

	data, _ := patch.Data(cm)
	fmt.Println(patch.Type(), string(data))
	// Output: application/merge-patch+json {"data":{"color":"red"}}
}

// The locked patch names the resourceVersion it expects.
func ExampleMergeFromWithOptimisticLock() {
	orig := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "settings", ResourceVersion: "42"}}
	cm := orig.DeepCopy()
	cm.Data = map[string]string{"color": "red"}
	data, _ := client.MergeFromWithOptimisticLock(orig).Data(cm)
	fmt.Println(string(data))
	// Output: {"data":{"color":"red"},"metadata":{"resourceVersion":"42"}}
}

// PatchObject sends a Patch computed for obj to obj's object.
func ExamplePatchObject() {
	ctx := context.Background()
	cms, _ := client.For[*corev1.ConfigMap](exampleClientset(&corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "settings"},
		Data:       map[string]string{"color": "blue", "size": "L"},
	}))
	cm, _ := cms.Get(ctx, "default", "settings", metav1.GetOptions{})
	orig := cm.DeepCopy()
	cm.Data["color"] = "red"
	got, err := client.PatchObject(ctx, cms, cm, client.MergeFrom(orig), metav1.PatchOptions{})
	fmt.Println(got.Data, err)
	// Output: map[color:red size:L] <nil>
}

// IgnoreNotFound makes "already gone" a success.
func ExampleIgnoreNotFound() {
	ctx := context.Background()
	cms, _ := client.For[*corev1.ConfigMap](exampleClientset())
	err := cms.Delete(ctx, "default", "gone", metav1.DeleteOptions{})
	fmt.Println(apierrors.IsNotFound(err), client.IgnoreNotFound(err))
	// Output: true <nil>
}

// A delete with preconditions removes the object only if it is still the one that was read.
func ExamplePreconditions() {
	ctx := context.Background()
	cms, _ := client.For[*corev1.ConfigMap](exampleClientset(&corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "settings"},
	}))
	read, _ := cms.Get(ctx, "default", "settings", metav1.GetOptions{})
	_, _ = cms.Patch(ctx, "default", "settings", types.MergePatchType, []byte(`{"data":{"x":"y"}}`), metav1.PatchOptions{})

	err := cms.Delete(ctx, "default", "settings", metav1.DeleteOptions{Preconditions: client.Preconditions(read)})
	fmt.Println(apierrors.IsConflict(err))
	// Output: true
}

// A cached client reads an informer's cache and writes to the API server.
func ExampleNewCached() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cs := exampleClientset(&corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "settings"},
		Data:       map[string]string{"color": "blue"},
	})
	factory := informer.NewFactory(cs, informer.Options{})
	defer factory.Shutdown()
	inf, _ := informer.For[*corev1.ConfigMap](factory)
	factory.Start(ctx)
	if err := factory.WaitForCacheSync(ctx); err != nil {
		fmt.Println(err)
		return
	}

	direct, _ := client.For[*corev1.ConfigMap](cs)
	cms, _ := client.NewCached(direct, inf.Lister())
	cm, _ := cms.Get(ctx, "default", "settings", metav1.GetOptions{}) // no request
	cm.Data["color"] = "red"                                          // a copy: the cache is untouched
	updated, err := cms.Update(ctx, cm, metav1.UpdateOptions{})       // to the API server
	fmt.Println(updated.Data["color"], err)
	// Output: red <nil>
}
