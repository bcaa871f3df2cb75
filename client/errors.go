package client

import (
	"errors"
	"fmt"

	"github.com/ctrlkit/ctrlkit/internal/errs"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// ErrUnsupportedType is wrapped by For's error for a type the clientset does not serve: a
	// type outside client-go's scheme (a custom resource: use customresource.NewClient), a
	// list type, a subresource type such as *autoscalingv1.Scale.
	ErrUnsupportedType = errors.New("type not served by the clientset")

	// ErrInvalidInput is wrapped by every error about an argument the caller passed, returned
	// before any request: a nil client or object, a missing name, a namespace given to a
	// cluster-scoped resource or missing for a namespaced one, an apply without a field
	// manager, a list option a cached reader cannot serve. It is the same value as
	// customresource.ErrInvalidInput.
	ErrInvalidInput = errs.ErrInvalidInput

	// ErrNoStatus is wrapped by UpdateStatus's error for a resource without a status
	// subresource (ConfigMaps, Secrets, ...).
	ErrNoStatus = errors.New("resource has no status subresource")

	// ErrKeyChanged is wrapped by CreateOrUpdate's and CreateOrPatch's error when mutate
	// changed the object's name or namespace: the write would go to another object.
	ErrKeyChanged = errors.New("mutate changed the object's name or namespace")
)

// objectKey prints namespace/name, or name for a cluster-scoped object.
func objectKey(namespace, name string) string {
	if namespace == "" {
		return fmt.Sprintf("%q", name)
	}
	return fmt.Sprintf("%q", namespace+"/"+name)
}

// resourceName prints a resource as kubectl accepts it: pods, deployments.apps.
func resourceName(gvr schema.GroupVersionResource) string {
	return gvr.GroupResource().String()
}

// checkNamespace enforces the namespace rules of Client before any request. all allows the
// empty namespace of a namespaced resource (List: all namespaces).
func checkNamespace(verb string, gvr schema.GroupVersionResource, namespaced bool, namespace, name string, all bool) error {
	switch {
	case namespaced && namespace == "" && !all:
		return fmt.Errorf("client: %s %s %s: the resource is namespaced and no namespace was given: %w", verb, resourceName(gvr), objectKey(namespace, name), ErrInvalidInput)
	case !namespaced && namespace != "":
		return fmt.Errorf("client: %s %s %s: the resource is cluster-scoped and takes no namespace: %w", verb, resourceName(gvr), objectKey(namespace, name), ErrInvalidInput)
	case name == "" && verb != "list" && verb != "create":
		return fmt.Errorf("client: %s %s: no name given: %w", verb, resourceName(gvr), ErrInvalidInput)
	}
	return nil
}
