package ownerref

import (
	"errors"
	"fmt"
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/ctrlkit/ctrlkit/internal/object"
)

// SetControllerReferenceApplyConfig is SetControllerReference for a child written by server-side
// apply: it makes owner the controller of config, the apply configuration about to be sent
// (client.ApplyConfig, or a client-go typed client's Apply), with controller and
// blockOwnerDeletion true (WithBlockOwnerDeletion(false) leaves the owner's deletion
// unblocked). config is a pointer to one of client-go's generated apply configurations
// (k8s.io/client-go/applyconfigurations, such as corev1ac.ConfigMap(name, namespace)), to one
// applyconfiguration-gen generates for a custom resource, or to a hand-written one embedding
// *metav1ac.ObjectMetaApplyConfiguration as those do; anything else wraps errors.ErrUnsupported.
// The owner's kind is found as SetControllerReference finds it (WithKind, the owner's
// apiVersion and kind, WithScheme or client-go's scheme), so a typed, custom, unstructured or
// metadata-only owner works; a *metav1.PartialObjectMetadata needs WithKind unless its
// apiVersion and kind were set to its resource's.
//
// The checks are SetControllerReference's, against the namespace config sets: an owner without
// a name or kind, or without a UID, is an error naming what is missing; a namespaced owner of
// a cluster-scoped child (config without namespace) or of a child in another namespace wraps
// ErrInvalidOwner, since an owner reference has no namespace of its own; a config that already
// names another controller gives an *AlreadyOwnedError (the API server would refuse two).
// A cluster-scoped owner of a namespaced child is fine. Calling it again with the same owner
// replaces that owner's reference instead of adding a second one, which the apply would refuse
// as a duplicate key. On an error config is unchanged.
//
// Since the apply configuration lists every field the field manager owns, send the reference
// on every apply: a later apply without it removes it.
func SetControllerReferenceApplyConfig(owner metav1.Object, config runtime.ApplyConfiguration, opts ...Option) error {
	const op = "set controller reference in apply configuration"
	if object.IsNil(config) {
		return fmt.Errorf("%s: apply configuration: %w", op, ErrNilObject)
	}
	metaField, err := objectMetaOf(config)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	child := &metav1.ObjectMeta{}
	if meta := *metaField; meta != nil {
		child.Namespace = ptr.Deref(meta.Namespace, "")
		child.Name = ptr.Deref(meta.Name, "")
		child.OwnerReferences = make([]metav1.OwnerReference, len(meta.OwnerReferences))
		for i, r := range meta.OwnerReferences {
			child.OwnerReferences[i] = fromApplyConfig(r)
		}
	}
	ref, err := controllerRef(op, owner, child, newOptions(opts))
	if err != nil {
		return err
	}
	if *metaField == nil {
		*metaField = &metav1ac.ObjectMetaApplyConfiguration{}
	}
	meta := *metaField
	meta.OwnerReferences = replaceOwner(meta.OwnerReferences, toApplyConfig(ref), func(r metav1ac.OwnerReferenceApplyConfiguration) bool {
		return sameOwner(fromApplyConfig(r), ref)
	})
	return nil
}

// objectMetaOf returns where config keeps its metadata: the embedded
// *metav1ac.ObjectMetaApplyConfiguration field (nil until something set it), or, for a
// hand-written configuration embedding the struct itself, a pointer to it. Apply
// configurations have no method that returns their metadata, and its owner references are
// needed to replace rather than append.
func objectMetaOf(config runtime.ApplyConfiguration) (**metav1ac.ObjectMetaApplyConfiguration, error) {
	v := reflect.ValueOf(config)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return nil, fmt.Errorf("%T is not a pointer to a struct: %w", config, errors.ErrUnsupported)
	}
	f := v.Elem().FieldByName("ObjectMetaApplyConfiguration")
	switch {
	case !f.IsValid():
	case f.Type() == reflect.TypeFor[*metav1ac.ObjectMetaApplyConfiguration]():
		return f.Addr().Interface().(**metav1ac.ObjectMetaApplyConfiguration), nil
	case f.Type() == reflect.TypeFor[metav1ac.ObjectMetaApplyConfiguration]():
		return new(f.Addr().Interface().(*metav1ac.ObjectMetaApplyConfiguration)), nil
	}
	return nil, fmt.Errorf("%T embeds no *ObjectMetaApplyConfiguration, as generated apply configurations do: %w", config, errors.ErrUnsupported)
}

func fromApplyConfig(r metav1ac.OwnerReferenceApplyConfiguration) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion:         ptr.Deref(r.APIVersion, ""),
		Kind:               ptr.Deref(r.Kind, ""),
		Name:               ptr.Deref(r.Name, ""),
		UID:                ptr.Deref(r.UID, ""),
		Controller:         r.Controller,
		BlockOwnerDeletion: r.BlockOwnerDeletion,
	}
}

func toApplyConfig(r metav1.OwnerReference) metav1ac.OwnerReferenceApplyConfiguration {
	return metav1ac.OwnerReferenceApplyConfiguration{
		APIVersion:         new(r.APIVersion),
		Kind:               new(r.Kind),
		Name:               new(r.Name),
		UID:                new(r.UID),
		Controller:         r.Controller,
		BlockOwnerDeletion: r.BlockOwnerDeletion,
	}
}
