package v1alpha1

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ctrlkit/ctrlkit/customresource"
	"github.com/ctrlkit/ctrlkit/examples/podset/api/internal/crdtest"
)

// parseCRD is CRDManifest parsed; nested reads a field of it (see crdtest).
func parseCRD(t *testing.T) *unstructured.Unstructured { return crdtest.Parse(t, CRDManifest) }

func nested[V any](t *testing.T, obj map[string]any, fields ...string) V {
	t.Helper()
	return crdtest.Nested[V](t, obj, fields...)
}

func TestCRDManifestMatchesGoConstants(t *testing.T) {
	crd := parseCRD(t)
	require.Equal(t, "apiextensions.k8s.io/v1", crd.GetAPIVersion())
	require.Equal(t, "CustomResourceDefinition", crd.GetKind())
	require.Equal(t, CRDName, crd.GetName())
	require.Equal(t, GVR.Resource+"."+GVR.Group, crd.GetName(), "a CRD's name is <plural>.<group>")

	require.Equal(t, GroupName, nested[string](t, crd.Object, "spec", "group"))
	require.Equal(t, "Namespaced", nested[string](t, crd.Object, "spec", "scope"))
	require.Equal(t, Kind, nested[string](t, crd.Object, "spec", "names", "kind"))
	require.Equal(t, ListKind, nested[string](t, crd.Object, "spec", "names", "listKind"))
	require.Equal(t, Plural, nested[string](t, crd.Object, "spec", "names", "plural"))
	require.Equal(t, Singular, nested[string](t, crd.Object, "spec", "names", "singular"))
	require.Equal(t, reflect.TypeFor[PodSet]().Name(), Kind)
	require.Equal(t, reflect.TypeFor[PodSetList]().Name(), ListKind)

	versions := nested[[]any](t, crd.Object, "spec", "versions")
	require.Len(t, versions, 1)
	v := versions[0].(map[string]any)
	require.Equal(t, Version, v["name"])
	require.Equal(t, true, v["served"])
	require.Equal(t, true, v["storage"])
	nested[map[string]any](t, v, "subresources", "status")

	var columns []string
	for _, c := range nested[[]any](t, v, "additionalPrinterColumns") {
		columns = append(columns, c.(map[string]any)["jsonPath"].(string))
	}
	require.Equal(t, []string{".spec.replicas", ".status.replicas", ".status.readyReplicas", ".metadata.creationTimestamp"}, columns)
}

// The generated schema still fits the Go types (a forgotten make generate fails here), and
// keeps what the markers ask for.
func TestCRDSchemaMatchesGoTypes(t *testing.T) {
	require.NoError(t, customresource.VerifyCRD(CRDManifest, Version, &PodSet{}))

	crd := parseCRD(t)
	v := nested[[]any](t, crd.Object, "spec", "versions")[0].(map[string]any)
	root := nested[map[string]any](t, v, "schema", "openAPIV3Schema")
	template := nested[map[string]any](t, root, "properties", "spec", "properties", "template")
	require.Equal(t, true, template["x-kubernetes-preserve-unknown-fields"], "the pod template is kept as sent")
	require.Equal(t, "object", template["type"])
	require.Nil(t, template["properties"], "the pod template has no schema of its own")
	replicasDefault := nested[int64](t, root, "properties", "spec", "properties", "replicas", "default")
	require.Equal(t, int64((&PodSetSpec{}).DesiredReplicas()), replicasDefault, "CRD default and DesiredReplicas agree")
	require.Equal(t, int64(0), nested[int64](t, root, "properties", "spec", "properties", "replicas", "minimum"))
	require.Equal(t, []any{"selector", "template"}, nested[[]any](t, root, "properties", "spec", "required"))
	conditions := nested[map[string]any](t, root, "properties", "status", "properties", "conditions")
	require.Equal(t, "map", conditions["x-kubernetes-list-type"])
	require.Equal(t, []any{"type"}, conditions["x-kubernetes-list-map-keys"])
}

func TestSchemeRegistration(t *testing.T) {
	scheme := runtime.NewScheme()
	require.NoError(t, AddToScheme(scheme))

	kinds, _, err := scheme.ObjectKinds(&PodSet{})
	require.NoError(t, err)
	require.Equal(t, []schema.GroupVersionKind{GVK}, kinds)
	kinds, _, err = scheme.ObjectKinds(&PodSetList{})
	require.NoError(t, err)
	require.Equal(t, []schema.GroupVersionKind{SchemeGroupVersion.WithKind(ListKind)}, kinds)

	// metav1.AddToGroupVersion registered the option types the generic API machinery needs.
	_, err = scheme.New(SchemeGroupVersion.WithKind("ListOptions"))
	require.NoError(t, err)

	require.Equal(t, "podsets.examples.ctrlkit.dev", Resource(Plural).String())
	require.Equal(t, SchemeGroupVersion, GroupVersion)
	require.Equal(t, "examples.ctrlkit.dev/v1alpha1, Resource=podsets", GVR.String())
}

// samplePodSet is a PodSet as a user writes it, status as the controller writes it.
func samplePodSet() *PodSet {
	replicas := int32(3)
	return &PodSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: SchemeGroupVersion.String(), Kind: Kind},
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", Generation: 2, Labels: map[string]string{"app": "web"}},
		Spec: PodSetSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27"}}},
			},
		},
		Status: PodSetStatus{
			Replicas: 3, ReadyReplicas: 2, ObservedGeneration: 2,
			Conditions: []metav1.Condition{{
				Type: ConditionAvailable, Status: metav1.ConditionFalse, ObservedGeneration: 2,
				LastTransitionTime: metav1.Unix(1700000000, 0), Reason: "NotReady", Message: "2 of 3 ready",
			}},
		},
	}
}

// A PodSet survives the trip through unstructured that the dynamic client makes, and
// its JSON field names are the ones the CRD schema and printer columns use.
func TestPodSetUnstructuredRoundTrip(t *testing.T) {
	in := samplePodSet()
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(in)
	require.NoError(t, err)
	require.Equal(t, int64(3), nested[int64](t, u, "spec", "replicas"))
	require.Equal(t, int64(2), nested[int64](t, u, "status", "readyReplicas"))
	require.Equal(t, "web", nested[string](t, u, "spec", "selector", "matchLabels", "app"))

	out := &PodSet{}
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(u, out))
	require.Equal(t, in, out)
}
