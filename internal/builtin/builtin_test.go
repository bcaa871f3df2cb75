package builtin

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	clienttesting "k8s.io/client-go/testing"
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

// Every type's resource maps back to the type, and a resource client-go does not serve to none.
func TestTypeOf(t *testing.T) {
	for _, typ := range Types() {
		bt, err := Of(typ)
		if err != nil {
			t.Fatal(err)
		}
		if got, ok := TypeOf(bt.GVR); !ok || got != typ {
			t.Errorf("TypeOf(%v) = %v, %v; want %v", bt.GVR, got, ok, typ)
		}
	}
	if got, ok := TypeOf(schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "tenants"}); ok {
		t.Errorf("a custom resource has a type: %v", got)
	}
}

func TestTypes(t *testing.T) {
	in, ok := table[reflect.TypeFor[*appsv1.ReplicaSet]()]
	if !ok || in.group != "AppsV1" || in.resource != "replicasets" || !in.namespaced || !in.status || in.list != reflect.TypeFor[*appsv1.ReplicaSetList]() {
		t.Errorf("ReplicaSet = %+v, %v", in, ok)
	}
	if in := table[reflect.TypeFor[*corev1.Namespace]()]; in.namespaced {
		t.Errorf("Namespace takes a namespace: %+v", in)
	}
	if in := table[reflect.TypeFor[*corev1.ConfigMap]()]; in.status {
		t.Errorf("ConfigMap has a status: %+v", in)
	}
	if len(Types()) != len(table) {
		t.Errorf("Types() has %d, the table %d", len(Types()), len(table))
	}
}

// Every type of the table lists, watches and creates through a fake clientset, and its
// group's REST client is the one a real clientset's typed client sends through: the table's
// entries, all of them, run.
func TestEveryTypeServedByAFakeAndARealClientset(t *testing.T) {
	ctx := context.Background()
	fakeCS := fake.NewClientset()
	realCS, err := kubernetes.NewForConfig(&rest.Config{Host: "https://example.invalid"})
	if err != nil {
		t.Fatal(err)
	}
	for _, typ := range Types() {
		bt, err := Of(typ)
		if err != nil {
			t.Errorf("%v: %v", typ, err)
			continue
		}
		c, err := Client[Object](bt, fakeCS, "ns")
		if err != nil {
			t.Errorf("%v: fake: %v", typ, err)
			continue
		}
		obj := reflect.New(typ.Elem()).Interface().(Object)
		obj.SetName("a")
		if bt.Namespaced {
			obj.SetNamespace("ns")
		}
		if _, err := c.Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			t.Errorf("%v: create: %v", typ, err)
			continue
		}
		list, err := c.List(ctx, metav1.ListOptions{})
		if err != nil || reflect.TypeOf(list) != bt.List || len(Items[Object](bt, list)) != 1 {
			t.Errorf("%v: List gave %T %v, %v; want a %v of one", typ, list, list, err, bt.List)
		}
		w, err := c.Watch(ctx, metav1.ListOptions{})
		if err != nil {
			t.Errorf("%v: watch: %v", typ, err)
		} else {
			w.Stop()
		}
		if want := generatedFakeListResource(t, fakeCS, bt); want != bt.GVR {
			t.Errorf("%v: lists %v, the generated fake client %v", typ, bt.GVR, want)
		}
		rc, err := Client[Object](bt, realCS, "ns")
		if err != nil {
			t.Errorf("%v: real: %v", typ, err)
			continue
		}
		if got := rc.(interface{ GetClient() rest.Interface }).GetClient(); got != groupOf(bt, realCS).RESTClient() {
			t.Errorf("%v: real client sends through %v, not its group's REST client", typ, got)
		}
	}
}

// generatedFakeListResource lists through cs's generated typed client of bt, found by method
// name (in a test only: the linker would keep every method in a library), and returns the
// resource of the action it recorded.
func generatedFakeListResource(t *testing.T, cs *fake.Clientset, bt Type) schema.GroupVersionResource {
	t.Helper()
	group := reflect.ValueOf(cs).MethodByName(bt.Group).Call(nil)[0]
	var getter reflect.Value
	for i := range group.NumMethod() {
		m := group.Type().Method(i)
		if m.Type.NumOut() != 1 || m.Type.Out(0).Kind() != reflect.Interface {
			continue
		}
		if get, ok := m.Type.Out(0).MethodByName("Get"); ok && get.Type.NumOut() == 2 && get.Type.Out(0) == bt.Obj {
			getter = group.Method(i)
		}
	}
	if !getter.IsValid() {
		t.Fatalf("%s has no getter of %v", bt.Group, bt.Obj)
	}
	var args []reflect.Value
	if getter.Type().NumIn() == 1 {
		args = append(args, reflect.ValueOf("ns"))
	}
	c := getter.Call(args)[0]
	cs.ClearActions()
	c.MethodByName("List").Call([]reflect.Value{reflect.ValueOf(context.Background()), reflect.ValueOf(metav1.ListOptions{})})
	return cs.Actions()[0].GetResource()
}

// A fake's reactors and recorded actions see what the client sends, and List filters by label
// as the generated fake does.
func TestAFakeSeesTheActions(t *testing.T) {
	ctx := context.Background()
	cs := fake.NewClientset(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", Labels: map[string]string{"app": "x"}}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "b"}})
	cs.PrependReactor("delete", "configmaps", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("refused")
	})
	bt, err := Of(reflect.TypeFor[*corev1.ConfigMap]())
	if err != nil {
		t.Fatal(err)
	}
	c, err := Client[*corev1.ConfigMap](bt, cs, "ns")
	if err != nil {
		t.Fatal(err)
	}
	list, err := c.List(ctx, metav1.ListOptions{LabelSelector: "app=x"})
	if err != nil {
		t.Fatal(err)
	}
	if items := Items[*corev1.ConfigMap](bt, list); len(items) != 1 || items[0].Name != "a" {
		t.Errorf("List app=x gave %v", items)
	}
	if err := c.Delete(ctx, "a", metav1.DeleteOptions{}); err == nil || err.Error() != "refused" {
		t.Errorf("Delete = %v, want the reactor's error", err)
	}
	got, err := c.Get(ctx, "b", metav1.GetOptions{})
	if err != nil || got.Name != "b" {
		t.Errorf("Get = %v, %v", got, err)
	}
	if n := len(cs.Actions()); n != 3 {
		t.Errorf("%d actions recorded, want 3: %v", n, cs.Actions())
	}
}

// A clientset whose group client is missing, or is neither real nor a fake, is an error that
// names it, not a panic.
func TestAClientsetWithoutTheGroup(t *testing.T) {
	bt, err := Of(reflect.TypeFor[*corev1.ConfigMap]())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Client[*corev1.ConfigMap](bt, partial{}, "ns"); err == nil || !strings.Contains(err.Error(), "returned no CoreV1 client") {
		t.Errorf("nil group: %v", err)
	}
	if _, err := Client[*corev1.ConfigMap](bt, partial{core: &otherCore{}}, "ns"); err == nil || !strings.Contains(err.Error(), "no REST client and no client-go fake") {
		t.Errorf("neither real nor fake: %v", err)
	}
}

// A test double that wraps a group client by embedding it (to fail some of its calls) is
// looked through to the fake or the REST client it wraps.
func TestAWrappedGroupClientIsLookedThrough(t *testing.T) {
	bt, err := Of(reflect.TypeFor[*corev1.ConfigMap]())
	if err != nil {
		t.Fatal(err)
	}
	fakeCS := fake.NewClientset(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}})
	c, err := Client[*corev1.ConfigMap](bt, partial{core: wrappedCore{fakeCS.CoreV1()}}, "ns")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := c.Get(context.Background(), "a", metav1.GetOptions{}); err != nil || got.Name != "a" {
		t.Errorf("Get through a wrapped fake = %v, %v", got, err)
	}
	realCS, err := kubernetes.NewForConfig(&rest.Config{Host: "https://example.invalid"})
	if err != nil {
		t.Fatal(err)
	}
	c, err = Client[*corev1.ConfigMap](bt, partial{core: &wrappedCore{realCS.CoreV1()}}, "ns")
	if err != nil {
		t.Fatal(err)
	}
	if got := c.(interface{ GetClient() rest.Interface }).GetClient(); got != realCS.CoreV1().RESTClient() {
		t.Errorf("a wrapped real client sends through %v", got)
	}
}

type wrappedCore struct{ typedcorev1.CoreV1Interface }

type partial struct {
	kubernetes.Interface
	core typedcorev1.CoreV1Interface
}

func (p partial) CoreV1() typedcorev1.CoreV1Interface { return p.core }

type otherCore struct{ typedcorev1.CoreV1Interface }

func (*otherCore) RESTClient() rest.Interface { return nil }

func TestOf(t *testing.T) {
	bt, err := Of(reflect.TypeFor[*appsv1.ReplicaSet]())
	if err != nil || bt.GVK != appsv1.SchemeGroupVersion.WithKind("ReplicaSet") ||
		bt.GVR != appsv1.SchemeGroupVersion.WithResource("replicasets") || bt.Group != "AppsV1" || !bt.Namespaced || !bt.Status ||
		bt.List != reflect.TypeFor[*appsv1.ReplicaSetList]() {
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
