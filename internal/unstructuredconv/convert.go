package unstructuredconv

import (
	"errors"
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ErrNotStructPointer is returned by New for a type parameter that is not a
// pointer to a struct.
var ErrNotStructPointer = errors.New("type is not a pointer to a struct")

// ErrWrongKind and ErrWrongAPIVersion are wrapped by the error of
// FromUnstructured for an object whose kind, or apiVersion, is not the
// converter's.
var (
	ErrWrongKind       = errors.New("object of another kind")
	ErrWrongAPIVersion = errors.New("object of another apiVersion")
)

// Converter converts between unstructured objects of one kind and T, a
// pointer to a struct. It is immutable and safe for concurrent use.
type Converter[T any] struct {
	gvk  schema.GroupVersionKind
	elem reflect.Type // the struct T points to
}

// New returns the converter for objects of gvk. An empty kind, or an empty
// gvk, skips the corresponding check of FromUnstructured: the caller knows the
// objects come from the right resource.
func New[T any](gvk schema.GroupVersionKind) (*Converter[T], error) {
	t := reflect.TypeFor[T]()
	if t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return nil, fmt.Errorf("%s: %w", t, ErrNotStructPointer)
	}
	return &Converter[T]{gvk: gvk, elem: t.Elem()}, nil
}

// GVK is the kind the converter was made for.
func (c *Converter[T]) GVK() schema.GroupVersionKind { return c.gvk }

// NewObject returns a new, empty T.
func (c *Converter[T]) NewObject() T {
	// Cannot fail: New checked that T is a pointer to elem.
	return reflect.New(c.elem).Interface().(T)
}

// FromUnstructured converts obj to a new T. Its errors wrap ErrWrongKind or
// ErrWrongAPIVersion for an object of another kind or apiVersion, are a *FieldError for a value that does
// not fit its field, or say that the converter panicked.
func (c *Converter[T]) FromUnstructured(obj map[string]any) (out T, err error) {
	var zero T
	if err := c.checkTypeMeta(obj); err != nil {
		return zero, err
	}
	out = c.NewObject()
	// The converter is reflection over user types and may call their
	// UnmarshalJSON; one bad object must become an error for that object,
	// not take the process down.
	defer func() {
		if r := recover(); r != nil {
			out, err = zero, fmt.Errorf("converter panicked: %v", r)
		}
	}()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, out); err != nil {
		if fe := locate(obj, c.elem); fe != nil {
			fe.Err = err
			return zero, fe
		}
		return zero, err
	}
	return out, nil
}

// checkTypeMeta refuses an object of another kind, which would otherwise
// decode into T silently, dropping every field T lacks.
func (c *Converter[T]) checkTypeMeta(obj map[string]any) error {
	if gv := c.gvk.GroupVersion(); !gv.Empty() {
		if apiVersion, ok := obj["apiVersion"]; ok && apiVersion != nil && apiVersion != "" && apiVersion != gv.String() {
			return fmt.Errorf("%w: apiVersion is %v, want %s", ErrWrongAPIVersion, apiVersion, gv)
		}
	}
	if c.gvk.Kind != "" {
		if kind, ok := obj["kind"]; ok && kind != nil && kind != "" && kind != c.gvk.Kind {
			return fmt.Errorf("%w: kind is %v, want %s", ErrWrongKind, kind, c.gvk.Kind)
		}
	}
	return nil
}

// ToUnstructured converts obj to its unstructured form, with apiVersion and
// kind set from the converter's kind where obj leaves them empty. A panic
// inside the converter (or a custom MarshalJSON) becomes an error.
func (c *Converter[T]) ToUnstructured(obj T) (m map[string]any, err error) {
	defer func() {
		if r := recover(); r != nil {
			m, err = nil, fmt.Errorf("converter panicked: %v", r)
		}
	}()
	m, err = runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	if v, _ := m["apiVersion"].(string); v == "" && !c.gvk.GroupVersion().Empty() {
		m["apiVersion"] = c.gvk.GroupVersion().String()
	}
	if k, _ := m["kind"].(string); k == "" && c.gvk.Kind != "" {
		m["kind"] = c.gvk.Kind
	}
	return m, nil
}
