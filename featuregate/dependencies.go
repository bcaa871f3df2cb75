package featuregate

import (
	"errors"
	"maps"
	"slices"
)

// AddDependencies declares that each feature (key) needs the features it maps to: the gate
// refuses any state in which a feature is on while one it depends on is off. Set,
// SetFromMap, SetEmulationVersion and test overrides that would reach such a state fail
// with ErrInvalidValue, an *Error of ReasonDependency ("A is enabled, but depends on features that are disabled: [B]")
// and change nothing. Dependencies add to those declared earlier.
//
// Every feature named must be registered first, and the declaration must hold at every
// version of the dependent feature's history, with component-base's rules and texts: a
// feature cannot depend on a less stable one (alpha may depend on PreAlpha, nothing but
// deprecated on deprecated), a default-on feature cannot depend on a default-off one, a
// locked one cannot depend on an unlocked one, and there are no cycles; else
// ErrInvalidSpec (ReasonInvalidDependency) and nothing is added.
//
// Like Add, it is registration: it fails once the gate was read, its flag registered or
// it was frozen.
func (g *Gate) AddDependencies(dependencies map[Feature][]Feature) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.registrationClosed("feature gate dependencies", "cannot add a feature gate dependency after adding it to the flag set"); err != nil {
		return err
	}
	cur := g.current()
	merged := make(map[Feature][]Feature, len(cur.deps)+len(dependencies))
	for f, deps := range cur.deps {
		merged[f] = slices.Clone(deps)
	}
	for f, deps := range dependencies {
		merged[f] = append(merged[f], deps...)
	}
	for f, deps := range merged {
		slices.Sort(deps)
		merged[f] = slices.Compact(deps)
	}
	var errs []error
	for _, f := range slices.Sorted(maps.Keys(merged)) {
		errs = append(errs, checkDependencies(cur.known, f, merged[f])...)
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if err := findCycle(merged); err != nil {
		return err
	}
	cur.deps = merged
	g.snap.Store(cur.rebuild())
	return nil
}

// checkDependencies checks feature f's dependencies against every entry of f's history,
// newest first, reporting the first broken rule for each dependency.
func checkDependencies(known map[Feature]VersionedSpecs, f Feature, deps []Feature) []error {
	history, ok := known[f]
	if !ok {
		return []error{newError(ReasonInvalidDependency, f, "cannot add dependency for unknown feature %s", f)}
	}
	var errs []error
	for _, dep := range deps {
		depHistory, ok := known[dep]
		if !ok {
			errs = append(errs, newError(ReasonInvalidDependency, f, "cannot add dependency from %s to unknown feature %s", f, dep))
			continue
		}
		for _, spec := range slices.Backward(history) {
			// The dependency's spec in force where this entry of f starts.
			d := specAt(depHistory, spec.Version, spec.MinCompatibilityVersion)
			var err error
			switch {
			case stabilityOrder(spec.PreRelease) > stabilityOrder(d.PreRelease):
				err = newError(ReasonInvalidDependency, f, "%s feature %s cannot depend on %s feature %s at version %s",
					string(spec.PreRelease), f, string(d.PreRelease), dep, spec.Version)
			case spec.Default && !d.Default:
				err = newError(ReasonInvalidDependency, f, "default-enabled feature %s cannot depend on default-disabled feature %s at version %s", f, dep, spec.Version)
			case spec.LockToDefault && !d.LockToDefault:
				err = newError(ReasonInvalidDependency, f, "locked-to-default feature %s cannot depend on unlocked feature %s at version %s", f, dep, spec.Version)
			}
			if err != nil {
				errs = append(errs, err)
				break
			}
		}
	}
	return errs
}

// stabilityOrder ranks stages for dependencies: a feature cannot depend on a lower one.
// Alpha may depend on PreAlpha; only deprecated features may depend on deprecated ones.
func stabilityOrder(s Stage) int {
	switch s {
	case Deprecated:
		return 0
	case PreAlpha, Alpha:
		return 1
	case Beta:
		return 2
	case GA:
		return 3
	default:
		return -1
	}
}

// findCycle walks the dependency graph depth first, features in name order, and names the
// feature at which it first comes back to a feature on the current path.
func findCycle(deps map[Feature][]Feature) error {
	visited, finished := map[Feature]bool{}, map[Feature]bool{}
	var visit func(Feature) error
	visit = func(f Feature) error {
		if finished[f] {
			return nil
		}
		if visited[f] {
			return newError(ReasonInvalidDependency, f, "cycle detected with feature %s", f)
		}
		visited[f] = true
		for _, d := range deps[f] {
			if err := visit(d); err != nil {
				return err
			}
		}
		finished[f] = true
		return nil
	}
	for _, f := range slices.Sorted(maps.Keys(deps)) {
		if err := visit(f); err != nil {
			return err
		}
	}
	return nil
}

// Dependencies returns a copy of the declared dependencies (see AddDependencies): each
// feature mapped to the features it depends on, sorted.
func (g *Gate) Dependencies() map[Feature][]Feature {
	deps := g.load().deps
	out := make(map[Feature][]Feature, len(deps))
	for f, d := range deps {
		out[f] = slices.Clone(d)
	}
	return out
}

// dependencyErrors reports every feature that is on while a dependency is off, in name
// order.
func (s *snapshot) dependencyErrors() []error {
	var errs []error
	for _, f := range slices.Sorted(maps.Keys(s.deps)) {
		if !s.enabled[f] {
			continue
		}
		var off []Feature
		for _, d := range s.deps[f] {
			if !s.enabled[d] {
				off = append(off, d)
			}
		}
		if len(off) > 0 {
			errs = append(errs, dependency(f, off))
		}
	}
	return errs
}
