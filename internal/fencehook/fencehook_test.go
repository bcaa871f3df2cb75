package fencehook_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ctrlkit/ctrlkit/internal/fencehook"
)

type printer struct{}

func (printer) Written(gr schema.GroupResource, obj metav1.Object) {
	fmt.Println("written", gr, obj.GetNamespace()+"/"+obj.GetName(), "at", obj.GetResourceVersion())
}

func (printer) Deleted(gr schema.GroupResource, namespace, name string) {
	fmt.Println("deleted", gr, namespace+"/"+name)
}

// A client reports its writes to the recorder in the context; without one, nothing happens.
func Example() {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", ResourceVersion: "7"}}
	pods := schema.GroupResource{Resource: "pods"}
	fencehook.Written(context.Background(), pods, pod) // no recorder: ignored

	ctx := fencehook.With(context.Background(), printer{})
	fencehook.Written(ctx, pods, pod)
	fencehook.Written(ctx, pods, (*corev1.Pod)(nil)) // a nil object is never reported
	fencehook.Deleted(ctx, pods, "ns", "p")
	// Output:
	// written pods ns/p at 7
	// deleted pods ns/p
}
