package builtin

import (
	"reflect"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
)

// Getter is one resource getter of kubernetes.Interface, such as CoreV1().Pods(namespace).
type Getter struct {
	GroupMethod    string       // CoreV1
	ResourceMethod string       // Pods
	Namespaced     bool         // the getter takes a namespace
	Iface          reflect.Type // the typed interface, e.g. PodInterface
}

// Resource is the resource a getter serves: its method's name in lower case, as client-go's
// generator names the methods after the plural.
func (g Getter) Resource() string { return strings.ToLower(g.ResourceMethod) }

// Getters maps every type a typed client of kubernetes.Interface gets (*corev1.Pod) to that
// client's getter. It depends only on the interface's static type, so it is built once per
// process.
var Getters = sync.OnceValue(func() map[reflect.Type]Getter {
	out := map[reflect.Type]Getter{}
	ci := reflect.TypeFor[kubernetes.Interface]()
	str := reflect.TypeFor[string]()
	for i := range ci.NumMethod() {
		gm := ci.Method(i)
		if gm.Type.NumIn() != 0 || gm.Type.NumOut() != 1 || gm.Type.Out(0).Kind() != reflect.Interface {
			continue
		}
		gi := gm.Type.Out(0)
		for j := range gi.NumMethod() {
			rm := gi.Method(j)
			ft := rm.Type
			namespaced := ft.NumIn() == 1 && ft.In(0) == str
			if (ft.NumIn() != 0 && !namespaced) || ft.NumOut() != 1 || ft.Out(0).Kind() != reflect.Interface {
				continue
			}
			ri := ft.Out(0)
			get, ok := ri.MethodByName("Get")
			if !ok || get.Type.NumIn() != 3 || get.Type.NumOut() != 2 {
				continue
			}
			out[get.Type.Out(0)] = Getter{GroupMethod: gm.Name, ResourceMethod: rm.Name, Namespaced: namespaced, Iface: ri}
		}
	}
	return out
})

// scopes maps every built-in resource (in each group version client-go serves it) to whether
// it is namespaced.
var scopes = sync.OnceValue(func() map[schema.GroupVersionResource]bool {
	out := map[schema.GroupVersionResource]bool{}
	for t, g := range Getters() {
		if t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
			continue
		}
		obj, ok := reflect.New(t.Elem()).Interface().(runtime.Object)
		if !ok {
			continue
		}
		gvks, _, err := scheme.Scheme.ObjectKinds(obj)
		if err != nil {
			continue
		}
		for _, gvk := range gvks {
			out[gvk.GroupVersion().WithResource(g.Resource())] = g.Namespaced
		}
	}
	return out
})

// Namespaced reports whether gvr, a resource client-go serves, is namespaced; known is false
// for a resource it does not serve (a custom resource, a subresource, a typo).
func Namespaced(gvr schema.GroupVersionResource) (namespaced, known bool) {
	namespaced, known = scopes()[gvr]
	return namespaced, known
}
