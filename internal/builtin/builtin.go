package builtin

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
)

// Getter is one resource getter of kubernetes.Interface, such as CoreV1().Pods(namespace).
type Getter struct {
	GroupMethod    string       // CoreV1
	ResourceMethod string       // Pods
	Namespaced     bool         // the getter takes a namespace
	Iface          reflect.Type // the typed interface, e.g. PodInterface
	// Client is the getter: the typed client of namespace ns ("" and ignored for a
	// cluster-scoped resource) from cs, e.g. cs.CoreV1().Pods(ns), as an Iface; nil when cs
	// returns no group client.
	Client func(cs kubernetes.Interface, ns string) any
	// List calls List on c, a client Client returned.
	List func(ctx context.Context, c any, opts metav1.ListOptions) (runtime.Object, error)
	// Watch calls Watch on c, a client Client returned.
	Watch func(ctx context.Context, c any, opts metav1.ListOptions) (watch.Interface, error)
}

// Resource is the resource a getter serves: its method's name in lower case, as client-go's
// generator names the methods after the plural.
func (g Getter) Resource() string { return strings.ToLower(g.ResourceMethod) }

// Getters maps every type a typed client of kubernetes.Interface gets (*corev1.Pod) to that
// client's getter. The table is generated (zz_generated_getters.go) rather than found by
// reflection over method names, which would make the linker keep every exported method of
// client-go's types in every binary.
func Getters() map[reflect.Type]Getter { return getters }

// Type is a built-in API type as kubernetes.Interface serves it.
type Type struct {
	GVK    schema.GroupVersionKind     // from client-go's scheme (its first kind)
	GVR    schema.GroupVersionResource // GVK's group and version, the getter's resource
	Getter Getter                      // its typed client
}

// Of resolves t, such as *corev1.Pod, to its kind, resource and typed client. The error says
// why t is not a built-in type the clientset serves; callers wrap it with their own sentinel.
func Of(t reflect.Type) (Type, error) {
	gvks, err := kindsOf(t)
	if err != nil {
		return Type{}, err
	}
	g, ok := getters[t]
	if !ok {
		return Type{}, fmt.Errorf("kubernetes.Interface has no typed client for %v", gvks)
	}
	return Type{GVK: gvks[0], GVR: gvks[0].GroupVersion().WithResource(g.Resource()), Getter: g}, nil
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

// isNil reports whether a group client is nil or a typed nil, which a clientset that does not
// serve the group (a partial test double) may return: its getters would panic.
func isNil(v any) bool {
	if v == nil {
		return true
	}
	rv := reflect.ValueOf(v)
	return rv.Kind() == reflect.Pointer && rv.IsNil()
}

// listed returns a typed List's answer as a runtime.Object, nil when it failed (not a nil
// pointer in an interface).
func listed[L runtime.Object](l L, err error) (runtime.Object, error) {
	if err != nil {
		return nil, err
	}
	return l, nil
}

// scopes maps every built-in resource (in each group version client-go serves it) to whether
// it is namespaced.
var scopes = sync.OnceValue(func() map[schema.GroupVersionResource]bool {
	out := map[schema.GroupVersionResource]bool{}
	for t, g := range getters {
		gvks, err := kindsOf(t)
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
