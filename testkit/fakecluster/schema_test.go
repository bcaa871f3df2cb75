package fakecluster_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/ctrlkit/ctrlkit/customresource"
	"github.com/ctrlkit/ctrlkit/testkit/fakecluster"
)

var gizmosGVR = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "gizmos"}

const gizmoCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gizmos.example.com
spec:
  group: example.com
  names: {kind: Gizmo, listKind: GizmoList, plural: gizmos, singular: gizmo}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            required: [image]
            x-kubernetes-validations:
            - rule: "self.replicas <= 5"
              message: CEL is not evaluated by the fake
            properties:
              image: {type: string, minLength: 1, maxLength: 8, pattern: '^[a-z]+$'}
              replicas: {type: integer, format: int32, minimum: 0, maximum: 10, default: 1}
              ratio: {type: number, minimum: 0, exclusiveMinimum: true, maximum: 1, exclusiveMaximum: true}
              mode: {type: string, enum: [fast, slow], default: fast}
              nick: {type: string, nullable: true}
              tags: {type: array, minItems: 1, maxItems: 2, items: {type: string}}
              labels: {type: object, minProperties: 1, maxProperties: 2, additionalProperties: {type: string}}
              when: {type: string, format: date-time}
              size: {x-kubernetes-int-or-string: true}
              extra: {type: object, x-kubernetes-preserve-unknown-fields: true}
              template:
                type: object
                x-kubernetes-embedded-resource: true
                properties:
                  spec: {type: object, properties: {x: {type: string}}}
              nested:
                type: object
                default: {}
                properties:
                  level: {type: integer, default: 3}
          status:
            type: object
            properties:
              ready: {type: integer, minimum: 0}
  - name: v2
    served: true
    storage: false
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
`

func gizmo(name string, spec map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Gizmo",
		"metadata": map[string]any{"name": name, "namespace": "default"},
		"spec":     spec,
	}}
}

func newGizmos(t *testing.T, seeds ...runtime.Object) (*fakecluster.Cluster, dynamic.ResourceInterface) {
	t.Helper()
	c, err := fakecluster.NewWithOptions(fakecluster.Options{CRDs: [][]byte{[]byte(gizmoCRD)}, Objects: seeds})
	require.NoError(t, err)
	return c, c.Dynamic().Resource(gizmosGVR).Namespace("default")
}

// causes are an Invalid error's causes as "field type", sorted.
func causes(t *testing.T, err error) []string {
	t.Helper()
	require.Error(t, err)
	require.True(t, apierrors.IsInvalid(err), "want 422 Invalid, got %v", err)
	st := err.(apierrors.APIStatus).Status()
	require.Equal(t, metav1.StatusReasonInvalid, st.Reason)
	var out []string
	for _, c := range st.Details.Causes {
		out = append(out, fmt.Sprintf("%s %s", c.Field, c.Type))
	}
	sort.Strings(out)
	return out
}

func TestSchemaDefaultsOnCreateAndUpdate(t *testing.T) {
	ctx := context.Background()
	_, gizmos := newGizmos(t)
	got, err := gizmos.Create(ctx, gizmo("g", map[string]any{"image": "nginx", "mode": nil}), metav1.CreateOptions{})
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"image": "nginx", "replicas": int64(1), "mode": "fast", "nested": map[string]any{"level": int64(3)}},
		got.Object["spec"], "absent fields, and a null in a non-nullable field, get their defaults")

	unstructured.RemoveNestedField(got.Object, "spec", "replicas")
	unstructured.RemoveNestedField(got.Object, "spec", "nested", "level")
	updated, err := gizmos.Update(ctx, got, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.Equal(t, int64(1), updated.Object["spec"].(map[string]any)["replicas"], "defaulted again on update")
	assert.Equal(t, int64(3), updated.Object["spec"].(map[string]any)["nested"].(map[string]any)["level"])
	assert.Equal(t, int64(1), updated.GetGeneration(), "re-defaulted fields are no change")

	patched, err := gizmos.Patch(ctx, "g", types.MergePatchType, []byte(`{"spec":{"mode":null,"replicas":4}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	assert.Equal(t, "fast", patched.Object["spec"].(map[string]any)["mode"], "a patch removing a defaulted field gets the default")
	assert.Equal(t, int64(2), patched.GetGeneration())
}

func TestSchemaValidation(t *testing.T) {
	ctx := context.Background()
	_, gizmos := newGizmos(t)
	for name, tc := range map[string]struct {
		spec map[string]any
		want []string
	}{
		"required":          {map[string]any{}, []string{"spec.image FieldValueRequired"}},
		"type":              {map[string]any{"image": "a", "replicas": "two"}, []string{"spec.replicas FieldValueTypeInvalid"}},
		"maximum":           {map[string]any{"image": "a", "replicas": int64(11)}, []string{"spec.replicas FieldValueInvalid"}},
		"minimum":           {map[string]any{"image": "a", "replicas": int64(-1)}, []string{"spec.replicas FieldValueInvalid"}},
		"exclusive minimum": {map[string]any{"image": "a", "ratio": int64(0)}, []string{"spec.ratio FieldValueInvalid"}},
		"exclusive maximum": {map[string]any{"image": "a", "ratio": 1.0}, []string{"spec.ratio FieldValueInvalid"}},
		"enum":              {map[string]any{"image": "a", "mode": "medium"}, []string{"spec.mode FieldValueNotSupported"}},
		"pattern":           {map[string]any{"image": "A"}, []string{"spec.image FieldValueInvalid"}},
		"minLength":         {map[string]any{"image": ""}, []string{"spec.image FieldValueInvalid"}},
		"maxLength":         {map[string]any{"image": "abcdefghi"}, []string{"spec.image FieldValueTooLong"}},
		"minItems":          {map[string]any{"image": "a", "tags": []any{}}, []string{"spec.tags FieldValueInvalid"}},
		"maxItems":          {map[string]any{"image": "a", "tags": []any{"a", "b", "c"}}, []string{"spec.tags FieldValueTooMany"}},
		"minProperties":     {map[string]any{"image": "a", "labels": map[string]any{}}, []string{"spec.labels FieldValueInvalid"}},
		"maxProperties":     {map[string]any{"image": "a", "labels": map[string]any{"a": "1", "b": "2", "c": "3"}}, []string{"spec.labels FieldValueTooMany"}},
		"additional type":   {map[string]any{"image": "a", "labels": map[string]any{"a": true}}, []string{"spec.labels.a FieldValueTypeInvalid"}},
		"not nullable":      {map[string]any{"image": nil}, []string{"spec.image FieldValueRequired"}}, // pruned, then missing
		"format":            {map[string]any{"image": "a", "when": "today"}, []string{"spec.when FieldValueTypeInvalid"}},
		"int-or-string":     {map[string]any{"image": "a", "size": 1.5}, []string{"spec.size FieldValueTypeInvalid"}},
		"embedded":          {map[string]any{"image": "a", "template": map[string]any{}}, []string{"spec.template.apiVersion FieldValueRequired", "spec.template.kind FieldValueRequired"}},
		"several": {map[string]any{"image": "A", "replicas": int64(11), "mode": "x"},
			[]string{"spec.image FieldValueInvalid", "spec.mode FieldValueNotSupported", "spec.replicas FieldValueInvalid"}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := gizmos.Create(ctx, gizmo("bad", tc.spec), metav1.CreateOptions{})
			assert.Equal(t, tc.want, causes(t, err))
			assert.Contains(t, err.Error(), `Gizmo.example.com "bad" is invalid`)
		})
	}
	// Valid values of each kind pass.
	_, err := gizmos.Create(ctx, gizmo("good", map[string]any{
		"image": "a", "replicas": int64(0), "ratio": 0.5, "mode": "slow", "nick": nil, "tags": []any{"x"},
		"labels": map[string]any{"a": "b"}, "when": "2026-01-02T03:04:05Z", "size": "10%",
		"template": map[string]any{"apiVersion": "v1", "kind": "Pod"},
	}), metav1.CreateOptions{})
	require.NoError(t, err)

	// Update, patch and status are validated too.
	good, err := gizmos.Get(ctx, "good", metav1.GetOptions{})
	require.NoError(t, err)
	_ = unstructured.SetNestedField(good.Object, int64(12), "spec", "replicas")
	_, err = gizmos.Update(ctx, good, metav1.UpdateOptions{})
	assert.Equal(t, []string{"spec.replicas FieldValueInvalid"}, causes(t, err))
	_, err = gizmos.Patch(ctx, "good", types.JSONPatchType, []byte(`[{"op":"replace","path":"/spec/mode","value":"x"}]`), metav1.PatchOptions{})
	assert.Equal(t, []string{"spec.mode FieldValueNotSupported"}, causes(t, err))
	stored, err := gizmos.Get(ctx, "good", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, good.GetResourceVersion(), stored.GetResourceVersion(), "refused writes store nothing")
}

func TestSchemaStatusSubresource(t *testing.T) {
	ctx := context.Background()
	_, gizmos := newGizmos(t)
	g, err := gizmos.Create(ctx, gizmo("g", map[string]any{"image": "a"}), metav1.CreateOptions{})
	require.NoError(t, err)

	g.Object["status"] = map[string]any{"ready": int64(-1)}
	_, err = gizmos.UpdateStatus(ctx, g, metav1.UpdateOptions{})
	assert.Equal(t, []string{"status.ready FieldValueInvalid"}, causes(t, err))
	_, err = gizmos.Patch(ctx, "g", types.MergePatchType, []byte(`{"status":{"ready":"x"}}`), metav1.PatchOptions{}, "status")
	assert.Equal(t, []string{"status.ready FieldValueTypeInvalid"}, causes(t, err))
	assert.Contains(t, err.Error(), "ready in body must be of type integer", "messages name the field relative to status, as the server's")

	g.Object["status"] = map[string]any{"ready": int64(2), "bogus": true}
	got, err := gizmos.UpdateStatus(ctx, g, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"ready": int64(2)}, got.Object["status"], "unknown status fields are pruned")

	// A main-resource update sends an invalid status: it is ignored, not validated.
	got.Object["status"] = map[string]any{"ready": int64(-5)}
	got, err = gizmos.Update(ctx, got, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"ready": int64(2)}, got.Object["status"])
}

func TestSchemaPruning(t *testing.T) {
	ctx := context.Background()
	_, gizmos := newGizmos(t)
	g := gizmo("g", map[string]any{
		"image": "a", "bogus": "x",
		"extra":    map[string]any{"anything": map[string]any{"goes": true}},
		"template": map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "p", "bogus": 1.5}, "spec": map[string]any{"x": "y", "z": "w"}, "other": 1.5},
	})
	g.Object["bogus"] = "top"
	g.Object["metadata"].(map[string]any)["bogus"] = "meta"
	got, err := gizmos.Create(ctx, g, metav1.CreateOptions{})
	require.NoError(t, err)
	assert.NotContains(t, got.Object, "bogus")
	assert.NotContains(t, got.Object["metadata"], "bogus", "metadata keeps ObjectMeta's fields only")
	spec := got.Object["spec"].(map[string]any)
	assert.NotContains(t, spec, "bogus")
	assert.Equal(t, map[string]any{"anything": map[string]any{"goes": true}}, spec["extra"], "x-kubernetes-preserve-unknown-fields keeps everything")
	assert.Equal(t, map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": "p"},
		"spec":     map[string]any{"x": "y"},
	}, spec["template"], "an embedded resource keeps apiVersion, kind and ObjectMeta's metadata; the rest is pruned by its schema")
}

// A version whose schema preserves unknown fields at its root keeps everything.
func TestSchemaPreserveUnknownFieldsVersion(t *testing.T) {
	ctx := context.Background()
	c, _ := newGizmos(t)
	v2 := c.Dynamic().Resource(schema.GroupVersionResource{Group: "example.com", Version: "v2", Resource: "gizmos"}).Namespace("default")
	u := gizmo("free", map[string]any{"anything": true})
	u.SetAPIVersion("example.com/v2")
	u.Object["top"] = "kept"
	got, err := v2.Create(ctx, u, metav1.CreateOptions{})
	require.NoError(t, err)
	assert.Equal(t, "kept", got.Object["top"])
	assert.Equal(t, map[string]any{"anything": true}, got.Object["spec"])
}

// The fake does not evaluate CEL: gizmoCRD's rule (replicas <= 5) would refuse this on an API
// server.
func TestSchemaCELRulesAreIgnored(t *testing.T) {
	_, gizmos := newGizmos(t)
	got, err := gizmos.Create(context.Background(), gizmo("g", map[string]any{"image": "a", "replicas": int64(9)}), metav1.CreateOptions{})
	require.NoError(t, err, "x-kubernetes-validations are not modelled")
	assert.Equal(t, int64(9), got.Object["spec"].(map[string]any)["replicas"])
}

func TestSchemaSeedsArePrunedAndDefaulted(t *testing.T) {
	seed := gizmo("seed", map[string]any{"image": "a", "bogus": 1.5, "replicas": int64(99)})
	_, gizmos := newGizmos(t, seed)
	got, err := gizmos.Get(context.Background(), "seed", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"image": "a", "replicas": int64(99), "mode": "fast", "nested": map[string]any{"level": int64(3)}},
		got.Object["spec"], "as the server's reads would have it; seeds are not validated")

	// Ratcheting: an update that leaves the invalid field alone passes, one that changes it
	// to another invalid value does not.
	got.SetLabels(map[string]string{"a": "b"})
	_ = unstructured.SetNestedField(got.Object, "slow", "spec", "mode")
	got, err = gizmos.Update(context.Background(), got, metav1.UpdateOptions{})
	require.NoError(t, err)
	_ = unstructured.SetNestedField(got.Object, int64(98), "spec", "replicas")
	_, err = gizmos.Update(context.Background(), got, metav1.UpdateOptions{})
	assert.Equal(t, []string{"spec.replicas FieldValueInvalid"}, causes(t, err))
}

func TestSchemaFromResource(t *testing.T) {
	c, err := fakecluster.NewWithOptions(fakecluster.Options{Resources: []fakecluster.Resource{{
		GVR: gvr, Kind: "Widget", Namespaced: true,
		Schema: []byte(`{type: object, properties: {spec: {type: object, properties: {size: {type: integer, default: 2, maximum: 3}}}}}`),
	}}})
	require.NoError(t, err)
	widgets := c.Dynamic().Resource(gvr).Namespace("default")
	w := widget("w", 1)
	unstructured.RemoveNestedField(w.Object, "spec", "size")
	got, err := widgets.Create(context.Background(), w, metav1.CreateOptions{})
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"size": int64(2)}, got.Object["spec"])
	_, err = widgets.Create(context.Background(), widget("big", 4), metav1.CreateOptions{})
	assert.Equal(t, []string{"spec.size FieldValueInvalid"}, causes(t, err))

	_, err = fakecluster.NewWithOptions(fakecluster.Options{Resources: []fakecluster.Resource{{
		GVR: gvr, Kind: "Widget", Schema: []byte(`{type: object, properties: {spec: {properties: {size: {type: integer}}}}}`),
	}}})
	require.ErrorContains(t, err, "openAPIV3Schema.properties[spec].type: Required value")
}

func TestSchemaNonStructuralCRDIsRefused(t *testing.T) {
	c, err := fakecluster.New()
	require.NoError(t, err)
	bad := strings.Replace(gizmoCRD, "          spec:\n            type: object\n", "          spec:\n", 1)
	err = customresource.EnsureCRDFromYAML(context.Background(), c.Dynamic(), []byte(bad))
	require.Error(t, err)
	assert.True(t, apierrors.IsInvalid(err), "422 as from an API server: %v", err)
	assert.Contains(t, err.Error(), `CustomResourceDefinition.apiextensions.k8s.io "gizmos.example.com" is invalid`)
	assert.Contains(t, err.Error(), "spec.versions[0].schema.openAPIV3Schema.properties[spec].type: Required value", "versions with different schemas are named one by one")
	_, err = c.Dynamic().Resource(gizmosGVR).Namespace("default").List(context.Background(), metav1.ListOptions{})
	assert.ErrorIs(t, err, fakecluster.ErrUndeclaredResource, "a refused CRD serves nothing")

	// Created (not seeded) CRDs get their schema too.
	require.NoError(t, customresource.EnsureCRDFromYAML(context.Background(), c.Dynamic(), []byte(gizmoCRD)))
	_, err = c.Dynamic().Resource(gizmosGVR).Namespace("default").Create(context.Background(), gizmo("g", map[string]any{}), metav1.CreateOptions{})
	assert.Equal(t, []string{"spec.image FieldValueRequired"}, causes(t, err))

	_, err = fakecluster.NewWithOptions(fakecluster.Options{CRDs: [][]byte{[]byte("kind: ConfigMap\napiVersion: v1\n")}})
	assert.ErrorContains(t, err, "CRDs[0]")
}

// An updated CRD's schema applies from then on, as on an API server.
func TestSchemaFollowsCRDUpdates(t *testing.T) {
	ctx := context.Background()
	c, gizmos := newGizmos(t)
	_, err := gizmos.Create(ctx, gizmo("g", map[string]any{"image": "a", "replicas": int64(20)}), metav1.CreateOptions{})
	assert.Equal(t, []string{"spec.replicas FieldValueInvalid"}, causes(t, err))

	crds := c.Dynamic().Resource(fakecluster.CRDResource)
	crd, err := crds.Get(ctx, "gizmos.example.com", metav1.GetOptions{})
	require.NoError(t, err)
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	require.NoError(t, unstructured.SetNestedField(versions[0].(map[string]any), int64(30),
		"schema", "openAPIV3Schema", "properties", "spec", "properties", "replicas", "maximum"))
	require.NoError(t, unstructured.SetNestedSlice(crd.Object, versions, "spec", "versions"))
	_, err = crds.Update(ctx, crd, metav1.UpdateOptions{})
	require.NoError(t, err)
	_, err = gizmos.Create(ctx, gizmo("g", map[string]any{"image": "a", "replicas": int64(20)}), metav1.CreateOptions{})
	require.NoError(t, err)
}

// BenchmarkCreateCustomResource is one custom-resource create without a schema (the cost
// before schemas were modelled) and with gizmoCRD's schema applied.
func BenchmarkCreateCustomResource(b *testing.B) {
	run := func(b *testing.B, c *fakecluster.Cluster, gvr schema.GroupVersionResource, spec map[string]any) {
		b.ReportAllocs()
		client := c.Dynamic().Resource(gvr).Namespace("default")
		i := 0
		for b.Loop() {
			u := gizmo(fmt.Sprint("g-", i), spec)
			u.SetAPIVersion(gvr.GroupVersion().String())
			if _, err := client.Create(context.Background(), u, metav1.CreateOptions{}); err != nil {
				b.Fatal(err)
			}
			i++
		}
	}
	spec := map[string]any{"image": "nginx", "tags": []any{"a"}, "labels": map[string]any{"a": "b"}}
	b.Run("no-schema", func(b *testing.B) {
		c, err := fakecluster.NewWithOptions(fakecluster.Options{Resources: []fakecluster.Resource{{GVR: gizmosGVR, Kind: "Gizmo", Namespaced: true, StatusSubresource: true}}})
		require.NoError(b, err)
		run(b, c, gizmosGVR, spec)
	})
	b.Run("schema", func(b *testing.B) {
		c, err := fakecluster.NewWithOptions(fakecluster.Options{CRDs: [][]byte{[]byte(gizmoCRD)}})
		require.NoError(b, err)
		run(b, c, gizmosGVR, spec)
	})
}
