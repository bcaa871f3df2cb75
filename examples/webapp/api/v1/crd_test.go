package v1

import (
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/ctrlkit/ctrlkit/customresource"
)

// The committed crd.yaml still fits the Go types: after a change to types.go without make
// generate, this fails and names the fields.
func TestCRDMatchesGoTypes(t *testing.T) {
	require.NoError(t, customresource.VerifyCRD(CRDManifest, Version, &WebApp{}))
}

// parseCRD is CRDManifest as the API machinery decodes it (integers int64).
func parseCRD(t *testing.T) map[string]any {
	t.Helper()
	js, err := utilyaml.ToJSON(CRDManifest)
	require.NoError(t, err)
	crd := &unstructured.Unstructured{}
	require.NoError(t, crd.UnmarshalJSON(js))
	return crd.Object
}

func field[V any](t *testing.T, obj map[string]any, fields ...string) V {
	t.Helper()
	v, found, err := unstructured.NestedFieldNoCopy(obj, fields...)
	require.NoError(t, err)
	require.True(t, found, "%v missing", fields)
	typed, ok := v.(V)
	require.True(t, ok, "%v is %T", fields, v)
	return typed
}

// The markers became what the API promises: names, scope, status subresource, printer
// columns, validation and defaults.
func TestCRDManifestFollowsTheMarkers(t *testing.T) {
	crd := parseCRD(t)
	require.Equal(t, CRDName, field[string](t, crd, "metadata", "name"))
	require.Equal(t, GroupName, field[string](t, crd, "spec", "group"))
	require.Equal(t, "Namespaced", field[string](t, crd, "spec", "scope"))
	require.Equal(t, Kind, field[string](t, crd, "spec", "names", "kind"))
	require.Equal(t, Plural, field[string](t, crd, "spec", "names", "plural"))

	versions := field[[]any](t, crd, "spec", "versions")
	require.Len(t, versions, 1)
	v := versions[0].(map[string]any)
	require.Equal(t, Version, v["name"])
	require.Equal(t, true, v["served"])
	require.Equal(t, true, v["storage"])
	field[map[string]any](t, v, "subresources", "status")

	var columns []string
	for _, c := range field[[]any](t, v, "additionalPrinterColumns") {
		col := c.(map[string]any)
		columns = append(columns, col["name"].(string)+"="+col["jsonPath"].(string))
	}
	require.Equal(t, []string{"Image=.spec.image", "Ready=.status.readyReplicas", "Age=.metadata.creationTimestamp"}, columns)

	spec := field[map[string]any](t, v, "schema", "openAPIV3Schema", "properties", "spec")
	require.Equal(t, []any{"image"}, spec["required"])
	require.Equal(t, int64(1), field[int64](t, spec, "properties", "image", "minLength"))
	require.Equal(t, int64(1), field[int64](t, spec, "properties", "replicas", "default"))
	require.Equal(t, int64(0), field[int64](t, spec, "properties", "replicas", "minimum"))
	require.Equal(t, int64(8080), field[int64](t, spec, "properties", "port", "default"))
	require.Equal(t, int64(1), field[int64](t, spec, "properties", "port", "minimum"))
	require.Equal(t, int64(65535), field[int64](t, spec, "properties", "port", "maximum"))

	conditions := field[map[string]any](t, v, "schema", "openAPIV3Schema", "properties", "status", "properties", "conditions")
	require.Equal(t, "map", conditions["x-kubernetes-list-type"])
	require.Equal(t, []any{"type"}, conditions["x-kubernetes-list-map-keys"])
}

func TestSchemeRegistration(t *testing.T) {
	scheme := runtime.NewScheme()
	require.NoError(t, AddToScheme(scheme))
	kinds, _, err := scheme.ObjectKinds(&WebApp{})
	require.NoError(t, err)
	require.Equal(t, []schema.GroupVersionKind{GVK}, kinds)
	kinds, _, err = scheme.ObjectKinds(&WebAppList{})
	require.NoError(t, err)
	require.Equal(t, []schema.GroupVersionKind{GroupVersion.WithKind("WebAppList")}, kinds)
	require.Equal(t, "examples.ctrlkit.dev/v1, Resource=webapps", GVR.String())
	require.Equal(t, "webapps.examples.ctrlkit.dev", CRDName)
}
