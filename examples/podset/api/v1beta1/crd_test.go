package v1beta1

import (
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ctrlkit/ctrlkit/customresource"
	"github.com/ctrlkit/ctrlkit/examples/podset/api/internal/crdtest"
)

func nested[V any](t *testing.T, obj map[string]any, fields ...string) V {
	t.Helper()
	return crdtest.Nested[V](t, obj, fields...)
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
	crd := crdtest.Parse(t, CRDManifest)
	require.Equal(t, CRDName, crd.GetName())
	require.Equal(t, GroupName, nested[string](t, crd.Object, "spec", "group"))
	require.Equal(t, Kind, nested[string](t, crd.Object, "spec", "names", "kind"))
	require.Equal(t, "Webhook", nested[string](t, crd.Object, "spec", "conversion", "strategy"))
	require.Equal(t, ConversionPath, nested[string](t, crd.Object, "spec", "conversion", "webhook", "clientConfig", "service", "path"))

	versions := versionsOf(t, crd)
	require.Len(t, versions, 2)
	require.Equal(t, false, versions[Version]["storage"])
	require.Equal(t, true, versions[Version]["served"])
	require.NoError(t, customresource.VerifyCRD(CRDManifest, Version, &PodSet{}))
	nested[map[string]any](t, versions[Version], "subresources", "status")

	// The v1alpha1 entry is v1alpha1's own CRD's, so that the two manifests never disagree on
	// what v1alpha1 is (example_test.go checks it against v1alpha1's types).
	alpha := crdtest.Parse(t, v1alpha1Manifest(t))
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
