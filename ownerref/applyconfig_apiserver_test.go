package ownerref_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/metadata"

	"github.com/ctrlkit/ctrlkit/client"
	"github.com/ctrlkit/ctrlkit/ownerref"
	"github.com/ctrlkit/ctrlkit/testkit"
)

// A child applied with the reference SetControllerReferenceApplyConfig writes is stored with
// what the garbage collector reads (controller and blockOwnerDeletion true), for a
// cluster-scoped owner of a namespaced child read typed and read metadata-only, and applying
// it again changes nothing.
func TestSetControllerReferenceApplyConfigAPIServer(t *testing.T) {
	env := testkit.SharedAPIServer(t)
	ctx, ns := env.Context(), env.Namespace()
	// A ClusterRole stands for a cluster-scoped owner such as a Tenant; its name is the
	// test's namespace so that tests sharing the server do not collide.
	owner, err := env.Client().RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = env.Client().RbacV1().ClusterRoles().Delete(ctx, owner.Name, metav1.DeleteOptions{}) })

	cms, err := client.For[*corev1.ConfigMap](env.Client())
	require.NoError(t, err)
	apply := func(t *testing.T, owner metav1.Object, opts ...ownerref.Option) *corev1.ConfigMap {
		t.Helper()
		config := corev1ac.ConfigMap("quota-settings", ns).WithData(map[string]string{"cpu": "4"})
		require.NoError(t, ownerref.SetControllerReferenceApplyConfig(owner, config, opts...))
		got, err := client.ApplyConfig(ctx, cms, config, metav1.ApplyOptions{FieldManager: "tenant-controller", Force: true})
		require.NoError(t, err)
		return got
	}
	want := []metav1.OwnerReference{{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole", Name: owner.Name, UID: owner.UID,
		Controller: new(true), BlockOwnerDeletion: new(true)}}

	child := apply(t, owner)
	assert.Equal(t, want, child.OwnerReferences)
	assert.True(t, ownerref.IsControlledBy(child, owner))

	// The same owner from the metadata client: no kind of its own, WithKind gives it.
	mc, err := metadata.NewForConfig(env.Config())
	require.NoError(t, err)
	meta, err := mc.Resource(rbacv1.SchemeGroupVersion.WithResource("clusterroles")).Get(ctx, owner.Name, metav1.GetOptions{})
	require.NoError(t, err)
	again := apply(t, meta, ownerref.WithKind(rbacv1.SchemeGroupVersion.WithKind("ClusterRole")))
	assert.Equal(t, want, again.OwnerReferences)
	assert.Equal(t, child.ResourceVersion, again.ResourceVersion, "the same apply again writes nothing")
}
