package v1beta1_test

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ctrlkit/ctrlkit/examples/podset/api/v1alpha1"
	"github.com/ctrlkit/ctrlkit/examples/podset/api/v1beta1"
)

// A v1alpha1 PodSet converted to the hub, v1beta1, and back.
func Example() {
	old := &v1alpha1.PodSet{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: v1alpha1.PodSetSpec{Replicas: new(int32(3))}}
	hub := &v1beta1.PodSet{}
	if err := old.ConvertTo(hub); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(hub.Name, hub.Spec.Scale.Replicas, hub.Spec.DesiredReplicas())

	back := &v1alpha1.PodSet{}
	if err := back.ConvertFrom(hub); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(*back.Spec.Replicas)
	// Output:
	// web 3 3
	// 3
}
