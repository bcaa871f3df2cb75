package fencehook_test

import (
	"context"
	"fmt"
	"reflect"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ctrlkit/ctrlkit/internal/fencehook"
)

type printer struct{}

func (printer) Written(obj metav1.Object) {
	fmt.Println("written", obj.GetNamespace()+"/"+obj.GetName(), "at", obj.GetResourceVersion())
}

func (printer) Deleted(t reflect.Type, namespace, name string) {
	fmt.Println("deleted", t, namespace+"/"+name)
}

// A client reports its writes to the recorder in the context; without one, nothing happens.
func Example() {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", ResourceVersion: "7"}}
	fencehook.Written(context.Background(), pod) // no recorder: ignored

	ctx := fencehook.With(context.Background(), printer{})
	fencehook.Written(ctx, pod)
	fencehook.Written(ctx, (*corev1.Pod)(nil)) // a nil object is never reported
	fencehook.Deleted(ctx, reflect.TypeFor[*corev1.Pod](), "ns", "p")
	// Output:
	// written ns/p at 7
	// deleted *v1.Pod ns/p
}
