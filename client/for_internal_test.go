package client

import (
	"reflect"
	"testing"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
)

// Every type a typed client of kubernetes.Interface serves resolves, once, to exactly one
// getter, and For serves it on a real and a fake clientset alike.
func TestEveryTypedClientTypeResolves(t *testing.T) {
	seen := map[reflect.Type]string{}
	ci := reflect.TypeFor[kubernetes.Interface]()
	for i := range ci.NumMethod() {
		gm := ci.Method(i)
		if gm.Type.NumOut() != 1 || gm.Type.Out(0).Kind() != reflect.Interface {
			continue
		}
		gi := gm.Type.Out(0)
		for j := range gi.NumMethod() {
			ft := gi.Method(j).Type
			if ft.NumOut() != 1 || ft.Out(0).Kind() != reflect.Interface {
				continue
			}
			if get, ok := ft.Out(0).MethodByName("Get"); ok && get.Type.NumOut() == 2 {
				typ := get.Type.Out(0)
				if prev, dup := seen[typ]; dup {
					t.Errorf("%s is served by %s and %s.%s", typ, prev, gm.Name, gi.Method(j).Name)
				}
				seen[typ] = gm.Name + "." + gi.Method(j).Name
			}
		}
	}
	if len(seen) < 50 {
		t.Fatalf("found only %d typed clients", len(seen))
	}
	real, err := kubernetes.NewForConfig(testConfig())
	if err != nil {
		t.Fatal(err)
	}
	for typ, where := range seen {
		b, err := resolve(typ)
		if err != nil {
			t.Errorf("%s (%s): %v", typ, where, err)
			continue
		}
		if b.getter.GroupMethod+"."+b.getter.ResourceMethod != where {
			t.Errorf("%s resolved to %s.%s, want %s", typ, b.getter.GroupMethod, b.getter.ResourceMethod, where)
		}
		for _, cs := range []kubernetes.Interface{real, fake.NewClientset()} {
			group := reflect.ValueOf(cs).MethodByName(b.getter.GroupMethod).Call(nil)[0]
			if !group.MethodByName(b.getter.ResourceMethod).IsValid() {
				t.Errorf("%T has no %s.%s", cs, b.getter.GroupMethod, b.getter.ResourceMethod)
			}
		}
	}
	t.Logf("%d types", len(seen))
}

func testConfig() *rest.Config { return &rest.Config{Host: "https://127.0.0.1:1"} }
