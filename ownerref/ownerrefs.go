package ownerref

import (
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/internal/object"
)

// ErrNotOwned: RemoveOwnerReference or RemoveControllerReference found no reference of obj to
// the owner to remove (for the latter, no controller reference to it).
var ErrNotOwned = errors.New("object has no such owner reference")

// SetOwnerReference adds owner to obj's owner references as a plain owner (no controller
// flag): the garbage collector deletes obj once all its owners are gone, but obj does not
// count as controlled by owner (IsControlledBy, EnqueueControllerOf and claims ignore it).
// blockOwnerDeletion is left unset unless WithBlockOwnerDeletion gives it. It changes obj in
// memory only; write obj afterwards. The owner's kind is found as for SetControllerReference
// (WithKind, the owner's apiVersion and kind, WithScheme or client-go's scheme).
//
// A reference obj already has to the same owner, that is the same API group, kind and name
// (not version, not UID: an owner deleted and re-created under its name is the same owner
// here), is replaced in place by the new one, as controller-runtime's
// controllerutil.SetOwnerReference does; if it was obj's controller reference it becomes a
// plain one. Which to choose: SetControllerReference for the object a controller creates and
// manages (one controller, which finds its children by it); SetOwnerReference for an object
// that should only go away with owner, or that has several owners.
//
// It refuses, leaving obj unchanged, what SetControllerReference refuses apart from a second
// controller: a nil owner or obj (ErrNilObject), an owner without a name, a namespaced owner
// of a cluster-scoped obj or an owner in another namespace (ErrInvalidOwner), an owner of
// unknown kind (ErrUnknownKind), and an owner without a UID (ErrMissingUID; controller-runtime's
// accepts it and the API server then refuses the write).
func SetOwnerReference(owner, obj metav1.Object, opts ...Option) error {
	cfg := newOptions(opts)
	_, gvk, err := checkOwner("set owner reference", owner, obj, cfg)
	if err != nil {
		return err
	}
	ref := metav1.OwnerReference{
		APIVersion: gvk.GroupVersion().String(),
		Kind:       gvk.Kind,
		Name:       owner.GetName(),
		UID:        owner.GetUID(),
	}
	if cfg.block != nil {
		ref.BlockOwnerDeletion = new(*cfg.block)
	}
	obj.SetOwnerReferences(replaceOwner(obj.GetOwnerReferences(), ref, func(r metav1.OwnerReference) bool { return refersTo(r, gvk, owner.GetName()) }))
	return nil
}

// RemoveOwnerReference removes every reference of obj to owner (same API group, kind and name,
// as SetOwnerReference matches them), controller reference or not, in memory; write obj
// afterwards. The garbage collector then no longer deletes obj with owner. It is
// controller-runtime's controllerutil.RemoveOwnerReference, which removes the first such
// reference only; several can only come from writers that did not replace.
//
// An obj without a reference to owner is an error matching ErrNotOwned that names both; a nil
// owner or obj is ErrNilObject and an owner of unknown kind ErrUnknownKind. owner need not have
// a UID, so an owner known only by name (built for the purpose) works.
func RemoveOwnerReference(owner, obj metav1.Object, opts ...Option) error {
	child, ownerKey, gvk, err := resolve("remove owner reference", owner, obj, opts)
	if err != nil {
		return err
	}
	refs := obj.GetOwnerReferences()
	out := make([]metav1.OwnerReference, 0, len(refs))
	for _, r := range refs {
		if !refersTo(r, gvk, owner.GetName()) {
			out = append(out, r)
		}
	}
	if len(out) == len(refs) {
		return fmt.Errorf("remove owner reference of %s to %s %s: %w", child, gvk.Kind, ownerKey, ErrNotOwned)
	}
	obj.SetOwnerReferences(out)
	return nil
}

// RemoveControllerReference removes obj's controller reference, in memory, when it points at
// owner (same API group, kind and name); plain references to owner stay. Write obj afterwards:
// obj is then an orphan that another controller may adopt. It is controller-runtime's
// controllerutil.RemoveControllerReference.
//
// An obj without a controller reference, or controlled by another owner, is an error matching
// ErrNotOwned that names the objects (and the other controller), and obj is left unchanged.
// A nil owner or obj is ErrNilObject and an owner of unknown kind ErrUnknownKind.
func RemoveControllerReference(owner, obj metav1.Object, opts ...Option) error {
	child, ownerKey, gvk, err := resolve("remove controller reference", owner, obj, opts)
	if err != nil {
		return err
	}
	cur := controllerOfNoCopy(obj)
	switch {
	case cur == nil:
		return fmt.Errorf("remove controller reference of %s to %s %s: %s has no controller reference: %w", child, gvk.Kind, ownerKey, child, ErrNotOwned)
	case !refersTo(*cur, gvk, owner.GetName()):
		return fmt.Errorf("remove controller reference of %s to %s %s: %s is controlled by %s %s (uid %s): %w", child, gvk.Kind, ownerKey, child, cur.Kind, cur.Name, cur.UID, ErrNotOwned)
	}
	refs := obj.GetOwnerReferences()
	out := make([]metav1.OwnerReference, 0, len(refs)-1)
	for _, r := range refs {
		if r.Controller == nil || !*r.Controller {
			out = append(out, r)
		}
	}
	obj.SetOwnerReferences(out)
	return nil
}

// HasOwnerReference reports whether obj has a reference to owner, controller reference or
// not: one with owner's API group, kind and name (not version, not UID), as controller-runtime's
// controllerutil.HasOwnerReference(obj.GetOwnerReferences(), owner, scheme) matches it. To ask
// whether owner, this very object by UID, is obj's controller, use IsControlledBy. A nil owner
// or obj is ErrNilObject and an owner of unknown kind ErrUnknownKind.
func HasOwnerReference(obj, owner metav1.Object, opts ...Option) (bool, error) {
	_, _, gvk, err := resolve("has owner reference", owner, obj, opts)
	if err != nil {
		return false, err
	}
	for _, r := range obj.GetOwnerReferences() {
		if refersTo(r, gvk, owner.GetName()) {
			return true, nil
		}
	}
	return false, nil
}

// HasControllerReference reports whether obj has a controller reference, to any owner
// (controller-runtime's controllerutil.HasControllerReference). A nil obj has none. ControllerOf
// says which owner it is, IsControlledBy whether it is a given one.
func HasControllerReference(obj metav1.Object) bool {
	return !object.IsNil(obj) && controllerOfNoCopy(obj) != nil
}

// resolve checks the arguments of the functions that look references up and finds owner's
// kind; op starts the errors.
func resolve(op string, owner, obj metav1.Object, opts []Option) (child, ownerKey types.NamespacedName, gvk schema.GroupVersionKind, err error) {
	if object.IsNil(obj) {
		return child, ownerKey, gvk, fmt.Errorf("%s: object: %w", op, ErrNilObject)
	}
	child = types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}
	if object.IsNil(owner) {
		return child, ownerKey, gvk, fmt.Errorf("%s of %s: owner: %w", op, child, ErrNilObject)
	}
	ownerKey = types.NamespacedName{Namespace: owner.GetNamespace(), Name: owner.GetName()}
	gvk, err = ownerKind(owner, newOptions(opts))
	if err != nil {
		return child, ownerKey, gvk, fmt.Errorf("%s of %s to %s: %w", op, child, ownerKey, err)
	}
	return child, ownerKey, gvk, nil
}

// refersTo reports whether r points at the owner of kind gvk named name: the same API group,
// kind and name, whatever the version (a reference written at another version of the kind
// still names the same owner) and the UID.
func refersTo(r metav1.OwnerReference, gvk schema.GroupVersionKind, name string) bool {
	gv, err := schema.ParseGroupVersion(r.APIVersion)
	return err == nil && gv.Group == gvk.Group && r.Kind == gvk.Kind && r.Name == name
}
