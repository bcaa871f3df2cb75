// Package errs holds sentinel errors that several public packages export under their own
// names, so that errors.Is matches across them: client.ErrInvalidInput and
// customresource.ErrInvalidInput are one value.
package errs

import "errors"

// ErrInvalidInput is matched by errors about input a client refuses before sending a request:
// a nil object, a missing or unexpected namespace, a missing name.
var ErrInvalidInput = errors.New("invalid input")
