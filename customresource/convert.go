package customresource

import (
	"errors"
	"fmt"
	"reflect"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// codec converts between T and unstructured objects of one resource. It is immutable
// after newCodec and shared by a Client and all its namespaced copies.
type codec[T Object] struct {
	gvr      schema.GroupVersionResource
	gvk      schema.GroupVersionKind
	elem     reflect.Type // the struct T points to
	typeName string
	zero     T
}

func newCodec[T Object](gvr schema.GroupVersionResource, o clientOptions) (*codec[T], error) {
	t := reflect.TypeFor[T]()
	if gvr.Version == "" || gvr.Resource == "" {
		return nil, fmt.Errorf("customresource: client for %s: resource %q needs a version and a resource name: %w", typeName(t), gvr.String(), ErrInvalidInput)
	}
	if t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return nil, fmt.Errorf("customresource: client for %s: type %s is not a pointer to a struct: %w", resourceString(gvr), typeName(t), ErrInvalidInput)
	}
	c := &codec[T]{gvr: gvr, elem: t.Elem(), typeName: typeName(t)}
	gv := gvr.GroupVersion()
	switch {
	case o.kind != "":
		c.gvk = gv.WithKind(o.kind)
	case o.scheme != nil:
		kinds, _, err := o.scheme.ObjectKinds(c.newObject())
		if err != nil {
			return nil, fmt.Errorf("customresource: client for %s: scheme does not know %s: %w: %w", resourceString(gvr), c.typeName, ErrInvalidInput, err)
		}
		i := slices.IndexFunc(kinds, func(k schema.GroupVersionKind) bool { return k.GroupVersion() == gv })
		if i < 0 {
			return nil, fmt.Errorf("customresource: client for %s: scheme registers %s as %v, not in %s: %w", resourceString(gvr), c.typeName, kinds, gv, ErrInvalidInput)
		}
		c.gvk = kinds[i]
	default:
		c.gvk = gv.WithKind(c.elem.Name())
	}
	return c, nil
}

// newObject returns a new, empty T. The assertion cannot fail: newCodec checked that T
// is a pointer to elem.
func (c *codec[T]) newObject() T {
	return reflect.New(c.elem).Interface().(T)
}

func (c *codec[T]) conversionError(namespace, name string, toUnstructured bool, err error) *ConversionError {
	return &ConversionError{
		Resource: c.gvr, Namespace: namespace, Name: name,
		GoType: c.typeName, ToUnstructured: toUnstructured, Err: err,
	}
}

// fromUnstructured is Client.FromUnstructured.
func (c *codec[T]) fromUnstructured(u *unstructured.Unstructured) (obj T, err error) {
	if u == nil || u.Object == nil {
		return c.zero, c.conversionError("", "", false, errors.New("no object"))
	}
	// NestedString yields "" for a missing or non-string field, so a malformed object
	// still gets the best key we can read into its error.
	ns, _, _ := unstructured.NestedString(u.Object, "metadata", "namespace")
	name, _, _ := unstructured.NestedString(u.Object, "metadata", "name")
	if err := c.checkTypeMeta(u.Object); err != nil {
		return c.zero, c.conversionError(ns, name, false, err)
	}
	out := c.newObject()
	// The converter is reflection over user types and may call their UnmarshalJSON; one
	// bad object must become an error for that object, not take the process down.
	defer func() {
		if r := recover(); r != nil {
			obj, err = c.zero, c.conversionError(ns, name, false, fmt.Errorf("converter panicked: %v", r))
		}
	}()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, out); err != nil {
		return c.zero, c.conversionError(ns, name, false, err)
	}
	return out, nil
}

// checkTypeMeta refuses an object of another kind, which would otherwise decode into T
// silently, dropping every field T lacks.
func (c *codec[T]) checkTypeMeta(obj map[string]any) error {
	apiVersion, ok := obj["apiVersion"]
	if ok && apiVersion != nil && apiVersion != "" && apiVersion != c.gvk.GroupVersion().String() {
		return fmt.Errorf("apiVersion is %v, want %s", apiVersion, c.gvk.GroupVersion())
	}
	kind, ok := obj["kind"]
	if ok && kind != nil && kind != "" && kind != c.gvk.Kind {
		return fmt.Errorf("kind is %v, want %s (set WithKind or WithScheme if T's type name is not its kind)", kind, c.gvk.Kind)
	}
	return nil
}

// toUnstructured is Client.ToUnstructured.
func (c *codec[T]) toUnstructured(obj T) (u *unstructured.Unstructured, err error) {
	if obj == c.zero {
		return nil, fmt.Errorf("customresource: nil %s for %s: %w", c.typeName, resourceString(c.gvr), ErrInvalidInput)
	}
	defer func() {
		if r := recover(); r != nil {
			u, err = nil, c.conversionError(obj.GetNamespace(), obj.GetName(), true, fmt.Errorf("converter panicked: %v", r))
		}
	}()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, c.conversionError(obj.GetNamespace(), obj.GetName(), true, err)
	}
	u = &unstructured.Unstructured{Object: m}
	c.setTypeMeta(u)
	return u, nil
}

func (c *codec[T]) setTypeMeta(u *unstructured.Unstructured) {
	if u.GetAPIVersion() == "" {
		u.SetAPIVersion(c.gvk.GroupVersion().String())
	}
	if u.GetKind() == "" {
		u.SetKind(c.gvk.Kind)
	}
}
