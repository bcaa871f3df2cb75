package ownerref

import (
	"errors"
	"fmt"
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/ctrlkit/ctrlkit/internal/object"
)

// ObjectApplyConfiguration is an apply configuration of a whole object, as client-go generates
// them (k8s.io/client-go/applyconfigurations, such as *corev1ac.ConfigMapApplyConfiguration)
// and applyconfiguration-gen does for a custom resource: A is its own pointer type.
type ObjectApplyConfiguration[A any] interface {
	WithOwnerReferences(values ...*metav1ac.OwnerReferenceApplyConfiguration) A
}

// SetControllerReferenceApplyConfig is SetControllerReference for a child written by server-side
// apply: it makes owner the controller of config, the apply configuration about to be sent
// (client.ApplyConfig, or a client-go typed client's Apply), with controller and
// blockOwnerDeletion true (WithBlockOwnerDeletion(false) leaves the owner's deletion
// unblocked). The owner's kind is found as SetControllerReference finds it (WithKind, the
// owner's apiVersion and kind, WithScheme or client-go's scheme), so a typed, custom,
// unstructured or metadata-only owner works; a *metav1.PartialObjectMetadata needs WithKind
// unless its apiVersion and kind were set to its resource's.
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
func SetControllerReferenceApplyConfig[A ObjectApplyConfiguration[A]](owner metav1.Object, config A, opts ...Option) error {
	const op = "set controller reference in apply configuration"
	if object.IsNil(config) {
		return fmt.Errorf("%s: apply configuration: %w", op, ErrNilObject)
	}
	meta, ok := objectMetaOf(config)
	if !ok {
		return fmt.Errorf("%s: %T embeds no *ObjectMetaApplyConfiguration, as generated apply configurations do: %w", op, config, errors.ErrUnsupported)
	}
	child := &metav1.ObjectMeta{}
	if meta != nil {
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
	if meta == nil { // no references to replace; the generated method allocates the metadata
		config.WithOwnerReferences(new(toApplyConfig(ref)))
		return nil
	}
	meta.OwnerReferences = replaceOwner(meta.OwnerReferences, toApplyConfig(ref), func(r metav1ac.OwnerReferenceApplyConfiguration) bool {
		return sameOwner(fromApplyConfig(r), ref)
	})
	return nil
}

// objectMetaOf returns the metadata config embeds (nil until something set it), and false when
// config embeds none. Generated apply configurations embed *metav1ac.ObjectMetaApplyConfiguration
// but have no method that returns it, and its owner references are needed to replace rather
// than append.
func objectMetaOf(config any) (*metav1ac.ObjectMetaApplyConfiguration, bool) {
	v := reflect.ValueOf(config)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return nil, false
	}
	f := v.Elem().FieldByName("ObjectMetaApplyConfiguration")
	if !f.IsValid() || f.Type() != reflect.TypeFor[*metav1ac.ObjectMetaApplyConfiguration]() {
		return nil, false
	}
	meta, _ := f.Interface().(*metav1ac.ObjectMetaApplyConfiguration)
	return meta, true
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
