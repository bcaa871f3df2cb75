package controller

import (
	"errors"
	"fmt"
)

// Sentinel errors of the package's own failures, matched with errors.Is; the
// typed errors below add detail for errors.As. Terminal errors are told by
// IsTerminal, recovered panics by errors.As to *PanicError.
var (
	// ErrInvalidOptions is matched by every *OptionsError.
	ErrInvalidOptions = errors.New("invalid options")
	// ErrAlreadyStarted is returned by Run while another Run of the same
	// controller is in progress (and by a second Run of a controller with a
	// prebuilt Options.Queue), by a second manager Start, and by Watch after
	// the first Run started.
	ErrAlreadyStarted = errors.New("already started")
	// ErrShutdown is the cause (context.CancelCauseFunc, context.Cause) of
	// a graceful shutdown: Run's context cancelled with it lets the
	// Reconciles in flight finish, for up to Options.DrainTimeout, and a
	// Reconcile cut short when that expires sees it as its context's
	// cause. A manager.Manager cancels its controllers with it when its
	// own context ends while the API server answers.
	ErrShutdown = errors.New("shutting down")
)

// errTerminal is matched by every error made with Terminal (IsTerminal).
var errTerminal = errors.New("terminal error")

// terminalError marks an error that retrying cannot fix (Terminal).
type terminalError struct {
	err error
}

// Terminal marks err as one that retrying cannot fix (bad user input, an
// unsupported spec): the worker loop logs it once and forgets the key; the
// next event for the object reconciles it again. errors.Is and errors.As see
// through it. Terminal(nil) is nil, so `return Result{},
// controller.Terminal(err)` is safe for any err.
func Terminal(err error) error {
	if err == nil {
		return nil
	}
	return &terminalError{err: err}
}

// IsTerminal reports whether err (or anything it wraps) was made by Terminal.
func IsTerminal(err error) bool {
	return errors.Is(err, errTerminal)
}

func (e *terminalError) Error() string { return "terminal: " + e.err.Error() }

// Unwrap returns the wrapped error, so errors.Is/As see through Terminal.
func (e *terminalError) Unwrap() error { return e.err }

func (e *terminalError) Is(target error) bool { return target == errTerminal }

// OptionsError reports one invalid option given to New (manager.New has an
// OptionsError of its own).
type OptionsError struct {
	// Controller is the controller's name, empty for a Manager's options.
	Controller string
	// Field is the option at fault, e.g. "Workers".
	Field string
	// Reason says what is wrong with it.
	Reason string
}

func (e *OptionsError) Error() string {
	if e.Controller == "" {
		return fmt.Sprintf("invalid %s: %s", e.Field, e.Reason)
	}
	return fmt.Sprintf("controller %q: invalid %s: %s", e.Controller, e.Field, e.Reason)
}

// Is makes errors.Is(err, ErrInvalidOptions) true.
func (e *OptionsError) Is(target error) bool { return target == ErrInvalidOptions }

// PanicError is the error a recovered panic in Reconcile becomes (errors.As
// finds it).
type PanicError struct {
	// Value is what Reconcile panicked with.
	Value any
	// Stack is the goroutine's stack at the panic.
	Stack []byte
}

func (e *PanicError) Error() string { return fmt.Sprintf("reconcile panicked: %v", e.Value) }

// Unwrap returns the panic value when it is an error, so a panic(err) can
// still be matched with errors.Is(err, thatErr).
func (e *PanicError) Unwrap() error {
	if err, ok := e.Value.(error); ok {
		return err
	}
	return nil
}
