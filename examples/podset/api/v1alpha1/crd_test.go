package v1alpha1

import (
	"bufio"
	"bytes"
	"io"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// parseCRD decodes CRDManifest the way the API machinery does (integers stay int64),
// insisting on exactly one YAML document.
func parseCRD(t *testing.T) *unstructured.Unstructured {
	t.Helper()
	docs := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(CRDManifest)))
	doc, err := docs.Read()
	require.NoError(t, err)
	_, err = docs.Read()
	require.ErrorIs(t, err, io.EOF, "crd.yaml must hold one document")

	js, err := utilyaml.ToJSON(doc)
	require.NoError(t, err)
	crd := &unstructured.Unstructured{}
	require.NoError(t, crd.UnmarshalJSON(js))
	return crd
}

func nested[V any](t *testing.T, obj map[string]any, fields ...string) V {
	t.Helper()
	v, found, err := unstructured.NestedFieldNoCopy(obj, fields...)
	require.NoError(t, err, strings.Join(fields, "."))
	require.True(t, found, "%s missing", strings.Join(fields, "."))
	typed, ok := v.(V)
	require.True(t, ok, "%s is %T", strings.Join(fields, "."), v)
	return typed
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

// TestCRDSchemaIsStructuralAndCoversGoTypes checks the two ways a hand-written schema
// drifts: a node without a type (the API server rejects non-structural schemas) and a Go
// JSON field with no schema (the API server would prune it from every write) or the
// reverse (a schema for a field the Go type cannot hold).
func TestCRDSchemaIsStructuralAndCoversGoTypes(t *testing.T) {
	crd := parseCRD(t)
	v := nested[[]any](t, crd.Object, "spec", "versions")[0].(map[string]any)
	root := nested[map[string]any](t, v, "schema", "openAPIV3Schema")

	assertStructural(t, "openAPIV3Schema", root)
	assertSchemaCoversType(t, "PodSet", root, reflect.TypeFor[PodSet]())

	template := nested[map[string]any](t, root, "properties", "spec", "properties", "template")
	require.Equal(t, true, template["x-kubernetes-preserve-unknown-fields"], "the pod template is kept as sent")
	replicasDefault := nested[int64](t, root, "properties", "spec", "properties", "replicas", "default")
	require.Equal(t, int64((&PodSetSpec{}).DesiredReplicas()), replicasDefault, "CRD default and DesiredReplicas agree")
}

func assertStructural(t *testing.T, path string, schema map[string]any) {
	t.Helper()
	if _, ok := schema["type"].(string); !ok {
		t.Errorf("%s: schema node has no type", path)
	}
	if props, ok := schema["properties"].(map[string]any); ok {
		for name, p := range props {
			assertStructural(t, path+"."+name, p.(map[string]any))
		}
	}
	if items, ok := schema["items"].(map[string]any); ok {
		assertStructural(t, path+"[]", items)
	}
	if ap, ok := schema["additionalProperties"].(map[string]any); ok {
		assertStructural(t, path+"{}", ap)
	}
}

// assertSchemaCoversType compares the JSON field names of typ (following inline
// embedding, pointers and slices) with the schema's properties, wherever the schema
// lists properties. Nodes without properties (metadata, the preserved pod template,
// maps) are left to the API server.
func assertSchemaCoversType(t *testing.T, path string, schema map[string]any, typ reflect.Type) {
	t.Helper()
	for typ.Kind() == reflect.Pointer || typ.Kind() == reflect.Slice {
		typ = typ.Elem()
		if items, ok := schema["items"].(map[string]any); ok {
			schema = items
		}
	}
	props, ok := schema["properties"].(map[string]any)
	if !ok || typ.Kind() != reflect.Struct {
		return
	}
	goFields := map[string]reflect.Type{}
	collectJSONFields(typ, goFields)
	var missing, stale []string
	for name, ft := range goFields {
		p, ok := props[name].(map[string]any)
		if !ok {
			missing = append(missing, name)
			continue
		}
		assertSchemaCoversType(t, path+"."+name, p, ft)
	}
	for name := range props {
		if _, ok := goFields[name]; !ok {
			stale = append(stale, name)
		}
	}
	slices.Sort(missing)
	slices.Sort(stale)
	require.Empty(t, missing, "%s: Go fields without schema", path)
	require.Empty(t, stale, "%s: schema properties without Go field", path)
}

func collectJSONFields(typ reflect.Type, into map[string]reflect.Type) {
	for f := range typ.Fields() {
		if !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" && (strings.Contains(opts, "inline") || f.Anonymous) {
			collectJSONFields(f.Type, into)
			continue
		}
		if name == "" {
			name = f.Name
		}
		into[name] = f.Type
	}
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
