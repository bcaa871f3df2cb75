package featuregate

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/util/version"
)

// defaultMinCompat is the min compatibility version SetEmulationVersion implies: one minor
// before the emulation version (upstream's default), nil without emulation.
func defaultMinCompat(emu *version.Version) *version.Version {
	if emu == nil {
		return nil
	}
	return emu.SubtractMinor(1)
}

// SetEmulationVersion makes the gate behave as at version v, with a min compatibility
// version one minor before v (upstream's default; see
// SetEmulationVersionAndMinCompatibilityVersion). For each feature the spec in force is the
// newest one whose Version is not after v; a feature with no spec at or before v is
// PreAlpha (reads false, cannot be set). nil means no emulation (newest specs).
//
// Values already set are re-checked at v; if one becomes invalid there (PreAlpha, locked
// to the other value, or on while a dependency is off) the call fails and changes nothing.
// Changing the version after the gate was read logs a warning naming the features whose
// value changes.
func (g *Gate) SetEmulationVersion(v *version.Version) error {
	return g.SetEmulationVersionAndMinCompatibilityVersion(v, defaultMinCompat(v))
}

// SetEmulationVersionAndMinCompatibilityVersion sets both versions at once, as
// kube-controller-manager does from --emulated-version and --min-compatibility-version.
//
// The min compatibility version is the oldest version of the other components this binary
// must keep working with (during an upgrade or a rollback). A spec with a
// MinCompatibilityVersion applies only once minCompat is at least that version: until then
// the entry before it does. With minCompat nil, the default applies: one minor before emu,
// or no bound at all without emulation. minCompat must not be after emu (ErrInvalidValue,
// ReasonInvalidVersion,
// with component-base's text).
//
// Values already set are re-checked as in SetEmulationVersion, unless both versions are
// the ones already in force: then the call does nothing.
func (g *Gate) SetEmulationVersionAndMinCompatibilityVersion(emu, minCompat *version.Version) error {
	return g.setVersions(emu, minCompat, false)
}

// setVersions sets both versions; the test override path passes bypassFreeze.
func (g *Gate) setVersions(emu, minCompat *version.Version, bypassFreeze bool) error {
	if emu != nil && minCompat != nil && minCompat.GreaterThan(emu) {
		return versionOrder(emu, minCompat)
	}
	if minCompat == nil {
		minCompat = defaultMinCompat(emu)
	}
	g.mu.Lock()
	if g.frozen && !bypassFreeze {
		g.mu.Unlock()
		return fmt.Errorf("cannot set emulation version %s: %w", versionString(emu), frozen())
	}
	prev := g.load()
	if emu.EqualTo(prev.emulation) && minCompat.EqualTo(prev.minCompat) {
		// Nothing changes, so nothing is re-checked (as upstream).
		g.mu.Unlock()
		return nil
	}
	cur := g.current()
	cur.emulation, cur.minCompat = emu, minCompat
	var errs []error
	for _, f := range slices.Sorted(maps.Keys(cur.explicit)) {
		if err := cur.check(f, cur.explicit[f]); err != nil {
			errs = append(errs, err)
		}
	}
	for _, f := range slices.Sorted(maps.Keys(cur.overrides)) {
		if err := cur.check(f, cur.overrides[f]); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		g.mu.Unlock()
		return errors.Join(errs...)
	}
	next := cur.rebuild()
	if errs := next.dependencyErrors(); len(errs) > 0 {
		g.mu.Unlock()
		return errors.Join(errs...)
	}
	g.snap.Store(next)
	g.mu.Unlock()

	logger := g.log()
	logger.V(1).Info("Set feature gate emulation", "emulationVersion", emu, "minCompatibilityVersion", minCompat)
	if g.read.Load() {
		var changed []Feature
		for f, now := range next.enabled {
			if prev.enabled[f] != now {
				changed = append(changed, f)
			}
		}
		if len(changed) > 0 {
			slices.Sort(changed)
			logger.Info("Warning: emulation version changed features that were already read", "emulationVersion", emu, "minCompatibilityVersion", minCompat, "changed", changed)
		}
	}
	return nil
}

// MinCompatibilityVersion returns the min compatibility version: the one set with
// SetEmulationVersionAndMinCompatibilityVersion, else one minor before the emulation
// version, nil without emulation.
func (g *Gate) MinCompatibilityVersion() *version.Version {
	return g.load().minCompat
}

// setVersionsOverride is the test override path for versions (see package
// internal/override): it bypasses Freeze, and its restore puts back the versions that were
// in force before.
func (g *Gate) setVersionsOverride(emu, minCompat *version.Version) (func() error, error) {
	prev := g.load()
	prevEmu, prevMin := prev.emulation, prev.minCompat
	if err := g.setVersions(emu, minCompat, true); err != nil {
		return nil, err
	}
	return func() error { return g.setVersions(prevEmu, prevMin, true) }, nil
}
