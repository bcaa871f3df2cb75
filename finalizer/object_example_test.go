package finalizer_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ctrlkit/ctrlkit/finalizer"
	"github.com/ctrlkit/ctrlkit/testkit/fakecluster"
)

// Code ported from controller-runtime's controllerutil.AddFinalizer puts the finalizer on the
// object in memory and sends it with the write it makes anyway, here the Create.
func ExampleAddToObject() {
	ctx := context.Background()
	cluster, _ := fakecluster.New()
	cms := cluster.Clientset().CoreV1().ConfigMaps("demo")

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "settings"}}
	fmt.Println(finalizer.AddToObject(cm, "example.com/cleanup"))
	fmt.Println(finalizer.AddToObject(cm, "example.com/cleanup"), "(already there)")
	created, err := cms.Create(ctx, cm, metav1.CreateOptions{})
	fmt.Println(created.Finalizers, err)
	// Output:
	// true
	// false (already there)
	// [example.com/cleanup] <nil>
}

// RemoveFromObject edits the object in memory; the Update that follows carries the object's
// resourceVersion, so a stale copy conflicts rather than drops someone else's finalizer.
func ExampleRemoveFromObject() {
	ctx := context.Background()
	cluster, _ := fakecluster.New(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "settings",
		Finalizers: []string{"example.com/cleanup", "example.com/other"}}})
	cms := cluster.Clientset().CoreV1().ConfigMaps("demo")
	cm, _ := cms.Get(ctx, "settings", metav1.GetOptions{})

	fmt.Println(finalizer.RemoveFromObject(cm, "example.com/cleanup"))
	fmt.Println(finalizer.RemoveFromObject(cm, "example.com/cleanup"), "(already gone)")
	fmt.Println(finalizer.Has(cm, "example.com/other"))
	updated, err := cms.Update(ctx, cm, metav1.UpdateOptions{})
	fmt.Println(updated.Finalizers, err)
	// Output:
	// true
	// false (already gone)
	// true
	// [example.com/other] <nil>
}
