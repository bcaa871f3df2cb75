package featuregate

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/util/version"
)

// Sentinel errors. Every error this package returns matches one of them with errors.Is;
// the typed errors below carry the culprit for errors.As.
var (
	// ErrUnknownFeature: the name is not registered in the gate.
	ErrUnknownFeature = errors.New("unrecognized feature gate")
	// ErrMissingValue: an entry of a Set string has no "=value".
	ErrMissingValue = errors.New("missing bool value")
	// ErrMissingName: an entry of a Set string has no feature name ("=true").
	ErrMissingName = errors.New("missing feature name")
	// ErrInvalidValue: the value of an entry is not a bool strconv.ParseBool accepts.
	ErrInvalidValue = errors.New("invalid feature gate value")
	// ErrLocked: a LockToDefault feature was set to the other value.
	ErrLocked = errors.New("feature gate is locked to its default")
	// ErrPreAlpha: the feature has no spec at or before the emulated version.
	ErrPreAlpha = errors.New("feature gate is not available at the emulated version")
	// ErrConflictingSpec: a feature was added again with a different spec or history.
	ErrConflictingSpec = errors.New("feature gate already registered with a different spec")
	// ErrInvalidSpec: a spec or history is malformed (no version, wrong order, stage
	// regression, unlocking, ...).
	ErrInvalidSpec = errors.New("invalid feature gate spec")
	// ErrAlreadyRead: Add/AddVersioned after the gate answered Enabled; late registration
	// could change behaviour that already ran.
	ErrAlreadyRead = errors.New("feature gate was already read")
	// ErrFlagRegistered: Add/AddVersioned after AddFlag/AddGoFlag captured the help text.
	ErrFlagRegistered = errors.New("feature gate flag was already registered")
	// ErrFrozen: the gate was frozen with Freeze; it accepts no registration and no Set.
	ErrFrozen = errors.New("feature gate is frozen")
	// ErrDependency: a feature would be on while a feature it depends on is off
	// (AddDependencies).
	ErrDependency = errors.New("feature gate depends on disabled features")
	// ErrInvalidDependency: AddDependencies was given an unknown feature, a cycle, or a
	// dependency that breaks upstream's rules (stability, default, lock).
	ErrInvalidDependency = errors.New("invalid feature gate dependency")
	// ErrInvalidVersion: a min compatibility version after the emulation version, or a
	// version flag value that is not major.minor.
	ErrInvalidVersion = errors.New("invalid feature gate version")
)

// UnknownFeatureError names a feature the gate does not know.
type UnknownFeatureError struct {
	Feature Feature
}

func (e *UnknownFeatureError) Error() string {
	return fmt.Sprintf("unrecognized feature gate: %s", e.Feature)
}

// Is makes errors.Is(err, ErrUnknownFeature) true.
func (e *UnknownFeatureError) Is(target error) bool { return target == ErrUnknownFeature }

// ParseError is a malformed entry of a Set string.
type ParseError struct {
	// Entry is the raw comma-separated entry, untrimmed.
	Entry string
	// Feature and Value are the trimmed halves of the entry (Value empty when missing).
	Feature Feature
	Value   string
	// Err is the strconv error for an unparsable value, else nil.
	Err error
}

func (e *ParseError) Error() string {
	switch {
	case e.Feature == "":
		return fmt.Sprintf("missing feature name in %q", e.Entry)
	case e.Err == nil:
		return fmt.Sprintf("missing bool value for %s", e.Feature)
	default:
		return fmt.Sprintf("invalid value of %s=%s, err: %v", e.Feature, e.Value, e.Err)
	}
}

// Unwrap yields the matching sentinel and, for a bad value, the strconv error.
func (e *ParseError) Unwrap() []error {
	switch {
	case e.Feature == "":
		return []error{ErrMissingName}
	case e.Err == nil:
		return []error{ErrMissingValue}
	default:
		return []error{ErrInvalidValue, e.Err}
	}
}

// LockedError is an attempt to set a LockToDefault feature to its other value.
type LockedError struct {
	Feature Feature
	// Value is what was asked; Default what the feature is locked to.
	Value, Default bool
}

func (e *LockedError) Error() string {
	return fmt.Sprintf("cannot set feature gate %s to %t, feature is locked to %t", e.Feature, e.Value, e.Default)
}

// Is makes errors.Is(err, ErrLocked) true.
func (e *LockedError) Is(target error) bool { return target == ErrLocked }

// PreAlphaError is an attempt to set a feature that does not exist yet at the emulated
// version (and min compatibility version).
type PreAlphaError struct {
	Feature                 Feature
	Value                   bool
	EmulationVersion        *version.Version
	MinCompatibilityVersion *version.Version
}

func (e *PreAlphaError) Error() string {
	return fmt.Sprintf("cannot set feature gate %s to %t, feature is PreAlpha at emulated version %s, min compatibility version %s",
		e.Feature, e.Value, versionString(e.EmulationVersion), versionString(e.MinCompatibilityVersion))
}

// Is makes errors.Is(err, ErrPreAlpha) true.
func (e *PreAlphaError) Is(target error) bool { return target == ErrPreAlpha }

// SpecError is a rejected registration (Add, AddVersioned, AddDependencies) or default
// override (OverrideDefault, OverrideDefaultAtVersion).
type SpecError struct {
	Feature Feature
	// Reason is the whole message, worded as component-base words it where upstream has
	// the same check, e.g. `feature "F" lists version transitions in decreasing order
	// (1.30 < 1.32)`.
	Reason string
	// Err is the sentinel it matches: ErrInvalidSpec, ErrConflictingSpec,
	// ErrInvalidDependency, ErrUnknownFeature, ErrLocked, ErrPreAlpha or ErrFlagRegistered.
	Err error
}

func (e *SpecError) Error() string { return e.Reason }

func (e *SpecError) Unwrap() error { return e.Err }

func invalidSpec(f Feature, format string, args ...any) error {
	return specError(f, ErrInvalidSpec, format, args...)
}

func specError(f Feature, sentinel error, format string, args ...any) error {
	return &SpecError{Feature: f, Reason: fmt.Sprintf(format, args...), Err: sentinel}
}

// DependencyError is a state in which Feature is on while features it depends on (see
// AddDependencies) are off. Set, SetFromMap, SetEmulationVersion and test overrides refuse
// to reach such a state.
type DependencyError struct {
	Feature Feature
	// Disabled are the dependencies that are off, sorted.
	Disabled []Feature
}

func (e *DependencyError) Error() string {
	return fmt.Sprintf("%s is enabled, but depends on features that are disabled: %v", e.Feature, e.Disabled)
}

// Is makes errors.Is(err, ErrDependency) true.
func (e *DependencyError) Is(target error) bool { return target == ErrDependency }

// VersionError is a min compatibility version after the emulation version. The text is
// the one component-base's compatibility package gives for the same mistake (whose floor
// is 0.0 unless a component sets one; ctrlkit has no floor).
type VersionError struct {
	EmulationVersion, MinCompatibilityVersion *version.Version
}

func (e *VersionError) Error() string {
	return fmt.Sprintf("minCompatibilityVersion version %s is not between [%s, %s]",
		versionString(e.MinCompatibilityVersion), versionZero, versionString(e.EmulationVersion))
}

// Is makes errors.Is(err, ErrInvalidVersion) true.
func (e *VersionError) Is(target error) bool { return target == ErrInvalidVersion }
