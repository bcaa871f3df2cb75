package informer

import (
	"fmt"
	"reflect"

	corev1 "k8s.io/api/core/v1"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
)

// ForResource returns the factory's shared informer for a custom resource,
// served by client-go's dynamic shared informer factory. T is the resource's
// Go type (a pointer to a struct with TypeMeta and ObjectMeta and a
// DeepCopyObject method), or *unstructured.Unstructured to keep objects
// untyped.
//
// Objects are converted from unstructured to T once, as they enter the cache
// (a transform), so listers and handlers hand out T with no per-read
// conversion. An object that fails conversion is reported to the factory's
// error handler with its key and stays in the cache unconverted: handlers
// skip it, List leaves it out and Get of its key returns an error matching
// ErrUnexpectedType, until a later version converts (handlers see that
// version as an add). Deleting an object whose last version did not convert
// reaches OnDelete with a skeleton of its key (DeleteInfo.ObjectMissing).
//
// Every call for gvr returns the same informer; asking for the same gvr with
// another T is an error matching ErrUnsupportedType. The factory needs
// WithDynamicClient; without one the error matches ErrNoDynamicClient.
func ForResource[T Object](f *Factory, gvr schema.GroupVersionResource) (Informer[T], error) {
	if err := validGVR(gvr); err != nil {
		return nil, err
	}
	if f == nil {
		return nil, fmt.Errorf("informer for %s: %w", gvr.GroupResource(), ErrNilFactory)
	}
	if f.dynamic == nil {
		return nil, fmt.Errorf("informer for %s: %w", gvr.GroupResource(), ErrNoDynamicClient)
	}
	t := reflect.TypeFor[T]()
	if t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return nil, fmt.Errorf("informer for %s: %w: %s is not a pointer to a struct", gvr.GroupResource(), ErrUnsupportedType, typeName(t))
	}
	name := gvr.GroupResource().String()
	inf, err := lookupOrCreate(f, registryKey{source: sourceDynamic, gvr: gvr}, func() (*sharedInformer[T], error) {
		shared := f.dynamic.ForResource(gvr).Informer()
		setTransform(f, name, shared, convertTransform[T](f, name))
		return newSharedInformer[T](f, name, gvr, kindFor(gvr), shared)
	})
	if err != nil {
		return nil, err
	}
	return inf, nil
}

// ReasonUndecodable is the reason of the Warning event WithEventRecorder
// records on a custom resource that does not convert to its Go type.
const ReasonUndecodable = "Undecodable"

// reportUndecodable reports a custom resource that failed conversion, each
// time a version of it passes the transform (once per version, and once more
// when its delete carries that version): to the error handler, and as an
// event on the object when the factory has a recorder. The object stays in the cache
// unconverted and never reaches a typed handler (so never a queue).
func (f *Factory) reportUndecodable(u *unstructured.Unstructured, err error) {
	f.report(err)
	if f.cfg.recorder != nil {
		f.cfg.recorder.Eventf(u, corev1.EventTypeWarning, ReasonUndecodable, "Cannot decode this object: %v", err)
	}
}

// convertTransform strips managedFields (through the factory transform, while
// the object is still a map: cheaper, and T never sees them), converts to T
// and then runs T's own transforms.
func convertTransform[T Object](f *Factory, name string) cache.TransformFunc {
	if reflect.TypeFor[T]() == reflect.TypeFor[*unstructured.Unstructured]() {
		return f.transform
	}
	elem := reflect.TypeFor[T]().Elem()
	return func(obj any) (any, error) {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			// Already converted (client-go passes objects once, but a
			// transform must be idempotent).
			return f.transform(obj)
		}
		if !f.cfg.keepManagedFields {
			u.SetManagedFields(nil)
		}
		typed, ok := reflect.New(elem).Interface().(T)
		if !ok {
			// Unreachable: T is a pointer to elem.
			return u, nil
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.UnstructuredContent(), typed); err != nil {
			f.reportUndecodable(u, fmt.Errorf("informer %s: convert %s to %s: %w", name, objectKey(u), typeName(reflect.TypeFor[T]()), err))
			return u, nil
		}
		return f.transform(typed)
	}
}
