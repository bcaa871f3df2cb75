package v1beta1

import (
	"bufio"
	"bytes"
	"io"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// parseCRD decodes CRDManifest the way the API machinery does (integers stay int64),
// insisting on exactly one YAML document.
func parseCRD(t *testing.T, manifest []byte) *unstructured.Unstructured {
	t.Helper()
	docs := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(manifest)))
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

func versionsOf(t *testing.T, crd *unstructured.Unstructured) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for _, v := range nested[[]any](t, crd.Object, "spec", "versions") {
		m := v.(map[string]any)
		out[m["name"].(string)] = m
	}
	return out
}

func TestCRDManifestServesBothVersions(t *testing.T) {
	crd := parseCRD(t, CRDManifest)
	require.Equal(t, CRDName, crd.GetName())
	require.Equal(t, GroupName, nested[string](t, crd.Object, "spec", "group"))
	require.Equal(t, Kind, nested[string](t, crd.Object, "spec", "names", "kind"))
	require.Equal(t, "Webhook", nested[string](t, crd.Object, "spec", "conversion", "strategy"))
	require.Equal(t, ConversionPath, nested[string](t, crd.Object, "spec", "conversion", "webhook", "clientConfig", "service", "path"))

	versions := versionsOf(t, crd)
	require.Len(t, versions, 2)
	require.Equal(t, false, versions[Version]["storage"])
	require.Equal(t, true, versions[Version]["served"])
	root := nested[map[string]any](t, versions[Version], "schema", "openAPIV3Schema")
	assertStructural(t, "openAPIV3Schema", root)
	assertSchemaCoversType(t, "PodSet", root, reflect.TypeFor[PodSet]())

	// The v1alpha1 entry is v1alpha1's own CRD's, so that the two manifests never disagree on
	// what v1alpha1 is.
	alpha := parseCRD(t, v1alpha1Manifest(t))
	require.Equal(t, versionsOf(t, alpha)["v1alpha1"], versions["v1alpha1"])
	require.Equal(t, true, versions["v1alpha1"]["storage"])
}

func TestSchemeRegistration(t *testing.T) {
	scheme := runtime.NewScheme()
	require.NoError(t, AddToScheme(scheme))
	kinds, _, err := scheme.ObjectKinds(&PodSet{})
	require.NoError(t, err)
	require.Equal(t, []schema.GroupVersionKind{GVK}, kinds)
	require.Equal(t, "examples.ctrlkit.dev/v1beta1, Resource=podsets", GVR.String())
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
