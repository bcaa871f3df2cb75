package fakecluster_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	applycorev1 "k8s.io/client-go/applyconfigurations/core/v1"
	applymetav1 "k8s.io/client-go/applyconfigurations/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/ctrlkit/ctrlkit/testkit/fakecluster"
)

// ownership maps each manager of obj to its operation (and subresource, when there is one).
func ownership(obj metav1.Object) map[string]string {
	out := map[string]string{}
	for _, e := range obj.GetManagedFields() {
		op := string(e.Operation)
		if e.Subresource != "" {
			op += "/" + e.Subresource
		}
		out[e.Manager] = op
	}
	return out
}

// fieldsOf is the fieldsV1 JSON of manager's entry in obj.
func fieldsOf(t *testing.T, obj metav1.Object, manager string) string {
	t.Helper()
	for _, e := range obj.GetManagedFields() {
		if e.Manager == manager {
			require.NotNil(t, e.FieldsV1)
			return string(e.FieldsV1.Raw)
		}
	}
	t.Fatalf("no managedFields entry for %q in %v", manager, obj.GetManagedFields())
	return ""
}

func TestApplyCreatesWithCreateRules(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakePassiveClock(time.Date(2030, 1, 2, 3, 4, 5, 600, time.UTC))
	c, err := fakecluster.NewWithOptions(fakecluster.Options{Clock: clk})
	require.NoError(t, err)
	cms := c.Clientset().CoreV1().ConfigMaps("default")

	cfg := applycorev1.ConfigMap("cfg", "default").WithData(map[string]string{"a": "1"}).WithLabels(map[string]string{"app": "x"})
	got, err := cms.Apply(ctx, cfg, metav1.ApplyOptions{FieldManager: "alice"})
	require.NoError(t, err)
	assert.NotEmpty(t, got.UID)
	assert.NotEmpty(t, got.ResourceVersion)
	assert.Equal(t, int64(0), got.Generation, "a ConfigMap has no generation, as on kube-apiserver")
	assert.Equal(t, map[string]string{"a": "1"}, got.Data)
	assert.Equal(t, map[string]string{"alice": "Apply"}, ownership(got))
	assert.JSONEq(t, `{"f:data":{"f:a":{}},"f:metadata":{"f:labels":{"f:app":{}}}}`, fieldsOf(t, got, "alice"))
	require.Len(t, got.ManagedFields, 1)
	assert.Equal(t, "v1", got.ManagedFields[0].APIVersion)
	assert.True(t, clk.Now().Truncate(time.Second).Equal(got.ManagedFields[0].Time.Time), "the cluster's clock, in seconds: %v", got.ManagedFields[0].Time)

	stored, err := cms.Get(ctx, "cfg", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, got, stored)

	// Status sent with an apply that creates is dropped, as create drops it.
	pods := c.Clientset().CoreV1().Pods("default")
	p, err := pods.Apply(ctx, applycorev1.Pod("p", "default").
		WithSpec(applycorev1.PodSpec().WithContainers(applycorev1.Container().WithName("c").WithImage("nginx"))).
		WithStatus(applycorev1.PodStatus().WithPhase(corev1.PodRunning)), metav1.ApplyOptions{FieldManager: "m"})
	require.NoError(t, err)
	assert.Equal(t, corev1.PodPending, p.Status.Phase)
	assert.NotContains(t, fieldsOf(t, p, "m"), "f:status", "the main resource owns no status")
}

func TestApplyUpdatesMergesAndRemoves(t *testing.T) {
	ctx := context.Background()
	c, err := fakecluster.New()
	require.NoError(t, err)
	cms := c.Clientset().CoreV1().ConfigMaps("default")
	apply := func(manager string, force bool, data map[string]string) (*corev1.ConfigMap, error) {
		return cms.Apply(ctx, applycorev1.ConfigMap("cfg", "default").WithData(data), metav1.ApplyOptions{FieldManager: manager, Force: force})
	}
	first, err := apply("alice", false, map[string]string{"a": "1", "b": "1"})
	require.NoError(t, err)

	// Another manager adds a field: both keep theirs, the generation of a ConfigMap's data changes.
	got, err := apply("bob", false, map[string]string{"c": "1"})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"a": "1", "b": "1", "c": "1"}, got.Data)
	assert.Equal(t, map[string]string{"alice": "Apply", "bob": "Apply"}, ownership(got))
	assert.NotEqual(t, first.ResourceVersion, got.ResourceVersion)
	assert.Equal(t, first.UID, got.UID)
	assert.Equal(t, first.CreationTimestamp, got.CreationTimestamp)

	// A manager that stops applying a field it alone owned removes it.
	got, err = apply("alice", false, map[string]string{"a": "1"})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"a": "1", "c": "1"}, got.Data)
	assert.JSONEq(t, `{"f:data":{"f:a":{}}}`, fieldsOf(t, got, "alice"))

	// The same apply again changes nothing, not even the resourceVersion's object.
	again, err := apply("alice", false, map[string]string{"a": "1"})
	require.NoError(t, err)
	assert.Equal(t, got.Data, again.Data)
	assert.Equal(t, got.ManagedFields, again.ManagedFields)
}

func TestApplyConflictsAndForce(t *testing.T) {
	ctx := context.Background()
	c, err := fakecluster.New()
	require.NoError(t, err)
	cms := c.Clientset().CoreV1().ConfigMaps("default")
	_, err = cms.Apply(ctx, applycorev1.ConfigMap("cfg", "default").WithData(map[string]string{"a": "1"}), metav1.ApplyOptions{FieldManager: "alice"})
	require.NoError(t, err)

	_, err = cms.Apply(ctx, applycorev1.ConfigMap("cfg", "default").WithData(map[string]string{"a": "2"}), metav1.ApplyOptions{FieldManager: "bob"})
	require.True(t, apierrors.IsConflict(err), "%v", err)
	assert.EqualError(t, err, `Apply failed with 1 conflict: conflict with "alice": .data.a`)
	var status apierrors.APIStatus
	require.ErrorAs(t, err, &status)
	assert.Equal(t, metav1.StatusReasonConflict, status.Status().Reason)
	assert.Equal(t, int32(409), status.Status().Code)
	require.NotNil(t, status.Status().Details)
	assert.Equal(t, []metav1.StatusCause{{Type: metav1.CauseTypeFieldManagerConflict, Message: `conflict with "alice"`, Field: ".data.a"}}, status.Status().Details.Causes)

	got, err := cms.Apply(ctx, applycorev1.ConfigMap("cfg", "default").WithData(map[string]string{"a": "2"}), metav1.ApplyOptions{FieldManager: "bob", Force: true})
	require.NoError(t, err)
	assert.Equal(t, "2", got.Data["a"])
	assert.Equal(t, map[string]string{"bob": "Apply"}, ownership(got), "alice lost her only field")

	// A resourceVersion in the configuration is a precondition.
	_, err = cms.Apply(ctx, applycorev1.ConfigMap("cfg", "default").WithResourceVersion("1").WithData(map[string]string{"a": "3"}),
		metav1.ApplyOptions{FieldManager: "bob"})
	assert.True(t, apierrors.IsConflict(err), "%v", err)
	got, err = cms.Apply(ctx, applycorev1.ConfigMap("cfg", "default").WithResourceVersion(got.ResourceVersion).WithData(map[string]string{"a": "3"}),
		metav1.ApplyOptions{FieldManager: "bob"})
	require.NoError(t, err)
	assert.Equal(t, "3", got.Data["a"])
}

// Writes other than apply record their fields with operation Update, so an applier then
// conflicts with them as on a server.
func TestUpdatesRecordManagedFields(t *testing.T) {
	ctx := context.Background()
	c, err := fakecluster.NewWithOptions(fakecluster.Options{DefaultFieldManager: "my-controller"})
	require.NoError(t, err)
	cms := c.Clientset().CoreV1().ConfigMaps("default")
	created, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg"}, Data: map[string]string{"a": "1"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"my-controller": "Update"}, ownership(created))

	created.Data["b"] = "1"
	updated, err := cms.Update(ctx, created, metav1.UpdateOptions{FieldManager: "editor"})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"my-controller": "Update", "editor": "Update"}, ownership(updated))
	assert.JSONEq(t, `{"f:data":{"f:b":{}}}`, fieldsOf(t, updated, "editor"))

	patched, err := cms.Patch(ctx, "cfg", types.MergePatchType, []byte(`{"data":{"c":"1"}}`), metav1.PatchOptions{FieldManager: "patcher"})
	require.NoError(t, err)
	assert.JSONEq(t, `{"f:data":{"f:c":{}}}`, fieldsOf(t, patched, "patcher"))

	_, err = cms.Apply(ctx, applycorev1.ConfigMap("cfg", "default").WithData(map[string]string{"b": "2"}), metav1.ApplyOptions{FieldManager: "applier"})
	require.True(t, apierrors.IsConflict(err), "%v", err)
	assert.ErrorContains(t, err, `conflict with "editor" using v1: .data.b`)

	// Without a manager, client-go's default: the program's name, as a server derives it from
	// client-go's default User-Agent.
	def, err := fakecluster.New()
	require.NoError(t, err)
	got, err := def.Clientset().CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{fakecluster.DefaultFieldManager: "Update"}, ownership(got))
	assert.Equal(t, "fakecluster.test", fakecluster.DefaultFieldManager)
}

func TestApplyStatus(t *testing.T) {
	ctx := context.Background()
	c, err := fakecluster.New()
	require.NoError(t, err)
	deps := c.Clientset().AppsV1().Deployments("default")
	dep := appsv1ac.Deployment("web", "default").WithSpec(appsv1ac.DeploymentSpec().WithReplicas(2).
		WithSelector(applymetav1.LabelSelector().WithMatchLabels(map[string]string{"app": "web"})).
		WithTemplate(applycorev1.PodTemplateSpec().WithLabels(map[string]string{"app": "web"}).
			WithSpec(applycorev1.PodSpec().WithContainers(applycorev1.Container().WithName("c").WithImage("nginx")))))
	created, err := deps.Apply(ctx, dep, metav1.ApplyOptions{FieldManager: "ctrl"})
	require.NoError(t, err)

	// /status changes nothing but status, and its manager's entry names the subresource.
	got, err := deps.ApplyStatus(ctx, appsv1ac.Deployment("web", "default").
		WithSpec(appsv1ac.DeploymentSpec().WithReplicas(9)).
		WithStatus(appsv1ac.DeploymentStatus().WithReplicas(2).WithReadyReplicas(1)), metav1.ApplyOptions{FieldManager: "status-writer"})
	require.NoError(t, err)
	assert.Equal(t, int32(2), *got.Spec.Replicas)
	assert.Equal(t, int32(1), got.Status.ReadyReplicas)
	assert.Equal(t, created.Generation, got.Generation)
	assert.Equal(t, map[string]string{"ctrl": "Apply", "status-writer": "Apply/status"}, ownership(got))
	assert.JSONEq(t, `{"f:status":{"f:readyReplicas":{},"f:replicas":{}}}`, fieldsOf(t, got, "status-writer"))

	// A main-resource apply keeps the status and owns none of it; a spec change bumps generation.
	got, err = deps.Apply(ctx, dep.WithSpec(dep.Spec.WithReplicas(3)).WithStatus(appsv1ac.DeploymentStatus().WithReplicas(7)),
		metav1.ApplyOptions{FieldManager: "ctrl"})
	require.NoError(t, err)
	assert.Equal(t, int32(2), got.Status.Replicas)
	assert.Equal(t, created.Generation+1, got.Generation)
	assert.NotContains(t, fieldsOf(t, got, "ctrl"), "f:status")

	// The status writer drops a field it alone owned.
	got, err = deps.ApplyStatus(ctx, appsv1ac.Deployment("web", "default").WithStatus(appsv1ac.DeploymentStatus().WithReplicas(2)),
		metav1.ApplyOptions{FieldManager: "status-writer"})
	require.NoError(t, err)
	assert.Zero(t, got.Status.ReadyReplicas)

	// Only the main resource creates.
	_, err = deps.ApplyStatus(ctx, appsv1ac.Deployment("absent", "default").WithStatus(appsv1ac.DeploymentStatus().WithReplicas(1)),
		metav1.ApplyOptions{FieldManager: "status-writer"})
	assert.True(t, apierrors.IsNotFound(err), "%v", err)
}

func TestDynamicApplyOnACustomResource(t *testing.T) {
	ctx := context.Background()
	c := withWidgets(t)
	res := c.Dynamic().Resource(gvr).Namespace("default")
	w := widget("w", 1)
	_ = unstructured.SetNestedStringSlice(w.Object, []string{"a", "b"}, "spec", "tags")
	_ = unstructured.SetNestedField(w.Object, "Fake", "status", "phase")
	got, err := res.Apply(ctx, "w", w, metav1.ApplyOptions{FieldManager: "ctrl"})
	require.NoError(t, err)
	assert.Equal(t, int64(1), got.GetGeneration())
	_, hasStatus := got.Object["status"]
	assert.False(t, hasStatus, "the status subresource's status is dropped on create")
	assert.Equal(t, map[string]string{"ctrl": "Apply"}, ownership(got))

	got, err = res.ApplyStatus(ctx, "w", &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Widget", "metadata": map[string]any{"name": "w"},
		"status": map[string]any{"phase": "Ready"}}}, metav1.ApplyOptions{FieldManager: "status-writer"})
	require.NoError(t, err)
	phase, _, _ := unstructured.NestedString(got.Object, "status", "phase")
	assert.Equal(t, "Ready", phase)
	assert.Equal(t, int64(1), got.GetGeneration())

	// Without a schema a list is atomic: another manager's list conflicts as a whole.
	other := widget("w", 1)
	_ = unstructured.SetNestedStringSlice(other.Object, []string{"c"}, "spec", "tags")
	_, err = res.Apply(ctx, "w", other, metav1.ApplyOptions{FieldManager: "tagger"})
	require.True(t, apierrors.IsConflict(err), "%v", err)
	assert.ErrorContains(t, err, ".spec.tags")

	// ctrl stops applying tags: they go; size changes: generation moves.
	got, err = res.Apply(ctx, "w", widget("w", 2), metav1.ApplyOptions{FieldManager: "ctrl"})
	require.NoError(t, err)
	_, hasTags, _ := unstructured.NestedFieldNoCopy(got.Object, "spec", "tags")
	assert.False(t, hasTags)
	assert.Equal(t, int64(2), got.GetGeneration())

	// The same apply through Patch with the apply patch type.
	got, err = res.Patch(ctx, "w", types.ApplyPatchType, []byte("apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\nspec:\n  size: 3\n"),
		metav1.PatchOptions{FieldManager: "ctrl"})
	require.NoError(t, err)
	size, _, _ := unstructured.NestedInt64(got.Object, "spec", "size")
	assert.Equal(t, int64(3), size)
}

func TestApplyRefusesWhatTheServerRefuses(t *testing.T) {
	ctx := context.Background()
	c := withWidgets(t)
	res := c.Dynamic().Resource(gvr).Namespace("default")

	_, err := res.Apply(ctx, "w", widget("w", 1), metav1.ApplyOptions{})
	assert.True(t, apierrors.IsInvalid(err), "%v", err)
	assert.ErrorContains(t, err, "fieldManager: Required value: is required for apply patch")

	_, err = res.Patch(ctx, "w", types.ApplyPatchType, []byte(`{"apiVersion": "example.com/v1", "kind": "Widget", "spec": [`), metav1.PatchOptions{FieldManager: "m"})
	assert.True(t, apierrors.IsBadRequest(err), "%v", err)
	assert.ErrorContains(t, err, "error decoding patch")

	other := widget("w", 1)
	other.SetAPIVersion("example.com/v2")
	_, err = res.Apply(ctx, "w", other, metav1.ApplyOptions{FieldManager: "m"})
	assert.True(t, apierrors.IsBadRequest(err), "%v", err)

	_, err = c.Clientset().CoreV1().ConfigMaps("default").Patch(ctx, "cfg", types.ApplyPatchType,
		[]byte(`{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg"}, "spec": {"x": 1}}`), metav1.PatchOptions{FieldManager: "m"})
	require.Error(t, err)
	assert.ErrorContains(t, err, ".spec: field not declared in schema")

	_, err = res.Patch(ctx, "w", types.MergePatchType, []byte(`{}`), metav1.PatchOptions{Force: new(true)})
	assert.True(t, apierrors.IsInvalid(err), "force is for apply only: %v", err)
}

// A seeded object has no managedFields, as one written before server-side apply existed:
// its fields belong to "before-first-apply", as kube-apiserver records them on the first apply.
func TestApplyToASeed(t *testing.T) {
	c := withWidgets(t, widget("w", 1))
	_, err := c.Dynamic().Resource(gvr).Namespace("default").Apply(context.Background(), "w", widget("w", 2), metav1.ApplyOptions{FieldManager: "m"})
	assert.True(t, apierrors.IsConflict(err), "%v", err)
	assert.ErrorContains(t, err, `conflict with "before-first-apply"`)
}

// Managed fields are served on every path: a watch sees them, a list carries them.
func TestManagedFieldsReachWatchersAndLists(t *testing.T) {
	ctx := context.Background()
	c, err := fakecluster.New()
	require.NoError(t, err)
	cms := c.Clientset().CoreV1().ConfigMaps("default")
	w, err := cms.Watch(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	defer w.Stop()
	_, err = cms.Apply(ctx, applycorev1.ConfigMap("cfg", "default").WithData(map[string]string{"a": "1"}), metav1.ApplyOptions{FieldManager: "alice"})
	require.NoError(t, err)
	select {
	case ev := <-w.ResultChan():
		assert.Equal(t, map[string]string{"alice": "Apply"}, ownership(ev.Object.(*corev1.ConfigMap)))
	case <-time.After(10 * time.Second):
		t.Fatal("no watch event")
	}
	list, err := cms.List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, list.Items, 1)
	assert.Equal(t, map[string]string{"alice": "Apply"}, ownership(&list.Items[0]))
}
