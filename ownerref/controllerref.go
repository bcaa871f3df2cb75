package ownerref

import (
	"fmt"
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/ctrlkit/ctrlkit/internal/object"
)

// SetControllerReference makes owner the controller of obj: it adds (or, for the same owner,
// refreshes) the owner reference with controller and blockOwnerDeletion true, as
// NewControllerRef builds it. It changes obj in memory only; write obj afterwards (Create,
// Update, CreateOrUpdate's mutate).
//
// The owner's kind is, in this order: WithKind's; the owner's own apiVersion and kind (custom
// resources decoded by ctrlkit keep them); the kind client-go's scheme registers for the
// owner's Go type (built-in objects read from a clientset or a lister carry no TypeMeta).
// An owner of none of these is an error matching ErrUnknownKind that names its Go type.
//
// It refuses, leaving obj unchanged:
//   - an obj controlled by another owner (a different UID, or, for a reference without UID,
//     another kind or name): an *AlreadyOwnedError naming both (errors.Is ErrAlreadyOwned);
//   - an owner without a UID (not read from the API server): ErrMissingUID, since the API
//     server rejects such a reference;
//   - a namespaced owner of a cluster-scoped obj, or an owner in another namespace than
//     obj's: ErrInvalidOwner, since the garbage collector would treat the owner as absent
//     and delete obj;
//   - a nil owner or obj: ErrNilObject; an owner without a name: ErrInvalidOwner.
//
// Calling it again with the same owner changes nothing. The name and rules are
// controller-runtime's controllerutil.SetControllerReference.
func SetControllerReference(owner, obj metav1.Object, opts ...Option) error {
	if object.IsNil(owner) || object.IsNil(obj) {
		return fmt.Errorf("set controller reference: %w", ErrNilObject)
	}
	child := types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}
	ownerKey := types.NamespacedName{Namespace: owner.GetNamespace(), Name: owner.GetName()}
	var cfg options
	for _, o := range opts {
		o.apply(&cfg)
	}
	gvk, err := ownerKind(owner, cfg.kind)
	if err != nil {
		return fmt.Errorf("set controller reference of %s to %s: %w", child, ownerKey, err)
	}
	switch {
	case owner.GetName() == "":
		return fmt.Errorf("set controller reference of %s: %s owner has no name: %w", child, gvk.Kind, ErrInvalidOwner)
	case owner.GetUID() == "":
		return fmt.Errorf("set controller reference of %s to %s %s: owner has no uid: %w", child, gvk.Kind, ownerKey, ErrMissingUID)
	case owner.GetNamespace() != "" && obj.GetNamespace() == "":
		return fmt.Errorf("set controller reference of cluster-scoped %s to %s %s: a namespaced owner cannot own a cluster-scoped object: %w", child, gvk.Kind, ownerKey, ErrInvalidOwner)
	case owner.GetNamespace() != "" && owner.GetNamespace() != obj.GetNamespace():
		return fmt.Errorf("set controller reference of %s to %s %s: owner and object are in different namespaces: %w", child, gvk.Kind, ownerKey, ErrInvalidOwner)
	}
	ref := *NewControllerRef(owner, gvk)
	refs := obj.GetOwnerReferences()
	if cur := controllerOfNoCopy(obj); cur != nil && !sameOwner(*cur, ref) {
		return &AlreadyOwnedError{Object: child, Controller: *cur, Owner: ref}
	}
	out := make([]metav1.OwnerReference, 0, len(refs)+1)
	replaced := false
	for _, r := range refs {
		if sameOwner(r, ref) {
			if !replaced {
				out = append(out, ref)
				replaced = true
			}
			continue
		}
		out = append(out, r)
	}
	if !replaced {
		out = append(out, ref)
	}
	obj.SetOwnerReferences(out)
	return nil
}

// sameOwner reports whether two references point at the same owner: by UID when both have
// one, else by group, kind and name (the API version may differ across versions of a kind).
func sameOwner(a, b metav1.OwnerReference) bool {
	if a.UID != "" && b.UID != "" {
		return a.UID == b.UID
	}
	ga, errA := schema.ParseGroupVersion(a.APIVersion)
	gb, errB := schema.ParseGroupVersion(b.APIVersion)
	if errA != nil || errB != nil {
		return false
	}
	return ga.Group == gb.Group && a.Kind == b.Kind && a.Name == b.Name
}

// Option configures SetControllerReference.
type Option interface {
	apply(*options)
}

type options struct {
	kind schema.GroupVersionKind
}

type kindOption schema.GroupVersionKind

func (k kindOption) apply(o *options) { o.kind = schema.GroupVersionKind(k) }

// WithKind gives the owner's group, version and kind, for an owner whose Go type neither
// carries them nor is in client-go's scheme (client.Client's and informer.Informer's
// GroupVersionKind give it).
func WithKind(gvk schema.GroupVersionKind) Option { return kindOption(gvk) }

// ownerKind resolves the owner's kind as SetControllerReference documents.
func ownerKind(owner metav1.Object, given schema.GroupVersionKind) (schema.GroupVersionKind, error) {
	if given.Kind != "" {
		return given, nil
	}
	ro, ok := owner.(runtime.Object)
	if !ok {
		return schema.GroupVersionKind{}, fmt.Errorf("owner %T is not a runtime.Object, pass ownerref.WithKind: %w", owner, ErrUnknownKind)
	}
	if _, ok := owner.(*metav1.PartialObjectMetadata); ok {
		// A metadata informer's object says PartialObjectMetadata, or nothing, not
		// the kind of the resource it came from.
		return schema.GroupVersionKind{}, fmt.Errorf("owner is a PartialObjectMetadata, whose kind is not the resource's, pass ownerref.WithKind: %w", ErrUnknownKind)
	}
	if gvk := ro.GetObjectKind().GroupVersionKind(); gvk.Kind != "" && gvk.Version != "" {
		return gvk, nil
	}
	gvks, _, err := scheme.Scheme.ObjectKinds(ro)
	if err != nil || len(gvks) == 0 {
		return schema.GroupVersionKind{}, fmt.Errorf("kind of owner type %v is not in client-go's scheme and the owner has no apiVersion and kind, pass ownerref.WithKind: %w", reflect.TypeOf(owner), ErrUnknownKind)
	}
	return gvks[0], nil
}
