package customresource_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/ctrlkit/ctrlkit/customresource"
	"github.com/ctrlkit/ctrlkit/examples/podset/api/v1alpha1"
)

// notPointer satisfies Object by value (its metadata is behind embedded pointers), which
// NewClient cannot decode into.
type notPointer struct {
	*metav1.TypeMeta
	*metav1.ObjectMeta
}

func (notPointer) DeepCopyObject() runtime.Object { return nil }

func TestNewClientValidatesInput(t *testing.T) {
	dyn := newFake(t)
	_, err := customresource.NewClient[*v1alpha1.PodSet](nil, v1alpha1.GVR)
	require.ErrorIs(t, err, customresource.ErrInvalidInput)
	require.ErrorContains(t, err, "nil dynamic.Interface")

	_, err = customresource.NewClient[*v1alpha1.PodSet](dyn, schema.GroupVersionResource{Group: "examples.ctrlkit.dev", Resource: "podsets"})
	require.ErrorIs(t, err, customresource.ErrInvalidInput)
	require.ErrorContains(t, err, "needs a version")

	_, err = customresource.NewClient[notPointer](dyn, v1alpha1.GVR)
	require.ErrorIs(t, err, customresource.ErrInvalidInput)
	require.ErrorContains(t, err, "customresource_test.notPointer is not a pointer to a struct")

	_, err = customresource.NewClient[*v1alpha1.PodSet](dyn, v1alpha1.GVR, customresource.WithScheme(runtime.NewScheme()))
	require.ErrorIs(t, err, customresource.ErrInvalidInput)
	require.ErrorContains(t, err, "scheme does not know *v1alpha1.PodSet")

	other := runtime.NewScheme()
	other.AddKnownTypes(schema.GroupVersion{Group: "other.example", Version: "v1"}, &v1alpha1.PodSet{})
	_, err = customresource.NewClient[*v1alpha1.PodSet](dyn, v1alpha1.GVR, customresource.WithScheme(other))
	require.ErrorIs(t, err, customresource.ErrInvalidInput)
	require.ErrorContains(t, err, "not in examples.ctrlkit.dev/v1alpha1")
}

func TestNewClientKind(t *testing.T) {
	dyn := newFake(t)
	// Default: the struct's name.
	require.Equal(t, v1alpha1.GVK, newClient(t, dyn).GroupVersionKind())

	scheme := runtime.NewScheme()
	require.NoError(t, v1alpha1.AddToScheme(scheme))
	require.Equal(t, v1alpha1.GVK, newClient(t, dyn, customresource.WithScheme(scheme)).GroupVersionKind())

	c := newClient(t, dyn, customresource.WithScheme(scheme), customresource.WithKind("Other"))
	require.Equal(t, v1alpha1.SchemeGroupVersion.WithKind("Other"), c.GroupVersionKind(), "WithKind wins")
	require.Equal(t, v1alpha1.GVR, c.Resource())

	u, err := c.ToUnstructured(podSet("default", "a", 1))
	require.NoError(t, err)
	require.Equal(t, "Other", u.GetKind())
	require.Equal(t, "examples.ctrlkit.dev/v1alpha1", u.GetAPIVersion())
}

// lastAction returns the most recent action the fake recorded.
func lastAction(t *testing.T, f interface{ Actions() []clienttesting.Action }) clienttesting.Action {
	t.Helper()
	actions := f.Actions()
	require.NotEmpty(t, actions)
	return actions[len(actions)-1]
}

func TestEveryVerbRoundTripsT(t *testing.T) {
	ctx := context.Background()
	dyn := newFake(t)
	podsets := newClient(t, dyn)

	// Create: TypeMeta left empty by the caller is filled in on the wire; the caller's
	// object is not touched.
	in := podSet("default", "web", 2)
	sent := in.DeepCopy()
	created, err := podsets.Create(ctx, in, metav1.CreateOptions{FieldManager: "test"})
	require.NoError(t, err)
	require.Equal(t, sent, in, "Create must not modify its argument")
	require.Equal(t, withoutServerFields(in), withoutServerFields(created))
	require.Equal(t, v1alpha1.GVK, created.GroupVersionKind())
	create := lastAction(t, dyn).(clienttesting.CreateAction)
	require.Equal(t, "default", create.GetNamespace())
	require.Equal(t, v1alpha1.GVK, create.GetObject().GetObjectKind().GroupVersionKind())

	// Get.
	got, err := podsets.Get(ctx, "default", "web", metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, created, got)

	// Update.
	got.Spec.Replicas = new(int32(5))
	updated, err := podsets.Update(ctx, got, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Equal(t, int32(5), *updated.Spec.Replicas)
	require.Empty(t, lastAction(t, dyn).GetSubresource())

	// UpdateStatus goes to the status subresource.
	updated.Status = v1alpha1.PodSetStatus{Replicas: 5, ReadyReplicas: 4, ObservedGeneration: 1,
		Conditions: []metav1.Condition{{Type: v1alpha1.ConditionAvailable, Status: metav1.ConditionFalse, Reason: "NotReady", Message: "4 of 5", LastTransitionTime: metav1.Unix(1700000000, 0)}}}
	status, err := podsets.UpdateStatus(ctx, updated, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Equal(t, updated.Status, status.Status)
	statusAction := lastAction(t, dyn)
	require.Equal(t, "update", statusAction.GetVerb())
	require.Equal(t, "status", statusAction.GetSubresource())

	// List, namespaced and across namespaces.
	_, err = podsets.Create(ctx, podSet("other", "db", 1), metav1.CreateOptions{})
	require.NoError(t, err)
	list, err := podsets.List(ctx, "default", metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, list.Items, 1)
	require.Equal(t, status, list.Items[0])
	require.NotEmpty(t, list.ResourceVersion)
	everything, err := podsets.List(ctx, metav1.NamespaceAll, metav1.ListOptions{})
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"default/web", "other/db"}, keys(everything.Items))
	selected, err := podsets.List(ctx, "", metav1.ListOptions{LabelSelector: "app=db"})
	require.NoError(t, err)
	require.Equal(t, []string{"other/db"}, keys(selected.Items))

	// Patch with a JSON merge patch (custom resources do not take strategic merge).
	patched, err := podsets.Patch(ctx, "default", "web", types.MergePatchType, []byte(`{"spec":{"replicas":7}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	require.Equal(t, int32(7), *patched.Spec.Replicas)
	require.Equal(t, status.Status, patched.Status)
	patch := lastAction(t, dyn).(clienttesting.PatchAction)
	require.Equal(t, types.MergePatchType, patch.GetPatchType())
	require.Equal(t, "web", patch.GetName())

	// Patch of a subresource.
	patched, err = podsets.Patch(ctx, "default", "web", types.MergePatchType, []byte(`{"status":{"readyReplicas":5}}`), metav1.PatchOptions{}, "status")
	require.NoError(t, err)
	require.Equal(t, int32(5), patched.Status.ReadyReplicas)
	require.Equal(t, "status", lastAction(t, dyn).GetSubresource())

	// Delete.
	require.NoError(t, podsets.Delete(ctx, "default", "web", metav1.DeleteOptions{}))
	_, err = podsets.Get(ctx, "default", "web", metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "got %v", err)
}

func keys(items []*v1alpha1.PodSet) []string {
	out := make([]string, len(items))
	for i, ps := range items {
		out[i] = ps.Namespace + "/" + ps.Name
	}
	return out
}

// serveApplyAsMergePatch makes the fake answer server-side apply. The fake's own apply
// runs a strategic merge patch against *unstructured.Unstructured, which fails for any
// field ("unable to find api field in struct Unstructured"); a JSON merge patch of the
// applied configuration is what apply does for fields with one manager, which is all
// these tests need. Field ownership is the real API server's business, not this
// client's.
func serveApplyAsMergePatch(dyn *dynamicfake.FakeDynamicClient) {
	dyn.PrependReactor("patch", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
		p := a.(clienttesting.PatchActionImpl)
		if p.GetPatchType() != types.ApplyPatchType {
			return false, nil, nil
		}
		tracker := dyn.Tracker()
		current, err := tracker.Get(p.GetResource(), p.GetNamespace(), p.GetName())
		if err != nil {
			return true, nil, err
		}
		old, err := json.Marshal(current)
		if err != nil {
			return true, nil, err
		}
		merged, err := jsonpatch.MergePatch(old, p.GetPatch())
		if err != nil {
			return true, nil, err
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(merged); err != nil {
			return true, nil, err
		}
		if err := tracker.Update(p.GetResource(), u, p.GetNamespace()); err != nil {
			return true, nil, err
		}
		return true, u, nil
	})
}

func TestApply(t *testing.T) {
	ctx := context.Background()
	dyn := newFake(t, toUnstructured(t, podSet("default", "web", 1)))
	serveApplyAsMergePatch(dyn)
	podsets := newClient(t, dyn)

	// Apply a T read back from the server: managedFields must not go out with it.
	current, err := podsets.Get(ctx, "default", "web", metav1.GetOptions{})
	require.NoError(t, err)
	current.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "someone", Operation: metav1.ManagedFieldsOperationApply}}
	current.Spec.Replicas = new(int32(3))
	applied, err := podsets.Apply(ctx, current, metav1.ApplyOptions{FieldManager: "podset-controller", Force: true})
	require.NoError(t, err)
	require.Equal(t, int32(3), *applied.Spec.Replicas)
	action := lastAction(t, dyn).(clienttesting.PatchActionImpl)
	require.Equal(t, types.ApplyPatchType, action.GetPatchType())
	require.Equal(t, "podset-controller", action.PatchOptions.FieldManager)
	require.True(t, *action.PatchOptions.Force)
	var body map[string]any
	require.NoError(t, json.Unmarshal(action.GetPatch(), &body))
	require.Equal(t, "examples.ctrlkit.dev/v1alpha1", body["apiVersion"])
	require.Equal(t, "PodSet", body["kind"])
	metadata := body["metadata"].(map[string]any)
	require.NotContains(t, metadata, "managedFields")
	require.NotContains(t, metadata, "creationTimestamp", "a null creationTimestamp is not applied")

	// An unstructured apply configuration holds only the fields the manager owns; it
	// gets apiVersion and kind, and the caller's map is left alone.
	config := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"namespace": "default", "name": "web"},
		"spec":     map[string]any{"replicas": int64(4)},
	}}
	applied, err = podsets.ApplyUnstructured(ctx, config, metav1.ApplyOptions{FieldManager: "scaler"})
	require.NoError(t, err)
	require.Equal(t, int32(4), *applied.Spec.Replicas)
	require.Equal(t, "web", applied.Spec.Selector.MatchLabels["app"], "fields not in the configuration stay")
	require.NotContains(t, config.Object, "kind")
	action = lastAction(t, dyn).(clienttesting.PatchActionImpl)
	require.JSONEq(t, `{"apiVersion":"examples.ctrlkit.dev/v1alpha1","kind":"PodSet","metadata":{"namespace":"default","name":"web"},"spec":{"replicas":4}}`, string(action.GetPatch()))
	require.False(t, *action.PatchOptions.Force)

	// ApplyStatus goes to the status subresource.
	current.Status.ReadyReplicas = 2
	applied, err = podsets.ApplyStatus(ctx, current, metav1.ApplyOptions{FieldManager: "podset-controller"})
	require.NoError(t, err)
	require.Equal(t, int32(2), applied.Status.ReadyReplicas)
	require.Equal(t, "status", lastAction(t, dyn).GetSubresource())
}

func TestApplyRefusesBadInputBeforeCallingTheServer(t *testing.T) {
	ctx := context.Background()
	dyn := newFake(t)
	podsets := newClient(t, dyn)

	_, err := podsets.Apply(ctx, podSet("default", "web", 1), metav1.ApplyOptions{})
	require.ErrorIs(t, err, customresource.ErrInvalidInput)
	require.ErrorContains(t, err, `"web": ApplyOptions.FieldManager is required`)

	_, err = podsets.Apply(ctx, podSet("default", "", 1), metav1.ApplyOptions{FieldManager: "m"})
	require.ErrorIs(t, err, customresource.ErrInvalidInput)
	require.ErrorContains(t, err, "no metadata.name")

	_, err = podsets.ApplyUnstructured(ctx, nil, metav1.ApplyOptions{FieldManager: "m"})
	require.ErrorIs(t, err, customresource.ErrInvalidInput)

	_, err = podsets.Apply(ctx, nil, metav1.ApplyOptions{FieldManager: "m"})
	require.ErrorIs(t, err, customresource.ErrInvalidInput)
	require.Empty(t, dyn.Actions())
}

func TestNilObjectIsAnErrorNotAPanic(t *testing.T) {
	ctx := context.Background()
	dyn := newFake(t)
	podsets := newClient(t, dyn)
	_, err := podsets.Create(ctx, nil, metav1.CreateOptions{})
	require.ErrorIs(t, err, customresource.ErrInvalidInput)
	require.ErrorContains(t, err, "nil *v1alpha1.PodSet")
	_, err = podsets.Update(ctx, nil, metav1.UpdateOptions{})
	require.ErrorIs(t, err, customresource.ErrInvalidInput)
	_, err = podsets.UpdateStatus(ctx, nil, metav1.UpdateOptions{})
	require.ErrorIs(t, err, customresource.ErrInvalidInput)
	require.Empty(t, dyn.Actions())

	_, err = podsets.FromUnstructured(nil)
	var convErr *customresource.ConversionError
	require.ErrorAs(t, err, &convErr)
}

func TestDeleteCollection(t *testing.T) {
	ctx := context.Background()
	dyn := newFake(t)
	// The fake's tracker has no delete-collection reaction; record the request instead.
	var got clienttesting.DeleteCollectionAction
	dyn.PrependReactor("delete-collection", "podsets", func(a clienttesting.Action) (bool, runtime.Object, error) {
		got = a.(clienttesting.DeleteCollectionAction)
		return true, nil, nil
	})
	require.NoError(t, newClient(t, dyn).DeleteCollection(ctx, "default", metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "app=web"}))
	require.NotNil(t, got)
	require.Equal(t, "default", got.GetNamespace())
	require.Equal(t, "app=web", got.GetListRestrictions().Labels.String())
}

func TestListKeepsListMetadata(t *testing.T) {
	ctx := context.Background()
	dyn := newFake(t)
	dyn.PrependReactor("list", "podsets", func(clienttesting.Action) (bool, runtime.Object, error) {
		l := &unstructured.UnstructuredList{}
		l.SetAPIVersion("examples.ctrlkit.dev/v1alpha1")
		l.SetKind("PodSetList")
		l.SetResourceVersion("42")
		l.SetContinue("next-page")
		l.SetRemainingItemCount(new(int64(7)))
		l.Items = []unstructured.Unstructured{*toUnstructured(t, podSet("default", "a", 1))}
		return true, l, nil
	})
	list, err := newClient(t, dyn).List(ctx, "", metav1.ListOptions{Limit: 1})
	require.NoError(t, err)
	require.Equal(t, "42", list.ResourceVersion)
	require.Equal(t, "next-page", list.Continue)
	require.Equal(t, int64(7), *list.RemainingItemCount)
	require.Equal(t, []string{"default/a"}, keys(list.Items))
}

func TestConversionFailureNamesTheObject(t *testing.T) {
	ctx := context.Background()
	dyn := newFake(t, toUnstructured(t, podSet("default", "good", 1)), malformed("default", "bad"))
	podsets := newClient(t, dyn)

	_, err := podsets.Get(ctx, "default", "bad", metav1.GetOptions{})
	var convErr *customresource.ConversionError
	require.ErrorAs(t, err, &convErr)
	assert.Equal(t, v1alpha1.GVR, convErr.Resource)
	assert.Equal(t, "default", convErr.Namespace)
	assert.Equal(t, "bad", convErr.Name)
	assert.Equal(t, "*v1alpha1.PodSet", convErr.GoType)
	assert.False(t, convErr.ToUnstructured)
	assert.NotNil(t, errors.Unwrap(err))
	assert.Contains(t, err.Error(), `customresource: cannot convert podsets.v1alpha1.examples.ctrlkit.dev "default/bad" to *v1alpha1.PodSet: `)

	// One bad item fails the List, naming that item.
	_, err = podsets.List(ctx, "default", metav1.ListOptions{})
	require.ErrorAs(t, err, &convErr)
	assert.Equal(t, "bad", convErr.Name)

	// An object of another kind would decode silently into T; it is refused.
	wrongKind := toUnstructured(t, podSet("default", "pod", 1))
	wrongKind.SetKind("Pod")
	_, err = podsets.FromUnstructured(wrongKind)
	require.ErrorAs(t, err, &convErr)
	assert.Contains(t, err.Error(), "kind is Pod, want PodSet")
	wrongVersion := toUnstructured(t, podSet("default", "old", 1))
	wrongVersion.SetAPIVersion("examples.ctrlkit.dev/v1")
	_, err = podsets.FromUnstructured(wrongVersion)
	require.ErrorAs(t, err, &convErr)
	assert.Contains(t, err.Error(), "apiVersion is examples.ctrlkit.dev/v1, want examples.ctrlkit.dev/v1alpha1")
}

// unencodable fails in its MarshalJSON, the one way a Go value fails to become
// unstructured.
type unencodable struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              brokenSpec `json:"spec"`
}

type brokenSpec struct{}

func (brokenSpec) MarshalJSON() ([]byte, error) { return nil, errors.New("spec refuses to be encoded") }

func (u *unencodable) DeepCopyObject() runtime.Object {
	c := *u
	u.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	return &c
}

func TestEncodingFailureNamesTheObject(t *testing.T) {
	dyn := newFake(t)
	c, err := customresource.NewClient[*unencodable](dyn, v1alpha1.GVR, customresource.WithKind("PodSet"))
	require.NoError(t, err)
	_, err = c.Create(context.Background(), &unencodable{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "x"}}, metav1.CreateOptions{})
	var convErr *customresource.ConversionError
	require.ErrorAs(t, err, &convErr)
	assert.True(t, convErr.ToUnstructured)
	assert.Equal(t, "x", convErr.Name)
	assert.Contains(t, err.Error(), `cannot convert *customresource_test.unencodable "default/x" to unstructured for podsets.v1alpha1.examples.ctrlkit.dev`)
	assert.Contains(t, err.Error(), "spec refuses to be encoded")
	assert.Empty(t, dyn.Actions())
}

func TestClusterScopedClient(t *testing.T) {
	ctx := context.Background()
	dyn := newFake(t)
	// The same PodSet type served as if it were cluster-scoped: no namespace on the wire.
	c := newClient(t, dyn, customresource.WithClusterScope())
	require.False(t, c.Namespaced())
	created, err := c.Create(ctx, podSet("", "global", 1), metav1.CreateOptions{})
	require.NoError(t, err)
	require.Empty(t, created.Namespace)
	require.Empty(t, lastAction(t, dyn).GetNamespace())
	got, err := c.Get(ctx, "", "global", metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, created, got)

	// A namespace given to a cluster-scoped resource is refused before any request.
	before := len(dyn.Actions())
	_, err = c.Get(ctx, "default", "global", metav1.GetOptions{})
	require.ErrorIs(t, err, customresource.ErrInvalidInput)
	require.ErrorContains(t, err, `get podsets.v1alpha1.examples.ctrlkit.dev "default/global": the resource is cluster-scoped`)
	require.Len(t, dyn.Actions(), before)
}

func TestErrorsFromTheServerPassThrough(t *testing.T) {
	ctx := context.Background()
	dyn := newFake(t)
	dyn.PrependReactor("*", "podsets", func(a clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(v1alpha1.Resource("podsets"), "web", errors.New("rbac says no"))
	})
	podsets := newClient(t, dyn)
	_, err := podsets.Get(ctx, "default", "web", metav1.GetOptions{})
	require.True(t, apierrors.IsForbidden(err))
	_, err = podsets.Create(ctx, podSet("default", "web", 1), metav1.CreateOptions{})
	require.True(t, apierrors.IsForbidden(err))
	_, err = podsets.List(ctx, "default", metav1.ListOptions{})
	require.True(t, apierrors.IsForbidden(err))
	require.True(t, apierrors.IsForbidden(podsets.Delete(ctx, "default", "web", metav1.DeleteOptions{})))
}

// Namespace mistakes on a namespaced resource are refused before any request, naming the
// object and the resource.
func TestNamespaceRulesAreCheckedBeforeAnyRequest(t *testing.T) {
	ctx := context.Background()
	dyn := newFake(t)
	podsets := newClient(t, dyn)
	require.True(t, podsets.Namespaced())

	_, err := podsets.Get(ctx, "", "web", metav1.GetOptions{})
	require.ErrorIs(t, err, customresource.ErrInvalidInput)
	require.EqualError(t, err, `customresource: get podsets.v1alpha1.examples.ctrlkit.dev "web": the resource is namespaced and no namespace was given (use WithClusterScope for a cluster-scoped resource): invalid input`)
	_, err = podsets.Create(ctx, podSet("", "web", 1), metav1.CreateOptions{})
	require.ErrorIs(t, err, customresource.ErrInvalidInput)
	_, err = podsets.Update(ctx, podSet("", "web", 1), metav1.UpdateOptions{})
	require.ErrorIs(t, err, customresource.ErrInvalidInput)
	_, err = podsets.UpdateStatus(ctx, podSet("", "web", 1), metav1.UpdateOptions{})
	require.ErrorIs(t, err, customresource.ErrInvalidInput)
	_, err = podsets.Apply(ctx, podSet("", "web", 1), metav1.ApplyOptions{FieldManager: "m"})
	require.ErrorIs(t, err, customresource.ErrInvalidInput)
	_, err = podsets.Patch(ctx, "", "web", types.MergePatchType, []byte(`{}`), metav1.PatchOptions{})
	require.ErrorIs(t, err, customresource.ErrInvalidInput)
	require.ErrorIs(t, podsets.Delete(ctx, "", "web", metav1.DeleteOptions{}), customresource.ErrInvalidInput)
	_, err = podsets.Get(ctx, "default", "", metav1.GetOptions{})
	require.ErrorContains(t, err, "no name given")
	require.Empty(t, dyn.Actions())

	// List, Watch and DeleteCollection take "" for all namespaces.
	_, err = podsets.List(ctx, "", metav1.ListOptions{})
	require.NoError(t, err)
	require.Empty(t, lastAction(t, dyn).GetNamespace())
}
