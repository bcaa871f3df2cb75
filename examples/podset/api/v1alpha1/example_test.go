package v1alpha1_test

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/ctrlkit/ctrlkit/examples/podset/api/v1alpha1"
)

// A PodSet as a user writes it; DesiredReplicas applies the CRD's default of 1.
func Example() {
	ps := &v1alpha1.PodSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
		Spec: v1alpha1.PodSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx"}}},
			},
		},
	}
	fmt.Println(v1alpha1.GVR.Resource, ps.Name, ps.Spec.DesiredReplicas())

	cp := ps.DeepCopy()
	cp.Spec.Selector.MatchLabels["app"] = "changed"
	fmt.Println(ps.Spec.Selector.MatchLabels["app"])
	// Output:
	// podsets web 1
	// web
}

// AddToScheme registers PodSet and PodSetList, e.g. for a fake dynamic client.
func Example_scheme() {
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		fmt.Println(err)
		return
	}
	kinds, _, _ := scheme.ObjectKinds(&v1alpha1.PodSetList{})
	fmt.Println(kinds[0])
	// Output: examples.ctrlkit.dev/v1alpha1, Kind=PodSetList
}
