package ownerref

import (
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

var (
	// ErrOwnerBeingDeleted: the fresh copy of the owner has a deletionTimestamp, so it must not
	// adopt (an owner in deletion that adopts would take children down with it).
	ErrOwnerBeingDeleted = errors.New("owner is being deleted")
	// ErrOwnerReplaced: the fresh copy of the owner has another UID: the owner the controller
	// reconciles was deleted and a new object took its name.
	ErrOwnerReplaced = errors.New("owner was replaced")
	// ErrInvalidClaimer: the Claimer was built with a nil owner or patcher, or an unsupported
	// patch type.
	ErrInvalidClaimer = errors.New("invalid claimer")
	// ErrNilObject: a nil object was passed to a claim.
	ErrNilObject = errors.New("nil object")
	// ErrMissingUID: an owner or a child has no UID, so it was not read from the API server.
	// An owner without one would write references the server rejects and would take children
	// whose controller reference has no UID for its own; a patch of a child without one
	// carries no UID precondition and could change another object under the same name. It
	// comes wrapped with ErrInvalidClaimer for the owner and in a *ClaimError for a child.
	ErrMissingUID = errors.New("missing uid")
	// ErrUnknownKind: SetControllerReference cannot tell the owner's kind (see WithKind).
	ErrUnknownKind = errors.New("unknown owner kind")
)

// Op names what a claim tried to do to a child.
type Op string

const (
	// OpAdopt adds the owner's controller reference to an orphan.
	OpAdopt Op = "adopt"
	// OpRelease removes the owner's reference from a child that no longer matches.
	OpRelease Op = "release"
)

// ClaimError is one failed adoption or release. ClaimObjects aggregates them with
// k8s.io/apimachinery/pkg/util/errors.NewAggregate; errors.Is sees through the aggregate
// (e.g. errors.Is(err, ErrOwnerBeingDeleted) or apierrors.IsConflict on one element), and
// the aggregate's Errors() lists each *ClaimError.
type ClaimError struct {
	Op Op
	// Object and UID identify the child.
	Object types.NamespacedName
	UID    types.UID
	// OwnerKind and Owner identify the claiming owner.
	OwnerKind string
	Owner     types.NamespacedName
	Err       error
}

func (e *ClaimError) Error() string {
	return fmt.Sprintf("cannot %s %s (uid %s) for %s %s: %v", e.Op, e.Object, e.UID, e.OwnerKind, e.Owner, e.Err)
}

func (e *ClaimError) Unwrap() error { return e.Err }

var (
	// ErrAlreadyOwned is matched (errors.Is) by the *AlreadyOwnedError SetControllerReference
	// returns when the object already has another controller.
	ErrAlreadyOwned = errors.New("object is already controlled by another owner")
	// ErrInvalidOwner: SetControllerReference was asked for a reference the API server would
	// refuse or the garbage collector would misread: a namespaced owner of a cluster-scoped
	// object, an owner in another namespace, or an owner without kind or name.
	ErrInvalidOwner = errors.New("invalid owner")
)

// AlreadyOwnedError is SetControllerReference's refusal to give an object a second
// controller. It names both owners; errors.Is(err, ErrAlreadyOwned) matches it.
type AlreadyOwnedError struct {
	// Object is the child.
	Object types.NamespacedName
	// Controller is the controller reference the child already has.
	Controller metav1.OwnerReference
	// Owner is the reference that was refused.
	Owner metav1.OwnerReference
}

func (e *AlreadyOwnedError) Error() string {
	return fmt.Sprintf("%s is already controlled by %s %s (uid %s); refusing %s %s (uid %s)",
		e.Object, e.Controller.Kind, e.Controller.Name, e.Controller.UID, e.Owner.Kind, e.Owner.Name, e.Owner.UID)
}

func (e *AlreadyOwnedError) Is(target error) bool { return target == ErrAlreadyOwned }
