package webhook

import "errors"

var (
	// ErrInvalidHandler is matched by the errors of NewDefaulting, NewValidating and
	// NewConversion about their arguments.
	ErrInvalidHandler = errors.New("webhook: invalid handler")
	// ErrInvalidOptions is matched by the errors of NewServer about its ServerOptions, and
	// of Register about a path or handler.
	ErrInvalidOptions = errors.New("webhook: invalid options")
	// ErrAlreadyStarted is returned by Register after Run, and by a second Run.
	ErrAlreadyStarted = errors.New("webhook: server already started")
)
