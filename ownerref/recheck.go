package ownerref

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ctrlkit/ctrlkit/internal/object"
)

// RecheckDeletionTimestamp returns a canAdopt function, as kube-controller-manager's: it
// fetches the owner with getFresh (which should bypass the informer cache) and refuses
// adoption with ErrOwnerBeingDeleted when that copy has a deletionTimestamp. The cache can
// lag behind a deletion; adopting then would hand children to an owner about to go.
//
// It cannot tell whether the fresh object is still the same owner; RecheckOwner also checks
// the UID and is what controllers should normally use.
func RecheckDeletionTimestamp(getFresh func(ctx context.Context) (metav1.Object, error)) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		fresh, err := fetchFresh(ctx, getFresh)
		if err != nil {
			return err
		}
		return checkNotDeleting(fresh)
	}
}

// RecheckOwner returns a canAdopt function that fetches the owner with getFresh and refuses
// adoption when the fresh copy has another UID than owner (ErrOwnerReplaced: the owner was
// deleted and re-created under its name) or has a deletionTimestamp (ErrOwnerBeingDeleted).
// This is what kube-controller-manager's controllers build around RecheckDeletionTimestamp.
//
//	canAdopt := ownerref.RecheckOwner(rs, ownerref.GetFresh(client.AppsV1().ReplicaSets(rs.Namespace).Get, rs.Name))
func RecheckOwner(owner metav1.Object, getFresh func(ctx context.Context) (metav1.Object, error)) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		if object.IsNil(owner) {
			return fmt.Errorf("%w: RecheckOwner was given a nil owner", ErrInvalidClaimer)
		}
		if owner.GetUID() == "" {
			// Without a UID, a re-created owner (or a fresh copy without one) would pass.
			return fmt.Errorf("%w: RecheckOwner was given owner %s: %w", ErrInvalidClaimer, objectName(owner), ErrMissingUID)
		}
		fresh, err := fetchFresh(ctx, getFresh)
		if err != nil {
			return err
		}
		if fresh.GetUID() != owner.GetUID() {
			return fmt.Errorf("%w: %s now has uid %s, expected %s", ErrOwnerReplaced, objectName(fresh), fresh.GetUID(), owner.GetUID())
		}
		return checkNotDeleting(fresh)
	}
}

// GetFresh adapts a typed client's Get (client.AppsV1().ReplicaSets(ns).Get, the dynamic
// client's Get, ...) to the getter RecheckOwner and RecheckDeletionTimestamp take. A client's
// Get reads from the API server, not from an informer cache, which is the point.
func GetFresh[O metav1.Object](get func(ctx context.Context, name string, opts metav1.GetOptions) (O, error), name string) func(ctx context.Context) (metav1.Object, error) {
	return func(ctx context.Context) (metav1.Object, error) {
		if get == nil {
			return nil, fmt.Errorf("%w: GetFresh was given a nil get function", ErrInvalidClaimer)
		}
		obj, err := get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		return obj, nil
	}
}

func fetchFresh(ctx context.Context, getFresh func(ctx context.Context) (metav1.Object, error)) (metav1.Object, error) {
	if getFresh == nil {
		return nil, fmt.Errorf("%w: the owner recheck was given a nil getter", ErrInvalidClaimer)
	}
	fresh, err := getFresh(ctx)
	if err != nil {
		return nil, fmt.Errorf("cannot recheck the owner uncached: %w", err)
	}
	if object.IsNil(fresh) {
		return nil, fmt.Errorf("cannot recheck the owner uncached: the getter returned no object")
	}
	return fresh, nil
}

func checkNotDeleting(fresh metav1.Object) error {
	if ts := fresh.GetDeletionTimestamp(); ts != nil {
		return fmt.Errorf("%w: %s has deletionTimestamp %s", ErrOwnerBeingDeleted, objectName(fresh), ts.UTC().Format(time.RFC3339))
	}
	return nil
}

func objectName(obj metav1.Object) string {
	if ns := obj.GetNamespace(); ns != "" {
		return ns + "/" + obj.GetName()
	}
	return obj.GetName()
}
