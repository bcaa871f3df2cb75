package client_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	clienttesting "k8s.io/client-go/testing"

	"github.com/ctrlkit/ctrlkit/client"
	"github.com/ctrlkit/ctrlkit/customresource"
	"github.com/ctrlkit/ctrlkit/examples/podset/api/v1alpha1"
	"github.com/ctrlkit/ctrlkit/testkit"
)

// The custom-resource client satisfies the same interface, so every helper serves both.
var _ client.Client[*v1alpha1.PodSet] = (*customresource.Client[*v1alpha1.PodSet])(nil)

func configMap(ns, name string, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: data}
}

func mustFor[T client.Object](t *testing.T, env *testkit.Env) client.Client[T] {
	t.Helper()
	c, err := client.For[T](env.Client())
	require.NoError(t, err)
	return c
}

func TestForMapsBuiltInTypesThroughTheScheme(t *testing.T) {
	env := testkit.NewFake(t)
	check := func(c interface {
		Resource() schema.GroupVersionResource
		GroupVersionKind() schema.GroupVersionKind
		Namespaced() bool
	}, gvr schema.GroupVersionResource, kind string, namespaced bool) {
		t.Helper()
		assert.Equal(t, gvr, c.Resource())
		assert.Equal(t, gvr.GroupVersion().WithKind(kind), c.GroupVersionKind())
		assert.Equal(t, namespaced, c.Namespaced())
	}
	check(mustFor[*corev1.ConfigMap](t, env.Env), corev1.SchemeGroupVersion.WithResource("configmaps"), "ConfigMap", true)
	check(mustFor[*corev1.Pod](t, env.Env), corev1.SchemeGroupVersion.WithResource("pods"), "Pod", true)
	check(mustFor[*corev1.Endpoints](t, env.Env), corev1.SchemeGroupVersion.WithResource("endpoints"), "Endpoints", true)
	check(mustFor[*corev1.Node](t, env.Env), corev1.SchemeGroupVersion.WithResource("nodes"), "Node", false)
	check(mustFor[*corev1.Namespace](t, env.Env), corev1.SchemeGroupVersion.WithResource("namespaces"), "Namespace", false)
	check(mustFor[*appsv1.Deployment](t, env.Env), appsv1.SchemeGroupVersion.WithResource("deployments"), "Deployment", true)
	check(mustFor[*coordinationv1.Lease](t, env.Env), coordinationv1.SchemeGroupVersion.WithResource("leases"), "Lease", true)
}

func TestForRefusesTypesTheClientsetDoesNotServe(t *testing.T) {
	env := testkit.NewFake(t)
	_, err := client.For[*v1alpha1.PodSet](env.Client())
	require.ErrorIs(t, err, client.ErrUnsupportedType)
	require.ErrorContains(t, err, "*v1alpha1.PodSet")
	require.ErrorContains(t, err, "customresource.NewClient")
	// A list type does not compile (no ObjectMeta); a kind without a typed client fails.
	_, err = client.For[*corev1.Binding](env.Client())
	require.ErrorIs(t, err, client.ErrUnsupportedType)
	_, err = client.For[*autoscalingv1.Scale](env.Client())
	require.ErrorIs(t, err, client.ErrUnsupportedType)
	require.ErrorContains(t, err, "*v1.Scale")
	_, err = client.For[*metav1.PartialObjectMetadata](env.Client())
	require.ErrorIs(t, err, client.ErrUnsupportedType)
	_, err = client.For[*corev1.Pod](nil)
	require.ErrorIs(t, err, client.ErrInvalidInput)
}

func TestEveryVerbOnTheFakeCluster(t *testing.T) {
	env := testkit.NewFake(t)
	ctx := env.Context()
	cms := mustFor[*corev1.ConfigMap](t, env.Env)

	created, err := cms.Create(ctx, configMap("default", "a", map[string]string{"k": "1"}), metav1.CreateOptions{})
	require.NoError(t, err)
	require.NotEmpty(t, created.UID)
	_, err = cms.Create(ctx, configMap("other", "b", nil), metav1.CreateOptions{})
	require.NoError(t, err)

	got, err := cms.Get(ctx, "default", "a", metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, "1", got.Data["k"])

	list, err := cms.List(ctx, "default", metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, list.Items, 1)
	require.NotEmpty(t, list.ResourceVersion)
	all, err := cms.List(ctx, metav1.NamespaceAll, metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, all.Items, 2)

	got.Data["k"] = "2"
	updated, err := cms.Update(ctx, got, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Equal(t, "2", updated.Data["k"])
	// The resourceVersion of got is stale now: Update is optimistic.
	_, err = cms.Update(ctx, got, metav1.UpdateOptions{})
	require.True(t, apierrors.IsConflict(err), "got %v", err)

	patched, err := cms.Patch(ctx, "default", "a", types.MergePatchType, []byte(`{"data":{"k":"3"}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	require.Equal(t, "3", patched.Data["k"])

	_, err = cms.UpdateStatus(ctx, patched, metav1.UpdateOptions{})
	require.ErrorIs(t, err, client.ErrNoStatus)

	require.NoError(t, cms.Delete(ctx, "default", "a", metav1.DeleteOptions{}))
	_, err = cms.Get(ctx, "default", "a", metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err))
	require.NoError(t, client.IgnoreNotFound(err))
	require.True(t, apierrors.IsNotFound(cms.Delete(ctx, "default", "a", metav1.DeleteOptions{})))
}

func TestUpdateStatusWritesOnlyStatus(t *testing.T) {
	env := testkit.NewFake(t)
	ctx := env.Context()
	pods := mustFor[*corev1.Pod](t, env.Env)
	pod, err := pods.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "p"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	pod.Status.Phase = corev1.PodRunning
	pod.Spec.ActiveDeadlineSeconds = new(int64(5))
	got, err := pods.UpdateStatus(ctx, pod, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Equal(t, corev1.PodRunning, got.Status.Phase)
	require.Nil(t, got.Spec.ActiveDeadlineSeconds, "the status subresource changes nothing but status")
	last := env.Actions()[len(env.Actions())-1]
	require.Equal(t, "status", last.GetSubresource())
}

func TestClusterScopedTypes(t *testing.T) {
	env := testkit.NewFake(t)
	ctx := env.Context()
	nodes := mustFor[*corev1.Node](t, env.Env)
	_, err := nodes.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	got, err := nodes.Get(ctx, "", "n1", metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, "n1", got.Name)
	list, err := nodes.List(ctx, "", metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, list.Items, 1)
	require.NoError(t, nodes.Delete(ctx, "", "n1", metav1.DeleteOptions{}))

	namespaces := mustFor[*corev1.Namespace](t, env.Env)
	ns, err := namespaces.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.Equal(t, "team-a", ns.Name)
}

// Namespace mistakes are refused before any request, with the object and resource named.
func TestWrongNamespaceUsageIsAnErrorBeforeAnyRequest(t *testing.T) {
	env := testkit.NewFake(t)
	ctx := env.Context()
	cms := mustFor[*corev1.ConfigMap](t, env.Env)
	nodes := mustFor[*corev1.Node](t, env.Env)
	env.ClearActions()

	_, err := cms.Get(ctx, "", "a", metav1.GetOptions{})
	require.ErrorIs(t, err, client.ErrInvalidInput)
	require.EqualError(t, err, `client: get configmaps "a": the resource is namespaced and no namespace was given: invalid input`)
	_, err = cms.Create(ctx, configMap("", "a", nil), metav1.CreateOptions{})
	require.ErrorContains(t, err, `client: create configmaps "a": the resource is namespaced`)
	_, err = cms.Update(ctx, configMap("", "a", nil), metav1.UpdateOptions{})
	require.ErrorIs(t, err, client.ErrInvalidInput)
	_, err = cms.Patch(ctx, "", "a", types.MergePatchType, []byte(`{}`), metav1.PatchOptions{})
	require.ErrorIs(t, err, client.ErrInvalidInput)
	_, err = cms.Apply(ctx, configMap("", "a", nil), metav1.ApplyOptions{FieldManager: "m"})
	require.ErrorIs(t, err, client.ErrInvalidInput)
	require.ErrorIs(t, cms.Delete(ctx, "", "a", metav1.DeleteOptions{}), client.ErrInvalidInput)
	_, err = cms.Get(ctx, "default", "", metav1.GetOptions{})
	require.ErrorContains(t, err, "no name given")

	_, err = nodes.Get(ctx, "default", "n1", metav1.GetOptions{})
	require.EqualError(t, err, `client: get nodes "default/n1": the resource is cluster-scoped and takes no namespace: invalid input`)
	_, err = nodes.List(ctx, "default", metav1.ListOptions{})
	require.ErrorIs(t, err, client.ErrInvalidInput)
	_, err = nodes.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "n1"}}, metav1.CreateOptions{})
	require.ErrorIs(t, err, client.ErrInvalidInput)

	_, err = cms.Create(ctx, nil, metav1.CreateOptions{})
	require.ErrorIs(t, err, client.ErrInvalidInput)
	_, err = cms.Update(ctx, nil, metav1.UpdateOptions{})
	require.ErrorIs(t, err, client.ErrInvalidInput)
	_, err = cms.Apply(ctx, nil, metav1.ApplyOptions{FieldManager: "m"})
	require.ErrorIs(t, err, client.ErrInvalidInput)

	require.Empty(t, env.Actions(), "no request may reach the cluster")
}

// Apply sends an apply patch with apiVersion and kind, no managedFields and no nulls (TestApply
// covers its effect on the fake cluster and on kube-apiserver).
func TestApplyBody(t *testing.T) {
	env := testkit.NewFake(t)
	ctx := env.Context()
	cms := mustFor[*corev1.ConfigMap](t, env.Env)
	cm := configMap("default", "a", map[string]string{"k": "v"})
	cm.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "someone"}}

	_, err := cms.Apply(ctx, cm, metav1.ApplyOptions{})
	require.ErrorIs(t, err, client.ErrInvalidInput)
	require.ErrorContains(t, err, "FieldManager is required")

	applied, err := cms.Apply(ctx, cm, metav1.ApplyOptions{FieldManager: "me", Force: true})
	require.NoError(t, err)
	require.Equal(t, map[string]string{"k": "v"}, applied.Data)
	require.Equal(t, map[string]metav1.ManagedFieldsOperationType{"me": metav1.ManagedFieldsOperationApply}, managers(applied))
	patch := env.Actions()[len(env.Actions())-1].(clienttesting.PatchAction)
	require.Equal(t, types.ApplyPatchType, patch.GetPatchType())
	require.JSONEq(t, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"namespace":"default","name":"a"},"data":{"k":"v"}}`, string(patch.GetPatch()))
	require.Len(t, cm.ManagedFields, 1, "the caller's object is not modified")
}

func TestDeletePreconditions(t *testing.T) {
	env := testkit.NewFake(t)
	ctx := env.Context()
	cms := mustFor[*corev1.ConfigMap](t, env.Env)
	old, err := cms.Create(ctx, configMap("default", "a", nil), metav1.CreateOptions{})
	require.NoError(t, err)
	cur, err := cms.Patch(ctx, "default", "a", types.MergePatchType, []byte(`{"data":{"k":"v"}}`), metav1.PatchOptions{})
	require.NoError(t, err)

	// Stale resourceVersion.
	err = cms.Delete(ctx, "default", "a", metav1.DeleteOptions{Preconditions: client.Preconditions(old)})
	require.True(t, apierrors.IsConflict(err), "got %v", err)
	// Another object under the same name.
	other := cur.DeepCopy()
	other.UID = "someone-else"
	err = cms.Delete(ctx, "default", "a", metav1.DeleteOptions{Preconditions: client.Preconditions(other)})
	require.True(t, apierrors.IsConflict(err), "got %v", err)
	// What we read is what is there.
	require.NoError(t, cms.Delete(ctx, "default", "a", metav1.DeleteOptions{Preconditions: client.Preconditions(cur)}))
}

func TestPreconditions(t *testing.T) {
	require.Nil(t, client.Preconditions(nil))
	require.Nil(t, client.Preconditions((*corev1.Pod)(nil)))
	p := client.Preconditions(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u", ResourceVersion: "7"}})
	require.Equal(t, types.UID("u"), *p.UID)
	require.Equal(t, "7", *p.ResourceVersion)
	p = client.Preconditions(&corev1.Pod{})
	require.Nil(t, p.UID)
	require.Nil(t, p.ResourceVersion)
}

func TestIgnoreNotFound(t *testing.T) {
	require.NoError(t, client.IgnoreNotFound(nil))
	require.NoError(t, client.IgnoreNotFound(apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, "p")))
	conflict := apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, "p", nil)
	require.Equal(t, conflict, client.IgnoreNotFound(conflict))
}

// The same helpers work on a custom resource through customresource.Client.
func TestCustomResourceClientWorksWithTheHelpers(t *testing.T) {
	env := podSetEnv(t)
	ctx := env.Context()
	podsets, err := customresource.NewClient[*v1alpha1.PodSet](env.Dynamic(), v1alpha1.GVR)
	require.NoError(t, err)
	var c client.Client[*v1alpha1.PodSet] = podsets

	ps := &v1alpha1.PodSet{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}}
	res, err := client.CreateOrUpdate(ctx, c, ps, func(ps *v1alpha1.PodSet) error {
		ps.Spec.Replicas = new(int32(2))
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, client.OperationResultCreated, res)
	require.NotEmpty(t, ps.UID)

	res, err = client.CreateOrPatch(ctx, c, &v1alpha1.PodSet{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}}, func(ps *v1alpha1.PodSet) error {
		ps.Spec.Replicas = new(int32(3))
		ps.Status.Replicas = 3
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, client.OperationResultUpdatedStatus, res)
	got, err := c.Get(ctx, "default", "web", metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, int32(3), *got.Spec.Replicas)
	require.Equal(t, int32(3), got.Status.Replicas)

	_, err = c.Get(ctx, "", "web", metav1.GetOptions{})
	require.ErrorIs(t, err, customresource.ErrInvalidInput)
}

// patchBodies returns the bodies of the patch requests recorded since the last ClearActions.
func patchBodies(t *testing.T, env *testkit.FakeEnv) []string {
	t.Helper()
	var out []string
	for _, a := range env.Actions() {
		if p, ok := a.(clienttesting.PatchAction); ok {
			var m map[string]any
			require.NoError(t, json.Unmarshal(p.GetPatch(), &m))
			out = append(out, p.GetSubresource()+" "+string(p.GetPatch()))
		}
	}
	return out
}

// One sentinel across the two clients: errors.Is matches either package's name.
func TestErrInvalidInputIsShared(t *testing.T) {
	assert.ErrorIs(t, fmt.Errorf("wrapped: %w", customresource.ErrInvalidInput), client.ErrInvalidInput)
}

// noCoreV1 is a partial clientset that serves no core/v1 client, as a test double may be.
type noCoreV1 struct {
	kubernetes.Interface
	typedNil bool
}

func (c noCoreV1) CoreV1() typedcorev1.CoreV1Interface {
	if c.typedNil {
		return (*typedcorev1.CoreV1Client)(nil)
	}
	return nil
}

// A clientset that returns no client for T's group is an error from For, naming the resource,
// not a panic at the first call.
func TestForAClientsetWithoutTheGroup(t *testing.T) {
	for _, typedNil := range []bool{false, true} {
		_, err := client.For[*corev1.ConfigMap](noCoreV1{typedNil: typedNil})
		require.ErrorIs(t, err, client.ErrInvalidInput, "typed nil %v", typedNil)
		assert.ErrorContains(t, err, "configmaps")
	}
}
