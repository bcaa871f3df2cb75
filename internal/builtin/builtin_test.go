package builtin

import (
	"reflect"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestNamespaced(t *testing.T) {
	for gvr, want := range map[schema.GroupVersionResource]bool{
		{Version: "v1", Resource: "pods"}:                                                     true,
		{Version: "v1", Resource: "namespaces"}:                                               false,
		{Version: "v1", Resource: "nodes"}:                                                    false,
		{Version: "v1", Resource: "persistentvolumes"}:                                        false,
		{Version: "v1", Resource: "resourcequotas"}:                                           true,
		{Group: "apps", Version: "v1", Resource: "replicasets"}:                               true,
		{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"}:         false,
		{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"}:         true,
		{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}: false,
		{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}:                     true,
	} {
		got, known := Namespaced(gvr)
		if gvr.Group == "apiextensions.k8s.io" {
			// Not served by kubernetes.Interface (it has its own clientset): unknown, not a guess.
			if known {
				t.Errorf("%v: known, want unknown", gvr)
			}
			continue
		}
		if !known || got != want {
			t.Errorf("%v: namespaced=%v known=%v, want namespaced=%v", gvr, got, known, want)
		}
	}
	if _, known := Namespaced(schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "tenants"}); known {
		t.Error("a custom resource is known")
	}
}

func TestGetters(t *testing.T) {
	g, ok := Getters()[reflect.TypeFor[*appsv1.ReplicaSet]()]
	if !ok || g.GroupMethod != "AppsV1" || g.ResourceMethod != "ReplicaSets" || !g.Namespaced || g.Resource() != "replicasets" {
		t.Errorf("ReplicaSet getter = %+v, %v", g, ok)
	}
	if g := Getters()[reflect.TypeFor[*corev1.Namespace]()]; g.Namespaced {
		t.Errorf("Namespace getter takes a namespace: %+v", g)
	}
}
