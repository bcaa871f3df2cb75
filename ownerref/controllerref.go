package ownerref

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// SetControllerReference makes owner the controller of obj: it adds (or, for the same owner,
// refreshes) the owner reference with controller and blockOwnerDeletion true, as
// NewControllerRef builds it from gvk, the owner's kind (typed objects read from a clientset
// carry no TypeMeta, so it is not read from owner; client.Client's GroupVersionKind gives it).
// It changes obj in memory only; write obj afterwards (Create, Update, CreateOrUpdate's
// mutate).
//
// It refuses, leaving obj unchanged:
//   - an obj controlled by another owner (a different UID, or, for a reference without UID,
//     another kind or name): an *AlreadyOwnedError naming both (errors.Is ErrAlreadyOwned);
//   - an owner without a UID (not read from the API server): ErrMissingUID, since the API
//     server rejects such a reference;
//   - a namespaced owner of a cluster-scoped obj, or an owner in another namespace than
//     obj's: ErrInvalidOwner, since the garbage collector would treat the owner as absent
//     and delete obj;
//   - a nil owner or obj: ErrNilObject; an empty gvk kind or owner name: ErrInvalidOwner.
//
// Calling it again with the same owner changes nothing. The name and rules are
// controller-runtime's controllerutil.SetControllerReference.
func SetControllerReference(owner, obj metav1.Object, gvk schema.GroupVersionKind) error {
	if isNil(owner) || isNil(obj) {
		return fmt.Errorf("set controller reference: %w", ErrNilObject)
	}
	child := types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}
	ownerKey := types.NamespacedName{Namespace: owner.GetNamespace(), Name: owner.GetName()}
	switch {
	case gvk.Kind == "" || owner.GetName() == "":
		return fmt.Errorf("set controller reference of %s: owner %s has no kind or name: %w", child, ownerKey, ErrInvalidOwner)
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
