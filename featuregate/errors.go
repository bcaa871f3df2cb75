package featuregate

import (
	"errors"
	"fmt"
	"strconv"

	"k8s.io/apimachinery/pkg/util/version"
)

// Sentinel errors, for errors.Is: the four kinds of refusal a caller branches on. Every error
// the package returns is an *Error, or wraps or joins some; errors.As gives its Reason and
// culprit.
var (
	// ErrUnknownFeature: the feature is not registered in the gate (a typo, or a missing Add).
	ErrUnknownFeature = errors.New("unrecognized feature gate")
	// ErrInvalidValue: the gate refuses a value it was given: a malformed --feature-gates entry
	// or version, a feature locked to its other value or PreAlpha at the emulated version, a
	// feature on while one it depends on is off, a min compatibility version after the
	// emulation version.
	ErrInvalidValue = errors.New("invalid feature gate value")
	// ErrInvalidSpec: a registration (Add, AddVersioned, AddDependencies) is malformed or
	// conflicts with one made before.
	ErrInvalidSpec = errors.New("invalid feature gate spec")
	// ErrClosed: the gate no longer accepts the call. A frozen gate (Freeze) accepts no
	// registration and no change; a gate that was read, or whose flag was registered, accepts
	// no registration.
	ErrClosed = errors.New("feature gate is closed")
)

// Reason says why the gate refused a call; each matches one sentinel.
type Reason string

// The reasons of an *Error, grouped by the sentinel they match.
const (
	// ReasonUnknownFeature: the feature is not registered (ErrUnknownFeature).
	ReasonUnknownFeature Reason = "UnknownFeature"

	// ReasonMalformed: a Set entry has no feature name, no "=value", or a value
	// strconv.ParseBool rejects (ErrInvalidValue; Err is the strconv error for a bad value).
	ReasonMalformed Reason = "Malformed"
	// ReasonLocked: a LockToDefault feature was set to its other value, or its default
	// overridden (ErrInvalidValue).
	ReasonLocked Reason = "Locked"
	// ReasonPreAlpha: the feature has no spec at or before the emulated version
	// (ErrInvalidValue).
	ReasonPreAlpha Reason = "PreAlpha"
	// ReasonDependency: the feature would be on while features it depends on are off
	// (ErrInvalidValue; Disabled names them).
	ReasonDependency Reason = "Dependency"
	// ReasonInvalidVersion: a min compatibility version after the emulation version, or a
	// version flag value that is not major.minor (ErrInvalidValue).
	ReasonInvalidVersion Reason = "InvalidVersion"

	// ReasonInvalidSpec: a history is malformed (no version, wrong order, stage regression,
	// unlocking, ...) (ErrInvalidSpec).
	ReasonInvalidSpec Reason = "InvalidSpec"
	// ReasonConflictingSpec: a feature was added again with a different history
	// (ErrInvalidSpec).
	ReasonConflictingSpec Reason = "ConflictingSpec"
	// ReasonInvalidDependency: AddDependencies was given an unknown feature, a cycle, or a
	// dependency that breaks upstream's rules (stability, default, lock) (ErrInvalidSpec).
	ReasonInvalidDependency Reason = "InvalidDependency"

	// ReasonFrozen: the gate was frozen with Freeze (ErrClosed).
	ReasonFrozen Reason = "Frozen"
	// ReasonAlreadyRead: registration after the gate answered Enabled, which could change
	// behaviour that already ran (ErrClosed).
	ReasonAlreadyRead Reason = "AlreadyRead"
	// ReasonFlagRegistered: registration or a default override after AddFlag/AddGoFlag
	// captured the help text (ErrClosed).
	ReasonFlagRegistered Reason = "FlagRegistered"
)

// sentinel is the sentinel error r matches.
func (r Reason) sentinel() error {
	switch r {
	case ReasonUnknownFeature:
		return ErrUnknownFeature
	case ReasonInvalidSpec, ReasonConflictingSpec, ReasonInvalidDependency:
		return ErrInvalidSpec
	case ReasonFrozen, ReasonAlreadyRead, ReasonFlagRegistered:
		return ErrClosed
	default:
		return ErrInvalidValue
	}
}

// Error is a refused call: its Reason, the feature at fault and what was asked. Messages
// are component-base's where upstream makes the same check.
type Error struct {
	Reason Reason
	// Feature is the culprit; empty for a version error, a closed gate, or a Set entry
	// without a name.
	Feature Feature
	// Entry is the raw, untrimmed Set entry (ReasonMalformed).
	Entry string
	// Value is the value asked for as --feature-gates spells it ("true", "false", or the
	// malformed text, empty when missing); for a version flag, the text given.
	Value string
	// Disabled are the dependencies that are off, sorted (ReasonDependency).
	Disabled []Feature
	// EmulationVersion and MinCompatibilityVersion are the versions at fault or in force
	// (ReasonPreAlpha, ReasonInvalidVersion).
	EmulationVersion, MinCompatibilityVersion *version.Version
	// Err is the cause: the strconv or version parse error of a malformed value, else nil.
	Err error

	msg string
}

func (e *Error) Error() string { return e.msg }

// Is makes errors.Is(err, sentinel) true for the sentinel of e's Reason.
func (e *Error) Is(target error) bool { return target == e.Reason.sentinel() }

// Unwrap yields the cause, if any.
func (e *Error) Unwrap() error { return e.Err }

// newError is an *Error about feature f whose message is format and args.
func newError(r Reason, f Feature, format string, args ...any) *Error {
	return &Error{Reason: r, Feature: f, msg: fmt.Sprintf(format, args...)}
}

func invalidSpec(f Feature, format string, args ...any) error {
	return newError(ReasonInvalidSpec, f, format, args...)
}

func unknownFeature(f Feature) error {
	return newError(ReasonUnknownFeature, f, "unrecognized feature gate: %s", f)
}

// frozen is the error of a frozen gate; callers wrap it with what was refused.
func frozen() error { return newError(ReasonFrozen, "", "feature gate is frozen") }

// malformed is a Set entry that does not parse (Feature empty: no name; err nil: no value).
func malformed(entry string, f Feature, value string, err error) error {
	e := &Error{Reason: ReasonMalformed, Feature: f, Entry: entry, Value: value, Err: err}
	switch {
	case f == "":
		e.msg = fmt.Sprintf("missing feature name in %q", entry)
	case err == nil:
		e.msg = fmt.Sprintf("missing bool value for %s", f)
	default:
		e.msg = fmt.Sprintf("invalid value of %s=%s, err: %v", f, value, err)
	}
	return e
}

// locked is an attempt to set f, locked to its default, to its other value v.
func locked(f Feature, v, def bool) error {
	e := newError(ReasonLocked, f, "cannot set feature gate %s to %t, feature is locked to %t", f, v, def)
	e.Value = strconv.FormatBool(v)
	return e
}

// preAlpha is an attempt to set f to v at versions where it does not exist yet.
func preAlpha(f Feature, v bool, emu, minCompat *version.Version) error {
	e := newError(ReasonPreAlpha, f, "cannot set feature gate %s to %t, feature is PreAlpha at emulated version %s, min compatibility version %s",
		f, v, versionString(emu), versionString(minCompat))
	e.Value, e.EmulationVersion, e.MinCompatibilityVersion = strconv.FormatBool(v), emu, minCompat
	return e
}

// dependency is f on while the features in disabled, which it depends on, are off.
func dependency(f Feature, disabled []Feature) error {
	e := newError(ReasonDependency, f, "%s is enabled, but depends on features that are disabled: %v", f, disabled)
	e.Disabled = disabled
	return e
}

// versionOrder is a min compatibility version after the emulation version, worded as
// component-base's compatibility package words it (whose floor is 0.0 unless a component
// sets one; ctrlkit has no floor).
func versionOrder(emu, minCompat *version.Version) error {
	e := newError(ReasonInvalidVersion, "", "minCompatibilityVersion version %s is not between [%s, %s]",
		versionString(minCompat), versionZero, versionString(emu))
	e.EmulationVersion, e.MinCompatibilityVersion = emu, minCompat
	return e
}

// badVersionFlag is a version flag value that is not major.minor; err is the parse error.
func badVersionFlag(value string, err error, format string, args ...any) error {
	e := newError(ReasonInvalidVersion, "", format, args...)
	e.Value, e.Err = value, err
	return e
}
