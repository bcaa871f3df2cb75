package builtin

import (
	"context"
	"reflect"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
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

// Every generated getter reaches its typed client on a clientset, and its List lists through
// it: the table's closures, all 147 of them, run.
func TestEveryGetterServesItsType(t *testing.T) {
	cs := fake.NewClientset()
	for typ, g := range Getters() {
		c := g.Client(cs, "ns")
		if c == nil || !reflect.TypeOf(c).Implements(g.Iface) {
			t.Errorf("%v: %s().%s() gave %T, not a %v", typ, g.GroupMethod, g.ResourceMethod, c, g.Iface)
			continue
		}
		list, err := g.List(context.Background(), c, metav1.ListOptions{})
		if err != nil || list == nil {
			t.Errorf("%v: List: %v, %v", typ, list, err)
			continue
		}
		items, ok := reflect.TypeOf(list).Elem().FieldByName("Items")
		if !ok || items.Type.Elem() != typ.Elem() {
			t.Errorf("%v: List gave %T, not a list of it", typ, list)
		}
	}
}

func TestOf(t *testing.T) {
	bt, err := Of(reflect.TypeFor[*appsv1.ReplicaSet]())
	if err != nil || bt.GVK != appsv1.SchemeGroupVersion.WithKind("ReplicaSet") ||
		bt.GVR != appsv1.SchemeGroupVersion.WithResource("replicasets") || bt.Getter.ResourceMethod != "ReplicaSets" {
		t.Errorf("Of(*ReplicaSet) = %+v, %v", bt, err)
	}
	for typ, want := range map[reflect.Type]string{
		reflect.TypeFor[corev1.Pod]():      "not a pointer to an API struct",
		reflect.TypeFor[*corev1.Binding](): "kubernetes.Interface has no typed client for [/v1, Kind=Binding]",
		reflect.TypeFor[*struct{}]():       "not a runtime.Object",
	} {
		if _, err := Of(typ); err == nil || err.Error() != want {
			t.Errorf("Of(%v) = %v, want %q", typ, err, want)
		}
	}
}
