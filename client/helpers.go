package client

import (
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ctrlkit/ctrlkit/internal/object"
)

// IgnoreNotFound returns nil for an API NotFound error and err otherwise, for the common
// "already gone is fine" case of Get and Delete (the name controller-runtime uses).
func IgnoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// Preconditions returns the UID and resourceVersion of obj as delete preconditions: a Delete
// with metav1.DeleteOptions{Preconditions: Preconditions(obj)} fails with a Conflict when the
// object was replaced (another UID under the same name) or changed since obj was read,
// instead of deleting something the caller never saw. Fields obj leaves empty are not
// preconditions; a nil obj gives nil.
func Preconditions(obj metav1.Object) *metav1.Preconditions {
	if object.IsNil(obj) {
		return nil
	}
	var p metav1.Preconditions
	if uid := obj.GetUID(); uid != "" {
		p.UID = &uid
	}
	if rv := obj.GetResourceVersion(); rv != "" {
		p.ResourceVersion = &rv
	}
	return &p
}
