package client

import (
	"fmt"
	"reflect"

	"k8s.io/client-go/kubernetes"

	"github.com/ctrlkit/ctrlkit/internal/builtin"
	"github.com/ctrlkit/ctrlkit/internal/object"
)

// For returns a Client for the built-in API type T (for example *corev1.Pod or
// *appsv1.Deployment) that sends its requests through cs, a real clientset or client-go's fake
// (so reactors and recorded actions see them).
//
// There is no per-type code to write: T's group, version and kind come from client-go's scheme,
// its resource, scope and group client from a table generated from kubernetes.Interface, and
// the typed client is built as client-go builds its own, over the group's REST client or the
// fake behind a fake clientset (see "How For finds the typed client" in the package
// documentation). A T the clientset does not serve (a custom resource, a list type, a
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
	if !b.Namespaced {
		c.cluster = rc
	}
	return c, nil
}

// bindingFor resolves T's kind, resource and list type (builtin.Of keeps the answer per type).
func bindingFor(t reflect.Type) (builtin.Type, error) {
	bt, err := builtin.Of(t)
	if err != nil {
		return builtin.Type{}, fmt.Errorf("client: for %s: %w: %s", t, ErrUnsupportedType, err.Error())
	}
	return bt, nil
}
