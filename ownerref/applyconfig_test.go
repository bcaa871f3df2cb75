package ownerref_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"

	"github.com/ctrlkit/ctrlkit/ownerref"
)

var tenantGVK = schema.GroupVersionKind{Group: "tenancy.example.com", Version: "v1", Kind: "Tenant"}

// ownerRefsJSON is what an apply of config sends as metadata.ownerReferences.
func ownerRefsJSON(t *testing.T, config any) []map[string]any {
	t.Helper()
	data, err := json.Marshal(config)
	require.NoError(t, err)
	var obj struct {
		Metadata struct {
			OwnerReferences []map[string]any `json:"ownerReferences"`
		} `json:"metadata"`
	}
	require.NoError(t, json.Unmarshal(data, &obj))
	return obj.Metadata.OwnerReferences
}

func ctrlRefJSON(apiVersion, kind, name, uid string) map[string]any {
	return map[string]any{"apiVersion": apiVersion, "kind": kind, "name": name, "uid": uid,
		"controller": true, "blockOwnerDeletion": true}
}

// Every owner shape, on a namespaced and a cluster-scoped child: the reference the apply sends.
func TestSetControllerReferenceApplyConfigOwnerShapes(t *testing.T) {
	scheme := runtime.NewScheme()
	scheme.AddKnownTypeWithName(tenantGVK, &widget{})

	unstructuredTenant := &unstructured.Unstructured{}
	unstructuredTenant.SetGroupVersionKind(tenantGVK)
	unstructuredTenant.SetName("acme")
	unstructuredTenant.SetUID("t-1")

	metadataOnly := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "acme", UID: "t-1"}}
	metadataWithKind := metadataOnly.DeepCopy()
	metadataWithKind.SetGroupVersionKind(tenantGVK)

	typedWithTypeMeta := &widget{TypeMeta: metav1.TypeMeta{APIVersion: "tenancy.example.com/v1", Kind: "Tenant"},
		ObjectMeta: metav1.ObjectMeta{Name: "acme", UID: "t-1"}}
	typedWithoutTypeMeta := &widget{ObjectMeta: metav1.ObjectMeta{Name: "acme", UID: "t-1"}}
	tenantRef := ctrlRefJSON("tenancy.example.com/v1", "Tenant", "acme", "t-1")

	cases := []struct {
		name  string
		owner metav1.Object
		opts  []ownerref.Option
		want  map[string]any
	}{
		{"built-in type, kind from client-go's scheme", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a", UID: "ns-1"}}, nil,
			ctrlRefJSON("v1", "Namespace", "team-a", "ns-1")},
		{"custom type with TypeMeta", typedWithTypeMeta, nil, tenantRef},
		{"custom type, kind from a scheme", typedWithoutTypeMeta, []ownerref.Option{ownerref.WithScheme(scheme)}, tenantRef},
		{"custom type, WithKind", typedWithoutTypeMeta, []ownerref.Option{ownerref.WithKind(tenantGVK)}, tenantRef},
		{"unstructured", unstructuredTenant, nil, tenantRef},
		{"metadata-only, WithKind", metadataOnly, []ownerref.Option{ownerref.WithKind(tenantGVK)}, tenantRef},
		{"metadata-only with the resource's kind set", metadataWithKind, nil, tenantRef},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			namespaced := corev1ac.ResourceQuota("quota", "team-a").WithSpec(corev1ac.ResourceQuotaSpec())
			require.NoError(t, ownerref.SetControllerReferenceApplyConfig(tc.owner, namespaced, tc.opts...))
			assert.Equal(t, []map[string]any{tc.want}, ownerRefsJSON(t, namespaced))

			clusterScoped := corev1ac.Namespace("team-a")
			require.NoError(t, ownerref.SetControllerReferenceApplyConfig(tc.owner, clusterScoped, tc.opts...))
			assert.Equal(t, []map[string]any{tc.want}, ownerRefsJSON(t, clusterScoped))
		})
	}
}

func TestSetControllerReferenceApplyConfigRefuses(t *testing.T) {
	tenant := func(mods ...func(*unstructured.Unstructured)) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(tenantGVK)
		u.SetName("acme")
		u.SetUID("t-1")
		for _, m := range mods {
			m(u)
		}
		return u
	}
	rs := replicaSet("team-a", "web", "rs-1")
	cases := []struct {
		name    string
		owner   metav1.Object
		config  *corev1ac.ConfigMapApplyConfiguration
		want    error
		message string
	}{
		{"owner without uid", tenant(func(u *unstructured.Unstructured) { u.SetUID("") }),
			corev1ac.ConfigMap("cm", "team-a"), ownerref.ErrMissingUID, "owner has no uid"},
		{"owner without name", tenant(func(u *unstructured.Unstructured) { u.SetName("") }),
			corev1ac.ConfigMap("cm", "team-a"), ownerref.ErrInvalidOwner, "Tenant owner has no name"},
		{"owner without kind", &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "acme", UID: "t-1"}},
			corev1ac.ConfigMap("cm", "team-a"), ownerref.ErrUnknownKind, "pass ownerref.WithKind"},
		{"metadata-only owner as the API server sends it", &metav1.PartialObjectMetadata{
			TypeMeta:   metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadata"},
			ObjectMeta: metav1.ObjectMeta{Name: "acme", UID: "t-1"}},
			corev1ac.ConfigMap("cm", "team-a"), ownerref.ErrUnknownKind, "pass ownerref.WithKind"},
		{"namespaced owner of a cluster-scoped child", rs,
			corev1ac.ConfigMap("cm", ""), ownerref.ErrInvalidOwner, "a namespaced owner cannot own a cluster-scoped object"},
		{"owner in another namespace", rs,
			corev1ac.ConfigMap("cm", "team-b"), ownerref.ErrInvalidOwner, "owner and object are in different namespaces"},
		{"another controller", tenant(),
			corev1ac.ConfigMap("cm", "team-a").WithOwnerReferences(metav1ac.OwnerReference().WithAPIVersion("apps/v1").
				WithKind("ReplicaSet").WithName("web").WithUID("rs-1").WithController(true)),
			ownerref.ErrAlreadyOwned, "team-a/cm is already controlled by ReplicaSet web (uid rs-1); refusing Tenant acme (uid t-1)"},
		{"nil owner", nil, corev1ac.ConfigMap("cm", "team-a"), ownerref.ErrNilObject, "owner"},
		{"nil apply configuration", tenant(), nil, ownerref.ErrNilObject, "apply configuration"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var before []byte
			if tc.config != nil {
				before, _ = json.Marshal(tc.config)
			}
			err := ownerref.SetControllerReferenceApplyConfig(tc.owner, tc.config)
			require.ErrorIs(t, err, tc.want)
			assert.Contains(t, err.Error(), tc.message)
			if tc.config != nil {
				assert.Contains(t, err.Error(), "cm", "the error names the child")
				after, _ := json.Marshal(tc.config)
				assert.JSONEq(t, string(before), string(after), "config unchanged")
			}
		})
	}
}

// Other owners stay, the same owner is replaced rather than listed twice (an apply with two
// entries of one uid is refused), and WithBlockOwnerDeletion(false) is honoured.
func TestSetControllerReferenceApplyConfigReplaces(t *testing.T) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a", UID: "ns-1"}}
	other := metav1ac.OwnerReference().WithAPIVersion("v1").WithKind("ConfigMap").WithName("other").WithUID("cm-1")
	rb := rbacv1ac.RoleBinding("admins", "team-a").WithOwnerReferences(other)

	require.NoError(t, ownerref.SetControllerReferenceApplyConfig(ns, rb))
	require.NoError(t, ownerref.SetControllerReferenceApplyConfig(ns, rb, ownerref.WithBlockOwnerDeletion(false)))
	want := ctrlRefJSON("v1", "Namespace", "team-a", "ns-1")
	want["blockOwnerDeletion"] = false
	assert.Equal(t, []map[string]any{
		{"apiVersion": "v1", "kind": "ConfigMap", "name": "other", "uid": "cm-1"},
		want,
	}, ownerRefsJSON(t, rb))
	assert.Equal(t, "admins", *rb.GetName(), "the rest of the configuration is untouched")
}

// A configuration whose metadata nothing set yet gets it, with the reference; on an error it
// stays as it was.
func TestSetControllerReferenceApplyConfigWithoutMetadata(t *testing.T) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a", UID: "ns-1"}}
	config := &rbacv1ac.ClusterRoleBindingApplyConfiguration{}
	require.NoError(t, ownerref.SetControllerReferenceApplyConfig(ns, config))
	assert.Equal(t, []map[string]any{ctrlRefJSON("v1", "Namespace", "team-a", "ns-1")}, ownerRefsJSON(t, config))

	config = &rbacv1ac.ClusterRoleBindingApplyConfiguration{}
	require.ErrorIs(t, ownerref.SetControllerReferenceApplyConfig(replicaSet("team-a", "web", "rs-1"), config), ownerref.ErrInvalidOwner)
	assert.Nil(t, config.ObjectMetaApplyConfiguration)
}

// workspaceApply is a custom resource's apply configuration written by hand, in the shape
// applyconfiguration-gen generates (client.ApplyConfig's tests use the same).
type workspaceApply struct {
	metav1ac.TypeMetaApplyConfiguration    `json:",inline"`
	*metav1ac.ObjectMetaApplyConfiguration `json:"metadata,omitempty"`
}

func (workspaceApply) IsApplyConfiguration() {}

// valueMetaApply embeds the metadata as a value rather than a pointer.
type valueMetaApply struct {
	metav1ac.ObjectMetaApplyConfiguration `json:"metadata"`
}

func (valueMetaApply) IsApplyConfiguration() {}

// noMetaApply is an apply configuration without the metadata of an object's.
type noMetaApply struct{}

func (noMetaApply) IsApplyConfiguration() {}

func TestSetControllerReferenceApplyConfigHandWritten(t *testing.T) {
	tenant := &unstructured.Unstructured{}
	tenant.SetGroupVersionKind(tenantGVK)
	tenant.SetName("acme")
	tenant.SetUID("t-1")
	want := []map[string]any{ctrlRefJSON("tenancy.example.com/v1", "Tenant", "acme", "t-1")}

	ws := &workspaceApply{ObjectMetaApplyConfiguration: metav1ac.ObjectMeta().WithName("dev").WithNamespace("team-a")}
	require.NoError(t, ownerref.SetControllerReferenceApplyConfig(tenant, ws))
	assert.Equal(t, want, ownerRefsJSON(t, ws))

	bare := &workspaceApply{}
	require.NoError(t, ownerref.SetControllerReferenceApplyConfig(tenant, bare))
	assert.Equal(t, want, ownerRefsJSON(t, bare), "metadata allocated")

	byValue := &valueMetaApply{}
	require.NoError(t, ownerref.SetControllerReferenceApplyConfig(tenant, byValue))
	assert.Equal(t, want, ownerRefsJSON(t, byValue))

	for _, config := range []runtime.ApplyConfiguration{&noMetaApply{}, workspaceApply{}} {
		err := ownerref.SetControllerReferenceApplyConfig(tenant, config)
		require.ErrorIs(t, err, errors.ErrUnsupported)
		assert.Contains(t, err.Error(), "ownerref_test.")
	}
}
