package owner

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
)

func child(namespace, apiVersion, kind, name string, uid types.UID) *metav1.ObjectMeta {
	return &metav1.ObjectMeta{Namespace: namespace, Name: "child", OwnerReferences: []metav1.OwnerReference{{
		APIVersion: apiVersion, Kind: kind, Name: name, UID: uid, Controller: new(true)}}}
}

func TestKeys(t *testing.T) {
	cached := map[cache.ObjectName]types.UID{
		{Namespace: "ns", Name: "web"}: "rs-uid",
		{Name: "acme"}:                 "tenant-uid",
	}
	synced := false
	uidOf := func(ns, name string) (types.UID, bool) {
		uid, ok := cached[cache.ObjectName{Namespace: ns, Name: name}]
		return uid, ok
	}
	rs := NewResolver(appsv1.SchemeGroupVersion.WithResource("replicasets"), "ReplicaSet", uidOf, func() bool { return synced }, nil)
	tenants := NewResolver(schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "tenants"}, "", uidOf, func() bool { return synced }, nil)
	roles := NewResolver(rbacv1.SchemeGroupVersion.WithResource("clusterroles"), "ClusterRole", uidOf, func() bool { return synced }, nil)

	for _, tc := range []struct {
		name string
		r    *Resolver
		obj  metav1.Object
		want []cache.ObjectName // after the owners synced
		pre  []cache.ObjectName // before
	}{
		{"namespaced owner", rs, child("ns", "apps/v1", "ReplicaSet", "web", "rs-uid"),
			[]cache.ObjectName{{Namespace: "ns", Name: "web"}}, []cache.ObjectName{{Namespace: "ns", Name: "web"}}},
		{"another UID", rs, child("ns", "apps/v1", "ReplicaSet", "web", "old"), nil, []cache.ObjectName{{Namespace: "ns", Name: "web"}}},
		{"another kind", rs, child("ns", "apps/v1", "Deployment", "web", "rs-uid"), nil, nil},
		{"another group", rs, child("ns", "extensions/v1beta1", "ReplicaSet", "web", "rs-uid"), nil, nil},
		{"no owner", rs, &metav1.ObjectMeta{Namespace: "ns", Name: "orphan"}, nil, nil},
		{"cluster-scoped child of a namespaced owner", rs, child("", "apps/v1", "ReplicaSet", "web", "rs-uid"), nil, nil},
		{"cluster-scoped custom owner of a namespaced child", tenants, child("team-a", "example.com/v1", "Tenant", "acme", "tenant-uid"),
			[]cache.ObjectName{{Name: "acme"}}, []cache.ObjectName{{Name: "acme"}}},
		{"custom owner not cached", tenants, child("team-a", "example.com/v1", "Tenant", "gone", "x"),
			nil, []cache.ObjectName{{Namespace: "team-a", Name: "gone"}, {Name: "gone"}}},
		{"cluster-scoped built-in owner", roles, child("ns", "rbac.authorization.k8s.io/v1", "ClusterRole", "acme", "tenant-uid"),
			[]cache.ObjectName{{Name: "acme"}}, []cache.ObjectName{{Name: "acme"}}},
	} {
		synced = false
		if keys, n := tc.r.Keys(tc.obj); !equal(keys[:n], tc.pre) {
			t.Errorf("%s, before sync: %v, want %v", tc.name, keys[:n], tc.pre)
		}
		synced = true
		if keys, n := tc.r.Keys(tc.obj); !equal(keys[:n], tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, keys[:n], tc.want)
		}
	}
}

func equal(a, b []cache.ObjectName) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestCheckScopes(t *testing.T) {
	pods, sas := corev1.SchemeGroupVersion.WithResource("pods"), corev1.SchemeGroupVersion.WithResource("serviceaccounts")
	nss, roles := corev1.SchemeGroupVersion.WithResource("namespaces"), rbacv1.SchemeGroupVersion.WithResource("clusterroles")
	custom := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "tenants"}
	for _, tc := range []struct {
		children, owners schema.GroupVersionResource
		ok               bool
	}{
		{pods, sas, true}, {pods, roles, true}, {nss, roles, true}, {nss, sas, false}, {nss, custom, true}, {custom, sas, true},
	} {
		if got, _ := CheckScopes(tc.children, tc.owners); got != tc.ok {
			t.Errorf("CheckScopes(%v, %v) = %v, want %v", tc.children.Resource, tc.owners.Resource, got, tc.ok)
		}
	}
}

func TestUnresolvable(t *testing.T) {
	widgets := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	var cached []metav1.Object
	lookups := 0
	anyCached := func() (metav1.Object, bool) {
		lookups++
		if len(cached) == 0 {
			return nil, false
		}
		return cached[0], true
	}
	none := func(string, string) (types.UID, bool) { return "", false }
	synced := func() bool { return true }
	custom := NewResolver(widgets, "Widget", none, synced, anyCached)
	rs := NewResolver(appsv1.SchemeGroupVersion.WithResource("replicasets"), "ReplicaSet", none, synced, nil)

	clusterChild := child("", "example.com/v1", "Widget", "w", "uid")
	if custom.Unresolvable(clusterChild) {
		t.Error("owners' scope unknown (empty cache): Unresolvable = true, want false")
	}
	cached = []metav1.Object{&metav1.ObjectMeta{Namespace: "ns", Name: "w"}}
	if !custom.Unresolvable(clusterChild) {
		t.Error("cluster-scoped child of namespaced custom owners: Unresolvable = false, want true")
	}
	before := lookups
	cached = nil // the scope is learned once
	if !custom.Unresolvable(clusterChild) || lookups != before {
		t.Errorf("second call: want true without reading the cache again (lookups %d → %d)", before, lookups)
	}
	for _, tc := range []struct {
		name string
		r    *Resolver
		obj  metav1.Object
		want bool
	}{
		{"namespaced child", custom, child("ns", "example.com/v1", "Widget", "w", "uid"), false},
		{"another kind", custom, child("", "example.com/v1", "Gadget", "w", "uid"), false},
		{"no controller", custom, &metav1.ObjectMeta{Name: "orphan"}, false},
		{"built-in namespaced owners", rs, child("", "apps/v1", "ReplicaSet", "web", "uid"), true},
	} {
		if got := tc.r.Unresolvable(tc.obj); got != tc.want {
			t.Errorf("%s: Unresolvable = %v, want %v", tc.name, got, tc.want)
		}
	}

	clusterOwners := NewResolver(widgets, "Widget", none, synced, func() (metav1.Object, bool) { return &metav1.ObjectMeta{Name: "w"}, true })
	if clusterOwners.Unresolvable(clusterChild) {
		t.Error("cluster-scoped custom owners: Unresolvable = true, want false")
	}
}

// A custom resource's scope, once the owners' cache showed it, leaves the one key it allows for
// an owner not cached (yet): a key that cannot exist is not enqueued.
func TestKeysLearnTheOwnersScope(t *testing.T) {
	widgets := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	none := func(string, string) (types.UID, bool) { return "", false }
	incomplete := func() bool { return false }
	for _, tc := range []struct {
		name   string
		cached metav1.Object // nil: the cache is empty
		want   []cache.ObjectName
	}{
		{"scope unknown", nil, []cache.ObjectName{{Namespace: "ns", Name: "w"}, {Name: "w"}}},
		{"namespaced owners", &metav1.ObjectMeta{Namespace: "other", Name: "x"}, []cache.ObjectName{{Namespace: "ns", Name: "w"}}},
		{"cluster-scoped owners", &metav1.ObjectMeta{Name: "x"}, []cache.ObjectName{{Name: "w"}}},
	} {
		r := NewResolver(widgets, "Widget", none, incomplete, func() (metav1.Object, bool) { return tc.cached, tc.cached != nil })
		if keys, n := r.Keys(child("ns", "example.com/v1", "Widget", "w", "uid")); !equal(keys[:n], tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, keys[:n], tc.want)
		}
	}
}
