package fakecluster_test

import (
	"context"
	"net/http"
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

var (
	gvr     = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	widgets = fakecluster.Resource{GVR: gvr, Kind: "Widget", Namespaced: true, StatusSubresource: true}
)

func widget(name string, size int64) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("example.com/v1")
	u.SetKind("Widget")
	u.SetNamespace("default")
	u.SetName(name)
	_ = unstructured.SetNestedField(u.Object, size, "spec", "size")
	return u
}

func newClient(t *testing.T, seed ...*unstructured.Unstructured) dynamic.ResourceInterface {
	t.Helper()
	objs := make([]runtime.Object, len(seed))
	for i, u := range seed {
		objs[i] = u
	}
	c, err := fakecluster.NewWithOptions(fakecluster.Options{Resources: []fakecluster.Resource{widgets}, Objects: objs})
	require.NoError(t, err)
	return c.Dynamic().Resource(gvr).Namespace("default")
}

func TestCreateStampsAndDropsStatus(t *testing.T) {
	ctx := context.Background()
	c := newClient(t)
	w := widget("", 1)
	w.SetGenerateName("w-")
	_ = unstructured.SetNestedField(w.Object, int64(9), "status", "seen")

	a, err := c.Create(ctx, w, metav1.CreateOptions{})
	require.NoError(t, err)
	b, err := c.Create(ctx, w, metav1.CreateOptions{})
	require.NoError(t, err)
	for _, got := range []*unstructured.Unstructured{a, b} {
		assert.Regexp(t, `^w-[a-z0-9]{5}$`, got.GetName())
		assert.NotEmpty(t, got.GetUID())
		assert.NotEmpty(t, got.GetResourceVersion())
		assert.Equal(t, int64(1), got.GetGeneration())
		ts := got.GetCreationTimestamp()
		assert.False(t, ts.IsZero())
		_, found, _ := unstructured.NestedFieldNoCopy(got.Object, "status")
		assert.False(t, found, "status is written through /status only")
	}
	assert.NotEqual(t, a.GetUID(), b.GetUID())
	assert.NotEqual(t, a.GetResourceVersion(), b.GetResourceVersion())

	stale := widget("x", 1)
	stale.SetResourceVersion("3")
	_, err = c.Create(ctx, stale, metav1.CreateOptions{})
	var st apierrors.APIStatus
	require.ErrorAs(t, err, &st)
	assert.Equal(t, int32(500), st.Status().Code, "resourceVersion on create: a 500, as kube-apiserver's storage answers it: %v", err)
	_, err = c.Create(ctx, widget("", 1), metav1.CreateOptions{})
	assert.True(t, apierrors.IsInvalid(err), "no name: %v", err)
}

func TestUpdateKeepsStatusAndBumpsGenerationOnSpecChange(t *testing.T) {
	ctx := context.Background()
	c := newClient(t, widget("w", 1))
	got, err := c.Get(ctx, "w", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, int64(1), got.GetGeneration(), "seeds are stamped")
	uid := got.GetUID()

	// Status through /status: generation unchanged, spec untouched even if the client's copy
	// had another spec.
	withStatus := got.DeepCopy()
	_ = unstructured.SetNestedField(withStatus.Object, int64(5), "status", "seen")
	_ = unstructured.SetNestedField(withStatus.Object, int64(100), "spec", "size")
	st, err := c.UpdateStatus(ctx, withStatus, metav1.UpdateOptions{})
	require.NoError(t, err)
	size, _, _ := unstructured.NestedInt64(st.Object, "spec", "size")
	seen, _, _ := unstructured.NestedInt64(st.Object, "status", "seen")
	assert.Equal(t, int64(1), size, "a status update changes only status")
	assert.Equal(t, int64(5), seen)
	assert.Equal(t, int64(1), st.GetGeneration())
	assert.NotEqual(t, got.GetResourceVersion(), st.GetResourceVersion())

	// The stale copy conflicts.
	_, err = c.Update(ctx, got, metav1.UpdateOptions{})
	assert.True(t, apierrors.IsConflict(err), "stale resourceVersion: %v", err)

	// A spec change through the main resource: status kept, generation bumped, UID kept.
	next := st.DeepCopy()
	_ = unstructured.SetNestedField(next.Object, int64(2), "spec", "size")
	unstructured.RemoveNestedField(next.Object, "status")
	next.SetUID("")
	up, err := c.Update(ctx, next, metav1.UpdateOptions{})
	require.NoError(t, err)
	seen, _, _ = unstructured.NestedInt64(up.Object, "status", "seen")
	assert.Equal(t, int64(5), seen, "the main resource keeps the stored status")
	assert.Equal(t, int64(2), up.GetGeneration())
	assert.Equal(t, uid, up.GetUID())

	// A metadata-only change does not bump generation.
	lbl := up.DeepCopy()
	lbl.SetLabels(map[string]string{"a": "b"})
	up2, err := c.Update(ctx, lbl, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.Equal(t, int64(2), up2.GetGeneration())

	wrongUID := up2.DeepCopy()
	wrongUID.SetUID("other")
	_, err = c.Update(ctx, wrongUID, metav1.UpdateOptions{})
	assert.True(t, apierrors.IsConflict(err), "UID precondition: %v", err)
}

func TestPatches(t *testing.T) {
	ctx := context.Background()
	c := newClient(t, widget("w", 1))
	got, err := c.Get(ctx, "w", metav1.GetOptions{})
	require.NoError(t, err)

	p, err := c.Patch(ctx, "w", types.MergePatchType, []byte(`{"spec":{"size":3}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	size, _, _ := unstructured.NestedInt64(p.Object, "spec", "size")
	assert.Equal(t, int64(3), size)
	assert.Equal(t, int64(2), p.GetGeneration())

	_, err = c.Patch(ctx, "w", types.MergePatchType,
		[]byte(`{"metadata":{"resourceVersion":"`+got.GetResourceVersion()+`"},"spec":{"size":4}}`), metav1.PatchOptions{})
	assert.True(t, apierrors.IsConflict(err), "a resourceVersion in a patch is a precondition: %v", err)

	p, err = c.Patch(ctx, "w", types.JSONPatchType, []byte(`[{"op":"replace","path":"/status","value":{"seen":7}}]`),
		metav1.PatchOptions{}, "status")
	require.NoError(t, err)
	seen, _, _ := unstructured.NestedInt64(p.Object, "status", "seen")
	assert.Equal(t, int64(7), seen)
	assert.Equal(t, int64(2), p.GetGeneration(), "status patches leave generation alone")

	_, err = c.Patch(ctx, "w", types.StrategicMergePatchType, []byte(`{"spec":{"size":5}}`), metav1.PatchOptions{})
	var status apierrors.APIStatus
	require.ErrorAs(t, err, &status)
	assert.Equal(t, int32(http.StatusUnsupportedMediaType), status.Status().Code, "custom resources take no strategic merge patch")

	_, err = c.Patch(ctx, "missing", types.MergePatchType, []byte(`{}`), metav1.PatchOptions{})
	assert.True(t, apierrors.IsNotFound(err), "%v", err)
}

func TestNewRejectsBadInput(t *testing.T) {
	for name, r := range map[string]fakecluster.Resource{
		"no kind":     {GVR: gvr},
		"no version":  {GVR: schema.GroupVersionResource{Group: "example.com", Resource: "widgets"}, Kind: "Widget"},
		"no resource": {GVR: schema.GroupVersionResource{Group: "example.com", Version: "v1"}, Kind: "Widget"},
		"a list kind": {GVR: gvr, Kind: "WidgetList"},
	} {
		_, err := fakecluster.NewWithOptions(fakecluster.Options{Resources: []fakecluster.Resource{r}})
		assert.ErrorContains(t, err, "Resources[0]", name)
	}
	_, err := fakecluster.NewWithOptions(fakecluster.Options{Objects: []runtime.Object{nil}})
	assert.ErrorContains(t, err, "seed object 0 is nil")
	_, err = fakecluster.NewWithOptions(fakecluster.Options{Objects: []runtime.Object{&unstructured.Unstructured{Object: map[string]any{}}}})
	assert.ErrorContains(t, err, "needs apiVersion and kind")
	_, err = fakecluster.NewWithOptions(fakecluster.Options{Objects: []runtime.Object{widget("", 1)}})
	assert.ErrorContains(t, err, "needs a name")
}

const widgetCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, listKind: WidgetList}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
`

// Installing a CRD, as a controller does at start-up, declares its resource and reports it
// Established, so customresource.EnsureCRDFromYAML returns and the resource is served with its
// status subresource.
func TestCreatingACRDServesItsResource(t *testing.T) {
	ctx := context.Background()
	c, err := fakecluster.New()
	require.NoError(t, err)
	_, err = c.Dynamic().Resource(gvr).Namespace("default").List(ctx, metav1.ListOptions{})
	require.ErrorIs(t, err, fakecluster.ErrUndeclaredResource, "not served before the CRD exists")

	require.NoError(t, customresource.EnsureCRDFromYAML(ctx, c.Dynamic(), []byte(widgetCRD)))
	crd, err := c.Dynamic().Resource(fakecluster.CRDResource).Get(ctx, "widgets.example.com", metav1.GetOptions{})
	require.NoError(t, err)
	stored, _, _ := unstructured.NestedStringSlice(crd.Object, "status", "storedVersions")
	assert.Equal(t, []string{"v1"}, stored)

	res := c.Dynamic().Resource(gvr).Namespace("default")
	w, err := res.Create(ctx, widget("w", 1), metav1.CreateOptions{})
	require.NoError(t, err)
	w.Object["status"] = map[string]any{"seen": int64(1)}
	w.Object["spec"] = map[string]any{"size": int64(5)}
	st, err := res.UpdateStatus(ctx, w, metav1.UpdateOptions{})
	require.NoError(t, err)
	size, _, _ := unstructured.NestedInt64(st.Object, "spec", "size")
	assert.Equal(t, int64(1), size, "the CRD's status subresource is honoured")

	// A seeded CRD declares its resource too.
	crdObj := crd.DeepCopy()
	crdObj.SetResourceVersion("")
	seeded, err := fakecluster.New(crdObj)
	require.NoError(t, err)
	_, err = seeded.Dynamic().Resource(gvr).Namespace("default").List(ctx, metav1.ListOptions{})
	require.NoError(t, err)

	bad := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "broken.example.com"},
	}}
	_, err = c.Dynamic().Resource(fakecluster.CRDResource).Create(ctx, bad, metav1.CreateOptions{})
	assert.True(t, apierrors.IsBadRequest(err), "%v", err)
}

// An unstructured object holding a value JSON cannot (a Go int) is refused with an error
// naming the field, for a seed and for a write: never a panic.
func TestNonJSONValuesAreAnError(t *testing.T) {
	bad := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"namespace": "default", "name": "w"},
		"spec":     map[string]any{"sizes": []any{int64(1), 2}},
	}}
	_, err := fakecluster.NewWithOptions(fakecluster.Options{Objects: []runtime.Object{bad}})
	require.Error(t, err)
	assert.ErrorContains(t, err, "field spec.sizes[1]: int is not a JSON value")

	c, err := fakecluster.NewWithOptions(fakecluster.Options{Resources: []fakecluster.Resource{
		{GVR: schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}, Kind: "Widget", Namespaced: true},
	}})
	require.NoError(t, err)
	_, err = c.Dynamic().Resource(schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}).
		Namespace("default").Create(t.Context(), bad, metav1.CreateOptions{})
	assert.True(t, apierrors.IsBadRequest(err), "%v", err)
}
