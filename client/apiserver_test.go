package client_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/client"
	"github.com/ctrlkit/ctrlkit/customresource"
	"github.com/ctrlkit/ctrlkit/examples/podset/api/v1alpha1"
	"github.com/ctrlkit/ctrlkit/testkit"
)

// managers returns the field managers of obj and the operation each used.
func managers(obj metav1.Object) map[string]metav1.ManagedFieldsOperationType {
	out := map[string]metav1.ManagedFieldsOperationType{}
	for _, e := range obj.GetManagedFields() {
		out[e.Manager] = e.Operation
	}
	return out
}

// backends are the fake cluster and kube-apiserver, for tests that must pass on both.
var backends = map[string]func(testing.TB) *testkit.Env{
	"fake":      func(t testing.TB) *testkit.Env { return testkit.NewFake(t).Env },
	"apiserver": func(t testing.TB) *testkit.Env { return testkit.SharedAPIServer(t) },
}

// Apply on the fake cluster as on kube-apiserver: ownership, conflicts, force, removal of a
// lost owner, and a resourceVersion as a precondition.
func TestApply(t *testing.T) {
	for name, newEnv := range backends {
		t.Run(name, func(t *testing.T) { testApply(t, newEnv(t)) })
	}
}

func testApply(t *testing.T, env *testkit.Env) {
	ctx, ns := env.Context(), env.Namespace()
	cms := mustFor[*corev1.ConfigMap](t, env)

	applied, err := cms.Apply(ctx, configMap(ns, "cfg", map[string]string{"a": "1"}), metav1.ApplyOptions{FieldManager: "alice"})
	require.NoError(t, err)
	require.Equal(t, "1", applied.Data["a"])
	require.Equal(t, map[string]metav1.ManagedFieldsOperationType{"alice": metav1.ManagedFieldsOperationApply}, managers(applied))

	// A second manager setting alice's field conflicts unless it forces.
	_, err = cms.Apply(ctx, configMap(ns, "cfg", map[string]string{"a": "2"}), metav1.ApplyOptions{FieldManager: "bob"})
	require.True(t, apierrors.IsConflict(err), "got %v", err)
	require.ErrorContains(t, err, "alice")
	// A field nobody owns is no conflict, and alice keeps hers.
	applied, err = cms.Apply(ctx, configMap(ns, "cfg", map[string]string{"b": "1"}), metav1.ApplyOptions{FieldManager: "bob"})
	require.NoError(t, err)
	require.Equal(t, map[string]string{"a": "1", "b": "1"}, applied.Data)
	applied, err = cms.Apply(ctx, configMap(ns, "cfg", map[string]string{"a": "2", "b": "1"}), metav1.ApplyOptions{FieldManager: "bob", Force: true})
	require.NoError(t, err)
	require.Equal(t, "2", applied.Data["a"])
	// alice lost her only field, so she is gone from managedFields.
	require.Equal(t, map[string]metav1.ManagedFieldsOperationType{"bob": metav1.ManagedFieldsOperationApply}, managers(applied))

	list, err := cms.List(ctx, ns, metav1.ListOptions{FieldSelector: "metadata.name=cfg"})
	require.NoError(t, err)
	require.Len(t, list.Items, 1)
	require.Equal(t, applied.ResourceVersion, list.Items[0].ResourceVersion)
	require.NotEmpty(t, list.ResourceVersion)

	// A resourceVersion in the configuration makes the apply conditional.
	stale := configMap(ns, "cfg", map[string]string{"a": "3", "b": "1"})
	stale.ResourceVersion = "1"
	_, err = cms.Apply(ctx, stale, metav1.ApplyOptions{FieldManager: "bob"})
	require.True(t, apierrors.IsConflict(err), "got %v", err)
}

// A typed Deployment as a Go struct (nil slices and pointers, empty status) applies as is:
// nulls are left out of the configuration, so they claim nothing and break nothing.
func TestApplyTypedDeployment(t *testing.T) {
	for name, newEnv := range backends {
		t.Run(name, func(t *testing.T) { testApplyTypedDeployment(t, newEnv(t)) })
	}
}

func testApplyTypedDeployment(t *testing.T, env *testkit.Env) {
	ctx, ns := env.Context(), env.Namespace()
	deps := mustFor[*appsv1.Deployment](t, env)
	labels := map[string]string{"app": "web"}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Replicas: new(int32(2)),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx"}}},
			},
		},
	}
	applied, err := deps.Apply(ctx, dep, metav1.ApplyOptions{FieldManager: "ctrl"})
	require.NoError(t, err)
	require.Equal(t, int32(2), *applied.Spec.Replicas)

	// Another manager scales: it owns replicas only after forcing.
	scale := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}, Spec: appsv1.DeploymentSpec{Replicas: new(int32(5))}}
	_, err = deps.Apply(ctx, scale, metav1.ApplyOptions{FieldManager: "autoscaler"})
	require.True(t, apierrors.IsConflict(err), "got %v", err)
}

func TestDeletePreconditionsOnAPIServer(t *testing.T) {
	env := testkit.SharedAPIServer(t)
	ctx, ns := env.Context(), env.Namespace()
	cms := mustFor[*corev1.ConfigMap](t, env)
	old, err := cms.Create(ctx, configMap(ns, "a", nil), metav1.CreateOptions{})
	require.NoError(t, err)
	cur, err := cms.Patch(ctx, ns, "a", types.MergePatchType, []byte(`{"data":{"k":"v"}}`), metav1.PatchOptions{})
	require.NoError(t, err)

	err = cms.Delete(ctx, ns, "a", metav1.DeleteOptions{Preconditions: client.Preconditions(old)})
	require.True(t, apierrors.IsConflict(err), "a stale resourceVersion: %v", err)
	replaced := cur.DeepCopy()
	replaced.UID = "00000000-0000-0000-0000-000000000000"
	err = cms.Delete(ctx, ns, "a", metav1.DeleteOptions{Preconditions: client.Preconditions(replaced)})
	require.True(t, apierrors.IsConflict(err), "another UID: %v", err)
	require.NoError(t, cms.Delete(ctx, ns, "a", metav1.DeleteOptions{Preconditions: client.Preconditions(cur)}))
	_, err = cms.Get(ctx, ns, "a", metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err))
}

func TestCreateOrPatchOptimisticLockOnAPIServer(t *testing.T) {
	env := testkit.SharedAPIServer(t)
	ctx, ns := env.Context(), env.Namespace()
	cms := mustFor[*corev1.ConfigMap](t, env)
	stale, err := cms.Create(ctx, configMap(ns, "a", map[string]string{"n": "1"}), metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = cms.Patch(ctx, ns, "a", types.MergePatchType, []byte(`{"data":{"other":"x"}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	cached, err := client.NewCached(cms, staleLister{stale})
	require.NoError(t, err)

	_, err = client.CreateOrPatch(ctx, cached, configMap(ns, "a", nil), setData("n", "2"), client.WithOptimisticLock())
	require.True(t, apierrors.IsConflict(err), "got %v", err)

	// Read fresh, and the locked patch goes through; status-less kinds write one patch.
	res, err := client.CreateOrPatch(ctx, cms, configMap(ns, "a", nil), setData("n", "2"), client.WithOptimisticLock())
	require.NoError(t, err)
	require.Equal(t, client.OperationResultUpdated, res)
	got, err := cms.Get(ctx, ns, "a", metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, map[string]string{"n": "2", "other": "x"}, got.Data)
}

func TestCreateOrUpdateAndClusterScopedOnAPIServer(t *testing.T) {
	env := testkit.SharedAPIServer(t)
	ctx := env.Context()
	nss := mustFor[*corev1.Namespace](t, env)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: env.Namespace()}}
	res, err := client.CreateOrUpdate(ctx, nss, ns, func(ns *corev1.Namespace) error {
		if ns.Labels == nil {
			ns.Labels = map[string]string{}
		}
		ns.Labels["team"] = "a"
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, client.OperationResultUpdated, res)
	require.Equal(t, "a", ns.Labels["team"])
	res, err = client.CreateOrUpdate(ctx, nss, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: env.Namespace()}}, func(ns *corev1.Namespace) error {
		ns.Labels["team"] = "a"
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, client.OperationResultNone, res)
}

// The helpers drive a custom resource through customresource.Client on a real server: the
// status change goes through the CRD's status subresource.
func TestHelpersOnACustomResourceOnAPIServer(t *testing.T) {
	env := testkit.SharedAPIServer(t)
	ctx, ns := env.Context(), env.Namespace()
	require.NoError(t, customresource.EnsureCRDFromYAML(ctx, env.Dynamic(), v1alpha1.CRDManifest))
	podsets, err := customresource.NewClient[*v1alpha1.PodSet](env.Dynamic(), v1alpha1.GVR)
	require.NoError(t, err)

	spec := func(ps *v1alpha1.PodSet) error {
		labels := map[string]string{"app": "web"}
		ps.Spec.Replicas = new(int32(2))
		ps.Spec.Selector = &metav1.LabelSelector{MatchLabels: labels}
		ps.Spec.Template = corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx"}}}}
		return nil
	}
	ps := &v1alpha1.PodSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}}
	res, err := client.CreateOrUpdate(ctx, podsets, ps, spec)
	require.NoError(t, err)
	require.Equal(t, client.OperationResultCreated, res)
	res, err = client.CreateOrUpdate(ctx, podsets, &v1alpha1.PodSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}}, spec)
	require.NoError(t, err)
	require.Equal(t, client.OperationResultNone, res)

	res, err = client.CreateOrPatch(ctx, podsets, &v1alpha1.PodSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}}, func(ps *v1alpha1.PodSet) error {
		ps.Spec.Replicas = new(int32(3))
		ps.Status.Replicas = 2
		return nil
	}, client.WithOptimisticLock())
	require.NoError(t, err)
	require.Equal(t, client.OperationResultUpdatedStatus, res)
	got, err := podsets.Get(ctx, ns, "web", metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, int32(3), *got.Spec.Replicas)
	require.Equal(t, int32(2), got.Status.Replicas)
}
