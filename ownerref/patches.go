package ownerref

import (
	"encoding/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// Every patch carries metadata.uid set to the child's UID. UID is immutable, so when the
// object under that name was deleted and re-created the API server rejects the patch as
// Invalid instead of adopting (or releasing) the wrong object: a precondition for free.

// smpAdopt is the strategic merge patch kube-controller-manager sends to adopt: one
// ownerReferences entry, merged by uid into the object's list.
type smpAdopt struct {
	Metadata struct {
		OwnerReferences []metav1.OwnerReference `json:"ownerReferences"`
		UID             types.UID               `json:"uid"`
	} `json:"metadata"`
}

type smpDeleteRef struct {
	Patch string    `json:"$patch"`
	UID   types.UID `json:"uid"`
}

// smpRelease deletes the owner's entry (by its merge key, uid) from the list.
type smpRelease struct {
	Metadata struct {
		OwnerReferences []smpDeleteRef `json:"ownerReferences"`
		UID             types.UID      `json:"uid"`
	} `json:"metadata"`
}

// mergeRefs is a JSON merge patch (RFC 7386). Merge patches replace lists whole, so the patch
// carries the complete new ownerReferences list computed from the object the claimer saw,
// and that object's resourceVersion: if the object changed since (another owner reference
// added, say), the server answers Conflict instead of the patch silently dropping the
// change. This is how kube-controller-manager's garbage collector patches custom resources.
type mergeRefs struct {
	Metadata struct {
		// No omitempty: an empty list is sent as null, which removes the field.
		OwnerReferences []metav1.OwnerReference `json:"ownerReferences"`
		ResourceVersion string                  `json:"resourceVersion,omitempty"`
		UID             types.UID               `json:"uid"`
	} `json:"metadata"`
}

func adoptPatch(pt types.PatchType, owner metav1.Object, gvk schema.GroupVersionKind, child metav1.Object) ([]byte, error) {
	ref := *NewControllerRef(owner, gvk)
	if pt == types.MergePatchType {
		var p mergeRefs
		replaced := false
		for _, r := range child.GetOwnerReferences() {
			if r.UID == ref.UID {
				// A non-controller reference to the same owner becomes the controller one.
				if !replaced {
					p.Metadata.OwnerReferences = append(p.Metadata.OwnerReferences, ref)
					replaced = true
				}
				continue
			}
			p.Metadata.OwnerReferences = append(p.Metadata.OwnerReferences, r)
		}
		if !replaced {
			p.Metadata.OwnerReferences = append(p.Metadata.OwnerReferences, ref)
		}
		p.Metadata.ResourceVersion = child.GetResourceVersion()
		p.Metadata.UID = child.GetUID()
		return json.Marshal(&p)
	}
	var p smpAdopt
	p.Metadata.OwnerReferences = []metav1.OwnerReference{ref}
	p.Metadata.UID = child.GetUID()
	return json.Marshal(&p)
}

func releasePatch(pt types.PatchType, owner metav1.Object, child metav1.Object) ([]byte, error) {
	if pt == types.MergePatchType {
		var p mergeRefs
		for _, r := range child.GetOwnerReferences() {
			if r.UID != owner.GetUID() {
				p.Metadata.OwnerReferences = append(p.Metadata.OwnerReferences, r)
			}
		}
		p.Metadata.ResourceVersion = child.GetResourceVersion()
		p.Metadata.UID = child.GetUID()
		return json.Marshal(&p)
	}
	var p smpRelease
	p.Metadata.OwnerReferences = []smpDeleteRef{{Patch: "delete", UID: owner.GetUID()}}
	p.Metadata.UID = child.GetUID()
	return json.Marshal(&p)
}
