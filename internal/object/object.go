// Package object holds the one type constraint ctrlkit's typed packages share
// for Kubernetes objects. Each public package re-exports it under its own
// name (informer.Object, customresource.Object, ...) as an alias, so one T
// serves every package and no package on one line of the import
// order has to import another to name it. It also holds the reflection
// helpers those packages share: the nil check and the qualified type name.
package object

import (
	"fmt"
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
	return v == nil || IsNilValue(reflect.ValueOf(v))
}

// IsNilValue is IsNil for a reflect.Value, such as what a method called through reflection
// returned; the zero Value counts as nil.
func IsNilValue(rv reflect.Value) bool {
	if !rv.IsValid() {
		return true
	}
	switch rv.Kind() {
	case reflect.Pointer, reflect.Interface, reflect.Map, reflect.Slice, reflect.Func, reflect.Chan:
		return rv.IsNil()
	}
	return false
}

// TypeName renders a Go type with its package path, "*k8s.io/api/core/v1.Pod", so that types
// of one name in different packages (core/v1 and events/v1 Events) are told apart in an error.
// Types without a package (built-in, unnamed) print as reflect prints them; nil is "<nil>".
func TypeName(t reflect.Type) string {
	if t == nil {
		return "<nil>"
	}
	ptr := ""
	base := t
	for base.Kind() == reflect.Pointer {
		ptr += "*"
		base = base.Elem()
	}
	if base.PkgPath() == "" {
		return t.String()
	}
	return fmt.Sprintf("%s%s.%s", ptr, base.PkgPath(), base.Name())
}
