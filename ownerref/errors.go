package ownerref

import (
	"errors"
	"fmt"

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
