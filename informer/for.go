package informer

import (
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/internal/object"
)

// Object is what every type served by this package satisfies: a pointer to a
// Kubernetes API struct such as *corev1.Pod, with ObjectMeta accessors and
// DeepCopyObject (a superset of client-go's cache.Object constraint). It is
// the one object constraint of ctrlkit: customresource.Object and the other
// packages' Object are the same type.
type Object = object.Object

// For returns the factory's shared informer for the built-in API type T
// (for example *corev1.Pod or *appsv1.ReplicaSet): every call with the same
// T on the same factory returns the same Informer, backed by one client-go
// SharedIndexInformer and so one watch.
//
// T is mapped to its resource through client-go's scheme (T → group, version
// and kind) and the standard plural rules (kind → resource), and served by
// the client-go factory's ForResource, so every type the client-go factory
// serves works without a per-type switch. A T the factory cannot serve (a
// custom resource, a subresource type such as *autoscalingv1.Scale, a list
// type) yields an error matching ErrUnsupportedType; use ForResource for
// custom resources.
//
// Informers obtained after Start are started at once.
func For[T Object](f *Factory) (Informer[T], error) {
	t := reflect.TypeFor[T]()
	if f == nil {
		return nil, fmt.Errorf("informer for %s: %w", typeName(t), ErrNilFactory)
	}
	if !f.hasClient {
		return nil, fmt.Errorf("informer for %s: %w", typeName(t), ErrNoClient)
	}
	inf, err := lookupOrCreate(f, registryKey{source: sourceTyped, typ: t}, func() (*sharedInformer[T], error) {
		gvk, gvr, shared, err := f.resolveTyped(t)
		if err != nil {
			return nil, err
		}
		return newSharedInformer[T](f, gvr.GroupResource().String(), gvr, gvk, shared)
	})
	if err != nil {
		return nil, err
	}
	return inf, nil
}

// resolveTyped finds the client-go informer serving Go type t.
func (f *Factory) resolveTyped(t reflect.Type) (schema.GroupVersionKind, schema.GroupVersionResource, cache.SharedIndexInformer, error) {
	unsupported := func(reason string) error {
		return fmt.Errorf("informer for %s: %w: %s", typeName(t), ErrUnsupportedType, reason)
	}
	if t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return schema.GroupVersionKind{}, schema.GroupVersionResource{}, nil, unsupported("not a pointer to an API struct")
	}
	obj, ok := reflect.New(t.Elem()).Interface().(runtime.Object)
	if !ok {
		return schema.GroupVersionKind{}, schema.GroupVersionResource{}, nil, unsupported("not a runtime.Object")
	}
	gvks, unversioned, err := scheme.Scheme.ObjectKinds(obj)
	if err != nil || unversioned {
		return schema.GroupVersionKind{}, schema.GroupVersionResource{}, nil, unsupported("not registered in client-go's scheme")
	}
	for _, gvk := range gvks {
		gvr, _ := meta.UnsafeGuessKindToResource(gvk)
		generic, err := f.shared.ForResource(gvr)
		if err != nil {
			continue
		}
		return gvk, gvr, generic.Informer(), nil
	}
	return schema.GroupVersionKind{}, schema.GroupVersionResource{}, nil, unsupported(fmt.Sprintf("client-go has no informer for %v", gvks))
}
