package builtin

import (
	"errors"
	"fmt"
	"reflect"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// info is what the generated table (zz_generated_types.go, table) records of one typed client of
// kubernetes.Interface: data only, no call into the client, so that a binary links the typed
// code of the types it uses and no other.
type info struct {
	group      string       // the clientset's method returning the group client: CoreV1
	resource   string       // the plural its getter is named after, lower case: pods
	namespaced bool         // the getter takes a namespace
	status     bool         // the typed client has UpdateStatus
	list       reflect.Type // *corev1.PodList
}

// groupClient is what every group client of kubernetes.Interface (CoreV1Interface,
// AppsV1Interface, ...) has: the REST client its typed clients send through.
type groupClient interface {
	RESTClient() rest.Interface
}

// Type is a built-in API type as kubernetes.Interface serves it.
type Type struct {
	GVK        schema.GroupVersionKind     // from client-go's scheme (its first kind)
	GVR        schema.GroupVersionResource // GVK's group and version, the getter's resource
	Namespaced bool                        // the resource is namespaced
	Status     bool                        // the resource has a status subresource (UpdateStatus)
	Obj, List  reflect.Type                // *corev1.Pod, *corev1.PodList
	Group      string                      // the clientset's method serving it: CoreV1

	itemsField, listMetaField []int // the list struct's Items and ListMeta
}

// Of resolves t, such as *corev1.Pod, to its kind, resource and list type. The error says
// why t is not a built-in type the clientset serves; callers wrap it with their own sentinel.
func Of(t reflect.Type) (Type, error) {
	if v, ok := resolved.Load(t); ok {
		if err, isErr := v.(error); isErr {
			return Type{}, err
		}
		return v.(Type), nil
	}
	bt, err := of(t)
	if err != nil {
		resolved.Store(t, err)
		return Type{}, err
	}
	resolved.Store(t, bt)
	return bt, nil
}

var resolved sync.Map // reflect.Type → Type or error

func of(t reflect.Type) (Type, error) {
	gvks, err := kindsOf(t)
	if err != nil {
		return Type{}, err
	}
	in, ok := table[t]
	if !ok {
		return Type{}, fmt.Errorf("kubernetes.Interface has no typed client for %v", gvks)
	}
	items, ok := in.list.Elem().FieldByName("Items")
	if !ok || items.Type.Kind() != reflect.Slice || items.Type.Elem() != t.Elem() {
		return Type{}, fmt.Errorf("its list type %v has no Items of %v", in.list, t.Elem())
	}
	lm, ok := in.list.Elem().FieldByName("ListMeta")
	if !ok {
		return Type{}, fmt.Errorf("its list type %v has no ListMeta", in.list)
	}
	return Type{GVK: gvks[0], GVR: gvks[0].GroupVersion().WithResource(in.resource), Namespaced: in.namespaced,
		Status: in.status, Obj: t, List: in.list, Group: in.group, itemsField: items.Index, listMetaField: lm.Index}, nil
}

// kindsOf returns the kinds client-go's scheme knows Go type t by, or why it knows none.
func kindsOf(t reflect.Type) ([]schema.GroupVersionKind, error) {
	if t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return nil, errors.New("not a pointer to an API struct")
	}
	obj, ok := reflect.New(t.Elem()).Interface().(runtime.Object)
	if !ok {
		return nil, errors.New("not a runtime.Object")
	}
	gvks, unversioned, err := scheme.Scheme.ObjectKinds(obj)
	if err != nil || unversioned || len(gvks) == 0 {
		return nil, errors.New("not registered in client-go's scheme (a custom resource has customresource.NewClient and informer.ForResource)")
	}
	return gvks, nil
}

// isNil reports whether v is nil or a typed nil, which a clientset that does not serve a group
// (a partial test double), or a fake's RESTClient(), returns.
func isNil(v any) bool {
	if v == nil {
		return true
	}
	rv := reflect.ValueOf(v)
	return rv.Kind() == reflect.Pointer && rv.IsNil()
}

// resource is what resources knows of one built-in resource.
type resource struct {
	typ        reflect.Type
	namespaced bool
}

// resources maps every built-in resource (in each group version client-go serves it) to its
// Go type and whether it is namespaced.
var resources = sync.OnceValue(func() map[schema.GroupVersionResource]resource {
	out := map[schema.GroupVersionResource]resource{}
	for t, in := range table {
		gvks, err := kindsOf(t)
		if err != nil {
			continue
		}
		for _, gvk := range gvks {
			out[gvk.GroupVersion().WithResource(in.resource)] = resource{typ: t, namespaced: in.namespaced}
		}
	}
	return out
})

// Namespaced reports whether gvr, a resource client-go serves, is namespaced; known is false
// for a resource it does not serve (a custom resource, a subresource, a typo).
func Namespaced(gvr schema.GroupVersionResource) (namespaced, known bool) {
	r, known := resources()[gvr]
	return r.namespaced, known
}

// TypeOf returns the Go type of gvr, a resource client-go serves; ok is false for a resource
// it does not serve.
func TypeOf(gvr schema.GroupVersionResource) (t reflect.Type, ok bool) {
	r, ok := resources()[gvr]
	return r.typ, ok
}

// Types returns every type kubernetes.Interface has a typed client for.
func Types() []reflect.Type {
	out := make([]reflect.Type, 0, len(table))
	for t := range table {
		out = append(out, t)
	}
	return out
}

// groupOf returns cs's group client serving bt (cs.CoreV1()), nil when cs returns none.
func groupOf(bt Type, cs kubernetes.Interface) groupClient {
	get, ok := groups[bt.Group]
	if !ok {
		return nil
	}
	g := get(cs)
	if isNil(g) {
		return nil
	}
	return g
}
