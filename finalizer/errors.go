package finalizer

import (
	"errors"
	"fmt"

	"github.com/ctrlkit/ctrlkit/internal/errs"
)

var (
	// ErrInvalidName: a finalizer name the API server would reject (or, for custom resources,
	// warn about). A name must be a qualified name with a domain prefix, such as
	// "example.com/cleanup"; the standard names "kubernetes", "orphan" and
	// "foregroundDeletion" are accepted as they are.
	ErrInvalidName = errors.New("invalid finalizer name")
	// ErrInvalidInput: a nil object or Patcher was passed, or Register was given a nil finalize
	// function; the message says which. It is the same value as client.ErrInvalidInput.
	ErrInvalidInput = errs.ErrInvalidInput
	// ErrMissingResourceVersion: the object has no resourceVersion (it was not read from the API
	// server), so a patch could not carry the precondition that keeps a concurrent writer's
	// finalizers from being lost. Nothing is sent.
	ErrMissingResourceVersion = errors.New("object has no resourceVersion")
	// ErrBeingDeleted: Add was asked to add a finalizer to an object that has a
	// deletionTimestamp. The API server forbids new finalizers on an object being deleted.
	ErrBeingDeleted = errors.New("object is being deleted")
	// ErrAlreadyRegistered: Register was called twice with one name.
	ErrAlreadyRegistered = errors.New("finalizer already registered")
)

// FinalizeError is a registered finalize function's failure, as Finalizers.Finalize returns it:
// errors.As(err, &fe) tells which finalizer failed on which object, and errors.Is / errors.As see
// the function's own error through Unwrap (a controller.Terminal error stays terminal).
type FinalizeError struct {
	// Finalizer is the name the function was registered under.
	Finalizer string
	// Object names the object being finalized: "namespace/name", or "name" when cluster-scoped.
	Object string
	// Err is what the function returned.
	Err error
}

func (e *FinalizeError) Error() string {
	return fmt.Sprintf("finalizer %q of %s failed: %v", e.Finalizer, e.Object, e.Err)
}

func (e *FinalizeError) Unwrap() error { return e.Err }
