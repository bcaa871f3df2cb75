package featuregate

import (
	"errors"
	"fmt"
	"maps"
	"slices"
)

// Add registers unversioned features: each spec applies from version 0.0 on (or from its
// Version, when set). Re-adding a feature with the same spec is a no-op; with a different
// one it is an ErrInvalidSpec (ReasonConflictingSpec). All or nothing: on error no feature is added.
func (g *Gate) Add(features map[Feature]FeatureSpec) error {
	vs := make(map[Feature]VersionedSpecs, len(features))
	for f, s := range features {
		if s.Version == nil {
			s.Version = versionZero
		}
		vs[f] = VersionedSpecs{s}
	}
	return g.AddVersioned(vs)
}

// AddVersioned registers features with their histories (oldest first). A history must be
// consistent: every entry has a major.minor Version, versions strictly increase, each entry
// changes the stage, default or lock, stability never regresses (alpha < beta < GA;
// deprecated is terminal), a locked feature never unlocks; else ErrInvalidSpec
// (ReasonInvalidSpec). Re-adding an identical history is a no-op, a different one
// ErrInvalidSpec (ReasonConflictingSpec).
//
// Registration closes, with ErrClosed, when the gate is first read (ReasonAlreadyRead), when
// its flag is registered (ReasonFlagRegistered; the help text was captured) or when it is
// frozen (ReasonFrozen). All or nothing: on error no feature is added.
func (g *Gate) AddVersioned(features map[Feature]VersionedSpecs) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	names := slices.Sorted(maps.Keys(features))
	if err := g.registrationClosed(fmt.Sprintf("feature gates %v", names), "cannot add a feature gate after adding it to the flag set"); err != nil {
		return err
	}
	cur := g.current()
	known := maps.Clone(cur.known)
	var errs []error
	for _, f := range names {
		specs, err := checkHistory(f, features[f])
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if old, ok := known[f]; ok {
			if !sameHistory(old, specs) {
				errs = append(errs, newError(ReasonConflictingSpec, f, "feature gate %q with different spec already exists: %s", f, formatHistory(old)))
			}
			continue
		}
		known[f] = specs
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	cur.known = known
	g.snap.Store(cur.rebuild())
	return nil
}

// registrationClosed says why registration is closed, nil if it is open. refused names what
// was refused ("feature gates [A B]"); flagMsg is upstream's whole text for the flag case,
// the one closure reason upstream has.
func (g *Gate) registrationClosed(refused, flagMsg string) error {
	switch {
	case g.frozen:
		return fmt.Errorf("cannot add %s: %w", refused, frozen())
	case g.flagRegistered:
		return newError(ReasonFlagRegistered, "", "%s", flagMsg)
	case g.read.Load():
		return fmt.Errorf("cannot add %s: %w", refused, newError(ReasonAlreadyRead, "", "feature gate was already read"))
	}
	return nil
}

// Freeze makes the gate read-only: from now on Add, AddVersioned, AddDependencies, Set,
// SetFromMap, OverrideDefault, the version setters and ClientGoGates.SetForTesting fail
// with ErrClosed (ReasonFrozen). Call it once flags are parsed so nothing at run time can flip a gate.
// (featuregatetesting can still override features in tests.)
func (g *Gate) Freeze() {
	g.mu.Lock()
	g.frozen = true
	g.mu.Unlock()
}
