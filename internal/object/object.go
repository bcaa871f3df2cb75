// Package object holds the one type constraint ctrlkit's typed packages share
// for Kubernetes objects. Each public package re-exports it under its own
// name (informer.Object, customresource.Object, ...) as an alias, so one T
// serves every package and no package on one line of the import
// order has to import another to name it.
package object

import (
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Object is what a typed Kubernetes object satisfies: a comparable type
// (a pointer to a struct, such as *corev1.Pod or *v1alpha1.PodSet) with
// ObjectMeta accessors and DeepCopyObject.
type Object interface {
	comparable
	metav1.Object
	runtime.Object
}

// IsNil reports whether v is nil or a typed nil (a nil *corev1.Pod in a metav1.Object, or a nil
// pointer, map, slice, func or channel in any interface): calling its methods would panic, so
// callers refuse it with an error naming the argument.
func IsNil(v any) bool {
	if v == nil {
		return true
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Pointer, reflect.Interface, reflect.Map, reflect.Slice, reflect.Func, reflect.Chan:
		return rv.IsNil()
	}
	return false
}
