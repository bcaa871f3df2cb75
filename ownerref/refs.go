package ownerref

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ctrlkit/ctrlkit/internal/object"
)

// ControllerOf returns a copy of obj's controller reference (the owner reference with
// controller: true), or nil when obj has none or obj is nil. The API server allows at most
// one controller reference per object.
func ControllerOf(obj metav1.Object) *metav1.OwnerReference {
	if object.IsNil(obj) {
		return nil
	}
	ref := controllerOfNoCopy(obj)
	if ref == nil {
		return nil
	}
	c := *ref
	return &c
}

// controllerOfNoCopy is ControllerOf without the copy, for read-only use inside the package.
func controllerOfNoCopy(obj metav1.Object) *metav1.OwnerReference {
	refs := obj.GetOwnerReferences()
	for i := range refs {
		if refs[i].Controller != nil && *refs[i].Controller {
			return &refs[i]
		}
	}
	return nil
}

// IsControlledBy reports whether obj's controller reference points at owner (by UID, the only
// identity that survives a delete and re-create under the same name). An empty UID identifies
// nothing: an owner without a UID (not read from the API server) controls nothing, and a
// controller reference without a UID points at no owner.
func IsControlledBy(obj, owner metav1.Object) bool {
	if object.IsNil(obj) || object.IsNil(owner) || owner.GetUID() == "" {
		return false
	}
	ref := controllerOfNoCopy(obj)
	return ref != nil && ref.UID == owner.GetUID()
}

// NewControllerRef returns the owner reference that makes owner the controller of a child:
// controller and blockOwnerDeletion true, so foreground deletion of the owner waits for the
// child. gvk is the owner's kind (typed objects from a clientset carry no TypeMeta, so it
// cannot be read from owner). A nil owner gives nil. An owner without a UID (not read from the
// API server) gives a reference without one, which the API server rejects.
func NewControllerRef(owner metav1.Object, gvk schema.GroupVersionKind) *metav1.OwnerReference {
	if object.IsNil(owner) {
		return nil
	}
	yes := true
	block := true
	return &metav1.OwnerReference{
		APIVersion:         gvk.GroupVersion().String(),
		Kind:               gvk.Kind,
		Name:               owner.GetName(),
		UID:                owner.GetUID(),
		Controller:         &yes,
		BlockOwnerDeletion: &block,
	}
}
