package customresource_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/ctrlkit/ctrlkit/customresource"
	"github.com/ctrlkit/ctrlkit/examples/podset/api/v1alpha1"
)

// Every test ends with no goroutine left: in particular no Watcher converter.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// newFake returns the dynamic fake client users already use in tests, with PodSet
// lists registered (the fake needs the list kind of every resource it lists).
func newFake(t testing.TB, objs ...*unstructured.Unstructured) *dynamicfake.FakeDynamicClient {
	t.Helper()
	ros := make([]runtime.Object, len(objs))
	for i, o := range objs {
		ros[i] = o
	}
	return dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{v1alpha1.GVR: v1alpha1.ListKind}, ros...)
}

func newClient(t testing.TB, dyn *dynamicfake.FakeDynamicClient, opts ...customresource.Option) *customresource.Client[*v1alpha1.PodSet] {
	t.Helper()
	c, err := customresource.NewClient[*v1alpha1.PodSet](dyn, v1alpha1.GVR, opts...)
	require.NoError(t, err)
	return c
}

func podSet(ns, name string, replicas int32) *v1alpha1.PodSet {
	return &v1alpha1.PodSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": name}},
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

// toUnstructured is the object as the API server would hold it, TypeMeta included.
func toUnstructured(t testing.TB, ps *v1alpha1.PodSet) *unstructured.Unstructured {
	t.Helper()
	ps = ps.DeepCopy()
	ps.TypeMeta = metav1.TypeMeta{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: v1alpha1.Kind}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(ps)
	require.NoError(t, err)
	return &unstructured.Unstructured{Object: m}
}

// malformed is a PodSet whose spec.replicas is a string: the fake stores anything, as a
// CRD with x-kubernetes-preserve-unknown-fields (or an older schema) would.
func malformed(ns, name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1alpha1.SchemeGroupVersion.String(),
		"kind":       v1alpha1.Kind,
		"metadata":   map[string]any{"namespace": ns, "name": name},
		"spec":       map[string]any{"replicas": "three"},
	}}
}

// withoutServerFields drops what the fake (or an API server) fills in, so an object
// read back can be compared with the one sent.
func withoutServerFields(ps *v1alpha1.PodSet) *v1alpha1.PodSet {
	ps = ps.DeepCopy()
	ps.TypeMeta = metav1.TypeMeta{}
	ps.ResourceVersion = ""
	return ps
}

func yamlToJSON(y []byte) ([]byte, error) { return utilyaml.ToJSON(y) }
