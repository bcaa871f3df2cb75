package manager

import (
	"errors"
	"fmt"
)

// ErrInvalidOptions is matched (errors.Is) by every *OptionsError: a bad
// field of Options (New), or a bad argument to Add, AddSharded,
// AddHealthzCheck or AddReadyzCheck. It is the Manager's own, not
// controller.ErrInvalidOptions: a controller's options and its Manager's
// are told apart.
var ErrInvalidOptions = errors.New("invalid manager options")

// ErrAlreadyStarted is returned by a second Start, by what may be done only
// before Start (AddSharded, AddHealthzCheck, AddReadyzCheck) and by Add once
// Start is shutting down. It is the Manager's own: controller's
// ErrAlreadyStarted is a controller's.
var ErrAlreadyStarted = errors.New("manager already started")

// OptionsError reports one invalid option given to a Manager, naming it as
// the caller wrote it.
type OptionsError struct {
	// Runnable is the name of the Runnable at fault (Add, AddSharded),
	// empty for the Manager's own options.
	Runnable string
	// Field is the option at fault, e.g. "manager.Options.CacheSyncTimeout"
	// or "Manager.Add".
	Field string
	// Reason says what is wrong with it.
	Reason string
}

// Error names the field (and the Runnable) and says what is wrong.
func (e *OptionsError) Error() string {
	if e.Runnable == "" {
		return fmt.Sprintf("invalid %s: %s", e.Field, e.Reason)
	}
	return fmt.Sprintf("controller %q: invalid %s: %s", e.Runnable, e.Field, e.Reason)
}

// Is makes errors.Is(err, ErrInvalidOptions) true.
func (e *OptionsError) Is(target error) bool { return target == ErrInvalidOptions }
