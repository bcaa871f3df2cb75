package featuregate

import (
	"fmt"
	"maps"
	"slices"
	"strconv"

	"k8s.io/apimachinery/pkg/util/version"
)

// OverrideDefault changes the registered default of feature f, for the spec in force at
// the gate's emulation and min compatibility versions. A binary calls it before parsing
// flags to adopt a new default ahead of (or behind) the other components that share the
// feature, as kube-controller-manager's options do.
//
// It fails for an unregistered feature, a feature locked to its default, a feature
// PreAlpha at that version, once the flag was registered (the help text shows defaults)
// and once the gate is frozen; errors carry component-base's texts and match
// ErrUnknownFeature, ErrInvalidValue (ReasonLocked, ReasonPreAlpha) or ErrClosed
// (ReasonFlagRegistered, ReasonFrozen). Overriding the
// default of a GA or deprecated feature works and logs a warning. Values set explicitly
// still win over the new default.
//
// As upstream, dependencies are not re-checked here but by the next Set, SetFromMap or
// SetEmulationVersion.
func (g *Gate) OverrideDefault(f Feature, value bool) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	s := g.load()
	return g.overrideDefault(f, value, s.emulation, s.minCompat)
}

// OverrideDefaultAtVersion is OverrideDefault for the spec in force at version v (with a
// min compatibility version one minor before v), whatever the gate's emulation version.
func (g *Gate) OverrideDefaultAtVersion(f Feature, value bool, v *version.Version) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.overrideDefault(f, value, v, nil)
}

// overrideDefault rewrites the default of the history entry in force at (emu, minCompat).
// Callers hold g.mu.
func (g *Gate) overrideDefault(f Feature, value bool, emu, minCompat *version.Version) error {
	switch {
	case g.frozen:
		return fmt.Errorf("cannot override default for feature %q: %w", f, frozen())
	case g.flagRegistered:
		return newError(ReasonFlagRegistered, f, "cannot override default for feature %q: gates already added to a flag set", f)
	}
	cur := g.current()
	history, ok := cur.known[f]
	if !ok {
		return newError(ReasonUnknownFeature, f, "cannot override default: feature %q is not registered", f)
	}
	i := indexAt(history, emu, minCompat)
	switch {
	case i < 0:
		e := newError(ReasonPreAlpha, f, "cannot override default: feature %q is not available before version %s", f, versionString(emu))
		e.Value, e.EmulationVersion, e.MinCompatibilityVersion = strconv.FormatBool(value), emu, minCompat
		return e
	case history[i].LockToDefault:
		e := newError(ReasonLocked, f, "cannot override default: feature %q default is locked to %t", f, history[i].Default)
		e.Value = strconv.FormatBool(value)
		return e
	case history[i].PreRelease == Deprecated:
		g.log().Info("Warning: overriding default of deprecated feature gate. It will be removed in a future release.", "featureGate", f, "value", value)
	case history[i].PreRelease == GA:
		g.log().Info("Warning: overriding default of GA feature gate. It will be removed in a future release.", "featureGate", f, "value", value)
	}
	changed := slices.Clone(history)
	changed[i].Default = value
	cur.known = maps.Clone(cur.known)
	cur.known[f] = changed
	g.snap.Store(cur.rebuild())
	return nil
}
