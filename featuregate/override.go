package featuregate

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/util/version"

	"github.com/ctrlkit/ctrlkit/featuregate/internal/override"
)

func init() {
	override.Set = func(gate any, values map[string]bool, logf func(string, ...any)) (func(), error) {
		g, ok := gate.(*Gate)
		if !ok || g == nil {
			return nil, fmt.Errorf("featuregate override: %T is not a *featuregate.Gate", gate)
		}
		m := make(map[Feature]bool, len(values))
		for f, v := range values {
			m[Feature(f)] = v
		}
		return g.setOverrides(m, logf)
	}
	override.SetVersions = func(gate any, emu, minCompat *version.Version) (func() error, error) {
		g, ok := gate.(*Gate)
		if !ok || g == nil {
			return nil, fmt.Errorf("featuregate override: %T is not a *featuregate.Gate", gate)
		}
		return g.setVersionsOverride(emu, minCompat)
	}
}

// setOverrides is the test override path (see package internal/override). It expands the
// request as component-base's test helper does, then applies it atomically:
//
//   - AllAlpha/AllBeta become an override of every alpha/beta feature at the gate's
//     versions (locked ones excepted), so they win over values set with Set; features
//     named in the same call win over them.
//   - A feature turned off also turns off, transitively, every feature that depends on it,
//     is on, and is not named in the call.
func (g *Gate) setOverrides(values map[Feature]bool, logf func(string, ...any)) (func(), error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	cur := g.current()

	want := map[Feature]bool{}
	allAlpha, hasAlpha := values[AllAlpha]
	allBeta, hasBeta := values[AllBeta]
	if hasAlpha || hasBeta {
		for f := range cur.known {
			spec := cur.specAt(f)
			if isPseudo(f) || spec.LockToDefault {
				continue
			}
			switch {
			case hasAlpha && spec.PreRelease == Alpha:
				want[f] = allAlpha
			case hasBeta && spec.PreRelease == Beta:
				want[f] = allBeta
			}
		}
	}
	maps.Copy(want, values)
	for _, f := range slices.Sorted(maps.Keys(cur.deps)) {
		if _, named := want[f]; named || !cur.enabled[f] {
			continue
		}
		if off, dep := disabledDependency(f, cur.deps, values); off {
			if logf != nil {
				logf("Disabling feature %s since it depends on disabled feature %s", f, dep)
			}
			want[f] = false
		}
	}

	var errs []error
	for _, f := range slices.Sorted(maps.Keys(want)) {
		if err := cur.check(f, want[f]); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	before := cur.overrides
	cur.overrides = maps.Clone(before)
	maps.Copy(cur.overrides, want)
	next := cur.rebuild()
	if errs := next.dependencyErrors(); len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	g.snap.Store(next)

	restore := func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		cur := g.current()
		cur.overrides = maps.Clone(cur.overrides)
		for f := range want {
			if v, had := before[f]; had {
				cur.overrides[f] = v
			} else {
				delete(cur.overrides, f)
			}
		}
		g.snap.Store(cur.rebuild())
	}
	return restore, nil
}

// disabledDependency reports whether f, or a feature f depends on (transitively), is set
// to false in values, and which.
func disabledDependency(f Feature, deps map[Feature][]Feature, values map[Feature]bool) (bool, Feature) {
	if v, set := values[f]; set {
		return !v, f
	}
	for _, d := range deps[f] {
		if off, which := disabledDependency(d, deps, values); off {
			return true, which
		}
	}
	return false, ""
}

// setOverrideValue sets a test override that is not undone by a restore function: the
// override is dropped when v is what f resolves to without it (see ClientGoGates). Unlike
// setOverrides it respects Freeze, because ClientGoGates.SetForTesting is reachable from
// production code.
func (g *Gate) setOverrideValue(f Feature, v bool) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.frozen {
		return fmt.Errorf("cannot set feature gate %s for testing: %w", f, frozen())
	}
	next := g.current()
	if err := next.check(f, v); err != nil {
		return err
	}
	next.overrides = maps.Clone(next.overrides)
	delete(next.overrides, f)
	if next.rebuild().enabled[f] != v {
		next.overrides[f] = v
		next.rebuild()
	}
	if errs := next.dependencyErrors(); len(errs) > 0 {
		return errors.Join(errs...)
	}
	g.snap.Store(next)
	return nil
}
