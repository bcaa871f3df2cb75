package client

import (
	"context"
	"fmt"
	"reflect"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/ctrlkit/ctrlkit/internal/builtin"
	"github.com/ctrlkit/ctrlkit/internal/object"
)

// For returns a Client for the built-in API type T (for example *corev1.Pod or
// *appsv1.Deployment) that sends its requests through cs, a real clientset or client-go's fake
// (so reactors and recorded actions see them).
//
// There is no per-type code to write: T's group, version and kind come from client-go's scheme,
// and the typed client serving T from a table of kubernetes.Interface's getters generated from
// the interface (the getter whose Get returns T; whether it takes a namespace tells the scope,
// and its name the resource), not looked up by method name at run time, which would keep every
// method of client-go's types in the binary. A T the clientset does not serve (a custom resource, a list type, a
// subresource type such as *autoscalingv1.Scale) is an error wrapping ErrUnsupportedType; use
// customresource.NewClient for custom resources.
func For[T Object](cs kubernetes.Interface) (Client[T], error) {
	t := reflect.TypeFor[T]()
	if object.IsNil(cs) {
		return nil, fmt.Errorf("client: for %s: nil clientset: %w", t, ErrInvalidInput)
	}
	b, err := bindingFor(t)
	if err != nil {
		return nil, err
	}
	c := &typed[T]{b: b, cs: cs}
	// Once up front, so a clientset that does not serve T fails here, not at its first call.
	rc, err := c.resource("")
	if err != nil {
		return nil, err
	}
	if !b.namespaced {
		c.cluster = rc
	}
	return c, nil
}

// binding is how T is served by kubernetes.Interface, found once per type.
type binding struct {
	t          reflect.Type
	gvk        schema.GroupVersionKind
	gvr        schema.GroupVersionResource
	getter     builtin.Getter
	namespaced bool  // the resource getter takes a namespace
	hasStatus  bool  // the typed interface has UpdateStatus
	itemsField []int // index of Items in the list struct
}

var bindings sync.Map // reflect.Type → *binding or error

func bindingFor(t reflect.Type) (*binding, error) {
	if v, ok := bindings.Load(t); ok {
		if err, isErr := v.(error); isErr {
			return nil, err
		}
		return v.(*binding), nil
	}
	b, err := resolve(t)
	if err != nil {
		bindings.Store(t, err)
		return nil, err
	}
	bindings.Store(t, b)
	return b, nil
}

func resolve(t reflect.Type) (*binding, error) {
	unsupported := func(reason string) error {
		return fmt.Errorf("client: for %s: %w: %s", t, ErrUnsupportedType, reason)
	}
	bt, err := builtin.Of(t)
	if err != nil {
		return nil, unsupported(err.Error())
	}
	g := bt.Getter
	b := &binding{
		t:          t,
		gvk:        bt.GVK,
		gvr:        bt.GVR,
		getter:     g,
		namespaced: g.Namespaced,
	}
	_, b.hasStatus = g.Iface.MethodByName("UpdateStatus")
	list, ok := g.Iface.MethodByName("List")
	if !ok || list.Type.NumOut() != 2 || list.Type.Out(0).Kind() != reflect.Pointer || list.Type.Out(0).Elem().Kind() != reflect.Struct {
		return nil, unsupported("its typed client has no List returning a list struct")
	}
	items, ok := list.Type.Out(0).Elem().FieldByName("Items")
	if !ok || items.Type.Kind() != reflect.Slice || items.Type.Elem() != t.Elem() {
		return nil, unsupported(fmt.Sprintf("its list type %s has no Items of %s", list.Type.Out(0), t.Elem()))
	}
	b.itemsField = items.Index
	return b, nil
}

// typedOps is the part of every generated typed client whose signatures name only T.
type typedOps[T Object] interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
	Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (T, error)
}

type statusOps[T Object] interface {
	UpdateStatus(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
}
