package customresource

import (
	"errors"
	"fmt"
	"reflect"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ctrlkit/ctrlkit/internal/unstructuredconv"
)

// codec converts between T and unstructured objects of one resource, through the
// converter informer.ForResource uses too. It is immutable after newCodec and shared by
// a Client and all its namespaced copies.
type codec[T Object] struct {
	gvr      schema.GroupVersionResource
	gvk      schema.GroupVersionKind
	conv     *unstructuredconv.Converter[T]
	typeName string
	zero     T
}

func newCodec[T Object](gvr schema.GroupVersionResource, o clientOptions) (*codec[T], error) {
	t := reflect.TypeFor[T]()
	if gvr.Version == "" || gvr.Resource == "" {
		return nil, fmt.Errorf("customresource: client for %s: resource %q needs a version and a resource name: %w", t.String(), gvr.String(), ErrInvalidInput)
	}
	if t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return nil, fmt.Errorf("customresource: client for %s: type %s is not a pointer to a struct: %w", resourceString(gvr), t.String(), ErrInvalidInput)
	}
	c := &codec[T]{gvr: gvr, typeName: t.String()}
	gv := gvr.GroupVersion()
	switch {
	case o.kind != "":
		c.gvk = gv.WithKind(o.kind)
	case o.scheme != nil:
		kinds, _, err := o.scheme.ObjectKinds(reflect.New(t.Elem()).Interface().(T))
		if err != nil {
			return nil, fmt.Errorf("customresource: client for %s: scheme does not know %s: %w: %w", resourceString(gvr), c.typeName, ErrInvalidInput, err)
		}
		i := slices.IndexFunc(kinds, func(k schema.GroupVersionKind) bool { return k.GroupVersion() == gv })
		if i < 0 {
			return nil, fmt.Errorf("customresource: client for %s: scheme registers %s as %v, not in %s: %w", resourceString(gvr), c.typeName, kinds, gv, ErrInvalidInput)
		}
		c.gvk = kinds[i]
	default:
		c.gvk = gv.WithKind(t.Elem().Name())
	}
	conv, err := unstructuredconv.New[T](c.gvk)
	if err != nil {
		return nil, fmt.Errorf("customresource: client for %s: %w: %w", resourceString(gvr), ErrInvalidInput, err)
	}
	c.conv = conv
	return c, nil
}

func (c *codec[T]) conversionError(namespace, name string, toUnstructured bool, err error) *ConversionError {
	e := &ConversionError{
		Resource: c.gvr, Namespace: namespace, Name: name,
		GoType: c.typeName, ToUnstructured: toUnstructured, Err: err,
	}
	var fe *unstructuredconv.FieldError
	if errors.As(err, &fe) {
		e.Field = fe.Path
	}
	return e
}

// fromUnstructured is Client.FromUnstructured.
func (c *codec[T]) fromUnstructured(u *unstructured.Unstructured) (T, error) {
	if u == nil || u.Object == nil {
		return c.zero, c.conversionError("", "", false, errors.New("no object"))
	}
	// NestedString yields "" for a missing or non-string field, so a malformed object
	// still gets the best key we can read into its error.
	ns, _, _ := unstructured.NestedString(u.Object, "metadata", "namespace")
	name, _, _ := unstructured.NestedString(u.Object, "metadata", "name")
	out, err := c.conv.FromUnstructured(u.Object)
	if err != nil {
		if errors.Is(err, unstructuredconv.ErrWrongKind) && c.gvk.Kind != "" {
			err = fmt.Errorf("%w (set WithKind or WithScheme if T's type name is not its kind)", err)
		}
		return c.zero, c.conversionError(ns, name, false, err)
	}
	return out, nil
}

// toUnstructured is Client.ToUnstructured.
func (c *codec[T]) toUnstructured(obj T) (*unstructured.Unstructured, error) {
	if obj == c.zero {
		return nil, fmt.Errorf("customresource: nil %s for %s: %w", c.typeName, resourceString(c.gvr), ErrInvalidInput)
	}
	m, err := c.conv.ToUnstructured(obj)
	if err != nil {
		return nil, c.conversionError(obj.GetNamespace(), obj.GetName(), true, err)
	}
	return &unstructured.Unstructured{Object: m}, nil
}

func (c *codec[T]) setTypeMeta(u *unstructured.Unstructured) {
	if u.GetAPIVersion() == "" {
		u.SetAPIVersion(c.gvk.GroupVersion().String())
	}
	if u.GetKind() == "" {
		u.SetKind(c.gvk.Kind)
	}
}
