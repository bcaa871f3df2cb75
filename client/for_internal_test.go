package client

import (
	"reflect"
	"strings"
	"testing"

	"k8s.io/client-go/kubernetes"
)

// Every type a typed client of kubernetes.Interface serves resolves, once, to exactly one
// getter: its group client and the resource it is named after.
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
	for typ, where := range seen {
		b, err := bindingFor(typ)
		if err != nil {
			t.Errorf("%s (%s): %v", typ, where, err)
			continue
		}
		group, getter, _ := strings.Cut(where, ".")
		if b.Group != group || b.GVR.Resource != strings.ToLower(getter) {
			t.Errorf("%s resolved to %s %s, want %s", typ, b.Group, b.GVR, where)
		}
	}
	t.Logf("%d types", len(seen))
}
