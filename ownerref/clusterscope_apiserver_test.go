package ownerref_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	"github.com/ctrlkit/ctrlkit/client"
	"github.com/ctrlkit/ctrlkit/customresource"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/ownerref"
	"github.com/ctrlkit/ctrlkit/testkit"
)

// Tenant is docs/custom-resources.md's cluster-scoped resource, reduced to what the test needs.
type Tenant struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              struct {
		Namespaces []string `json:"namespaces"`
	} `json:"spec"`
}

func (t *Tenant) DeepCopyObject() runtime.Object {
	c := *t
	t.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	c.Spec.Namespaces = append([]string(nil), t.Spec.Namespaces...)
	return &c
}

var tenantGVR = schema.GroupVersionResource{Group: "tenancy.example.com", Version: "v1", Resource: "tenants"}

const tenantCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: tenants.tenancy.example.com
spec:
  group: tenancy.example.com
  names: {kind: Tenant, listKind: TenantList, plural: tenants, singular: tenant}
  scope: Cluster
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              namespaces: {type: array, items: {type: string}}
`

// The docs' Tenant journey up to the controller's writes, on kube-apiserver: a cluster-scoped
// custom resource through a WithClusterScope client and an informer keyed by name alone, owning
// the Namespace and the ResourceQuota its controller applies server-side. The owner is the
// informer's typed Tenant, whose kind comes from the apiVersion and kind it keeps.
func TestClusterScopedCustomOwnerAPIServer(t *testing.T) {
	env := testkit.SharedAPIServer(t)
	ctx := env.Context()
	require.NoError(t, customresource.EnsureCRDFromYAML(ctx, env.Dynamic(), []byte(tenantCRD)))
	tenants, err := customresource.NewClient[*Tenant](env.Dynamic(), tenantGVR, customresource.WithClusterScope())
	require.NoError(t, err)
	name, nsName := env.Namespace()+"-tenant", env.Namespace()+"-prod"
	created := &Tenant{ObjectMeta: metav1.ObjectMeta{Name: name}}
	created.Spec.Namespaces = []string{nsName}
	created, err = tenants.Create(ctx, created, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = tenants.Delete(ctx, "", name, metav1.DeleteOptions{}) })
	_, err = tenants.Get(ctx, env.Namespace(), name, metav1.GetOptions{})
	require.ErrorIs(t, err, customresource.ErrInvalidInput, "a namespace for a cluster-scoped resource")

	inf, err := informer.ForResource[*Tenant](env.Factory(), tenantGVR)
	require.NoError(t, err)
	env.Sync()
	tenant, err := inf.Lister().Get("", name)
	require.NoError(t, err)
	require.Equal(t, created.UID, tenant.UID)

	nss, err := client.For[*corev1.Namespace](env.Client())
	require.NoError(t, err)
	quotas, err := client.For[*corev1.ResourceQuota](env.Client())
	require.NoError(t, err)
	opts := metav1.ApplyOptions{FieldManager: "tenant-controller", Force: true}
	ns := corev1ac.Namespace(nsName)
	quota := corev1ac.ResourceQuota("tenant", nsName).WithSpec(corev1ac.ResourceQuotaSpec().WithHard(corev1.ResourceList{corev1.ResourcePods: resource.MustParse("10")}))
	require.NoError(t, ownerref.SetControllerReferenceApplyConfig(tenant, ns))
	require.NoError(t, ownerref.SetControllerReferenceApplyConfig(tenant, quota))
	gotNS, err := client.ApplyConfig(ctx, nss, ns, opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = env.Client().CoreV1().Namespaces().Delete(ctx, nsName, metav1.DeleteOptions{}) })
	gotQuota, err := client.ApplyConfig(ctx, quotas, quota, opts)
	require.NoError(t, err)

	want := []metav1.OwnerReference{{APIVersion: "tenancy.example.com/v1", Kind: "Tenant", Name: name, UID: tenant.UID,
		Controller: new(true), BlockOwnerDeletion: new(true)}}
	assert.Equal(t, want, gotNS.OwnerReferences, "cluster-scoped child")
	assert.Equal(t, want, gotQuota.OwnerReferences, "namespaced child")

	// A namespaced owner cannot own the Namespace: refused before any request.
	cm, err := env.Client().CoreV1().ConfigMaps(env.Namespace()).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.ErrorIs(t, ownerref.SetControllerReferenceApplyConfig(cm, corev1ac.Namespace(nsName)), ownerref.ErrInvalidOwner)
}
