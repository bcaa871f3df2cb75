package featuregate

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/version"
)

// versionZero is where an unversioned spec starts: it applies at every emulation version.
var versionZero = version.MajorMinor(0, 0)

// preAlphaSpec is what a feature looks like before the first entry of its history.
var preAlphaSpec = FeatureSpec{Default: false, PreRelease: PreAlpha, Version: versionZero}

// checkHistory validates one feature's history and returns a private, completed copy of it
// (an entry without MinCompatibilityVersion inherits the previous entry's, as upstream).
//
// The rules are component-base's, with its error texts, checked in its order: every entry
// has a major.minor version, versions never decrease, an entry at the same version as the
// previous one only adds a MinCompatibilityVersion and a new default, each entry changes
// something, a locked feature never unlocks, deprecation is terminal, stability never
// regresses (alpha < beta < GA) and a history that starts deprecated starts at x.0.
// ctrlkit adds checks upstream lacks: a name --feature-gates can spell, a non-empty history
// and a known stage.
func checkHistory(f Feature, specs VersionedSpecs) (VersionedSpecs, error) {
	if f == "" {
		return nil, invalidSpec(f, "feature %q has an empty name", f)
	}
	// A name that --feature-gates cannot spell could never be set.
	if strings.ContainsAny(string(f), ",=") || strings.TrimSpace(string(f)) != string(f) {
		return nil, invalidSpec(f, "feature %q must not contain ',' or '=' or surrounding spaces", f)
	}
	if len(specs) == 0 {
		return nil, invalidSpec(f, "feature %q has an empty history", f)
	}
	out := make(VersionedSpecs, 0, len(specs))
	var last FeatureSpec
	var wasBeta, wasGA, wasDeprecated, wasLocked bool
	for i, s := range specs {
		if s.Version == nil {
			return nil, invalidSpec(f, "feature %q did not provide a version", f)
		}
		if len(s.Version.Components()) != 2 {
			return nil, invalidSpec(f, "feature %q specified patch version: %s", f, s.Version)
		}
		if s.PreRelease.rank() < 0 {
			if s.PreRelease == PreAlpha {
				return nil, invalidSpec(f, "feature %q cannot register stage %s at %s: it is implied before the first entry", f, PreAlpha, s.Version)
			}
			return nil, invalidSpec(f, "feature %q has unknown stage %q at %s", f, string(s.PreRelease), s.Version)
		}
		if m := s.MinCompatibilityVersion; m != nil {
			switch {
			case i == 0 || !s.Version.EqualTo(last.Version):
				return nil, invalidSpec(f, "feature %q specified MinCompatibilityVersion: %s without a preceding entry at the same Version without MinCompatibilityVersion set", f, m)
			case len(m.Components()) != 2:
				return nil, invalidSpec(f, "feature %q specified patch MinCompatibilityVersion: %s", f, m)
			case m.GreaterThan(s.Version):
				return nil, invalidSpec(f, "feature %q MinCompatibilityVersion %s greater than Version %s", f, m, s.Version)
			}
		}
		if i == 0 && s.PreRelease == Deprecated && s.Version.Minor() != 0 {
			return nil, invalidSpec(f, "feature %q introduced as deprecated must provide a 1.0 entry indicating initial state", f)
		}
		if i > 0 {
			if err := checkTransition(f, last, s, wasBeta, wasGA, wasDeprecated, wasLocked); err != nil {
				return nil, err
			}
		}
		if s.MinCompatibilityVersion == nil && i > 0 {
			s.MinCompatibilityVersion = last.MinCompatibilityVersion
		}
		out = append(out, s)
		last = s
		wasBeta = wasBeta || s.PreRelease == Beta
		wasGA = wasGA || s.PreRelease == GA
		wasDeprecated = wasDeprecated || s.PreRelease == Deprecated
		wasLocked = wasLocked || s.LockToDefault
	}
	return out, nil
}

// checkTransition checks entry s against the completed entry before it, last.
func checkTransition(f Feature, last, s FeatureSpec, wasBeta, wasGA, wasDeprecated, wasLocked bool) error {
	if s.Version.LessThan(last.Version) {
		return invalidSpec(f, "feature %q lists version transitions in decreasing order (%s < %s)", f, s.Version, last.Version)
	}
	if s.MinCompatibilityVersion != nil && last.MinCompatibilityVersion != nil && s.MinCompatibilityVersion.LessThan(last.MinCompatibilityVersion) {
		return invalidSpec(f, "feature %q lists min compatibility version transitions in decreasing order (%s < %s)", f, s.MinCompatibilityVersion, last.MinCompatibilityVersion)
	}
	if s.Version.EqualTo(last.Version) {
		switch {
		case s.MinCompatibilityVersion.EqualTo(last.MinCompatibilityVersion):
			return invalidSpec(f, "feature %q lists duplicate entries with the same versions (%s = %s)", f, s.Version, last.Version)
		case s.PreRelease != last.PreRelease:
			return invalidSpec(f, "feature %q lists stability changes with the same version (%s -> %s)", f, string(last.PreRelease), string(s.PreRelease))
		case s.LockToDefault != last.LockToDefault:
			return invalidSpec(f, "feature %q lists locked to default changes with the same version (%t -> %t)", f, last.LockToDefault, s.LockToDefault)
		}
	}
	switch {
	case s.PreRelease == last.PreRelease && s.Default == last.Default && s.LockToDefault == last.LockToDefault:
		return invalidSpec(f, "feature %q lists transition without stability change (%s -> %s)", f, last.Version, s.Version)
	case wasLocked && !s.LockToDefault:
		return invalidSpec(f, "feature %q must not unlock after locking to default", f)
	case s.PreRelease != Deprecated && wasDeprecated:
		return invalidSpec(f, "deprecated feature %q must not resurrect from its terminal state", f)
	case s.PreRelease == Alpha && (wasBeta || wasGA), s.PreRelease == Beta && wasGA:
		return invalidSpec(f, "feature %q regresses stability from more stable level to %s in %s", f, string(s.PreRelease), s.Version)
	}
	return nil
}

// specAt returns the spec in force at emulation version emu and min compatibility version
// minCompat: the newest entry not after emu whose MinCompatibilityVersion (if any) is not
// after minCompat. A nil minCompat means one minor before emu, as upstream. A nil emu means
// "no emulation": every version qualifies, and so does every MinCompatibilityVersion unless
// minCompat is set. Before the first qualifying entry the feature is PreAlpha.
func specAt(specs VersionedSpecs, emu, minCompat *version.Version) FeatureSpec {
	if i := indexAt(specs, emu, minCompat); i >= 0 {
		return specs[i]
	}
	return preAlphaSpec
}

// indexAt is specAt's index in specs, -1 when the feature is PreAlpha there.
func indexAt(specs VersionedSpecs, emu, minCompat *version.Version) int {
	if minCompat == nil && emu != nil {
		minCompat = emu.SubtractMinor(1)
	}
	for i := len(specs) - 1; i >= 0; i-- {
		s := specs[i]
		if emu != nil && s.Version.GreaterThan(emu) {
			continue
		}
		if s.MinCompatibilityVersion != nil && minCompat != nil && !minCompat.AtLeast(s.MinCompatibilityVersion) {
			continue
		}
		return i
	}
	return -1
}

// sameHistory compares histories by value (versions by EqualTo: "1.30" equals
// MajorMinor(1, 30) although their structs differ).
func sameHistory(a, b VersionedSpecs) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.Default != y.Default || x.LockToDefault != y.LockToDefault || x.PreRelease != y.PreRelease ||
			!x.Version.EqualTo(y.Version) || !x.MinCompatibilityVersion.EqualTo(y.MinCompatibilityVersion) {
			return false
		}
	}
	return true
}

// formatHistory prints a history the way upstream's conflict error prints its own with
// %v: "[{false false ALPHA 1.30 <nil>}]" (GA is the empty stage there).
func formatHistory(specs VersionedSpecs) string {
	parts := make([]string, len(specs))
	for i, s := range specs {
		parts[i] = fmt.Sprintf("{%t %t %s %s %s}", s.Default, s.LockToDefault, string(s.PreRelease),
			versionString(s.Version), versionString(s.MinCompatibilityVersion))
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// versionString is v.String(), "<nil>" for nil as fmt prints it.
func versionString(v *version.Version) string {
	if v == nil {
		return "<nil>"
	}
	return v.String()
}
