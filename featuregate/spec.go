package featuregate

import (
	"strings"

	"k8s.io/apimachinery/pkg/util/version"
)

// versionZero is where an unversioned spec starts: it applies at every emulation version.
var versionZero = version.MajorMinor(0, 0)

// preAlphaSpec is what a feature looks like before the first entry of its history.
var preAlphaSpec = FeatureSpec{Default: false, PreRelease: PreAlpha, Version: versionZero}

// checkHistory validates one feature's history and returns a private copy of it.
//
// The rules keep a history meaningful: every entry has a major.minor version, versions
// strictly increase, each entry changes something (stage, default or lock), stability never
// regresses (alpha < beta < GA; deprecated is terminal) and a locked feature never unlocks.
func checkHistory(f Feature, specs VersionedSpecs) (VersionedSpecs, error) {
	if f == "" {
		return nil, invalidSpec(f, "empty feature name")
	}
	// A name that --feature-gates cannot spell could never be set.
	if strings.ContainsAny(string(f), ",=") || strings.TrimSpace(string(f)) != string(f) {
		return nil, invalidSpec(f, "name %q must not contain ',' or '=' or surrounding spaces", string(f))
	}
	if len(specs) == 0 {
		return nil, invalidSpec(f, "empty history")
	}
	out := make(VersionedSpecs, len(specs))
	copy(out, specs)
	for i, s := range out {
		if s.Version == nil {
			return nil, invalidSpec(f, "spec %d has no version", i)
		}
		if n := len(s.Version.Components()); n != 2 {
			return nil, invalidSpec(f, "spec %d version %s must be major.minor", i, s.Version)
		}
		if s.PreRelease.rank() < 0 {
			if s.PreRelease == PreAlpha {
				return nil, invalidSpec(f, "spec %d: %s cannot be registered, it is implied before the first spec", i, PreAlpha)
			}
			return nil, invalidSpec(f, "spec %d has unknown stage %q", i, string(s.PreRelease))
		}
		if i == 0 {
			continue
		}
		prev := out[i-1]
		switch {
		case !s.Version.GreaterThan(prev.Version):
			return nil, invalidSpec(f, "versions must increase (%s after %s)", s.Version, prev.Version)
		case s.PreRelease == prev.PreRelease && s.Default == prev.Default && s.LockToDefault == prev.LockToDefault:
			return nil, invalidSpec(f, "spec at %s changes nothing from %s", s.Version, prev.Version)
		case prev.LockToDefault && !s.LockToDefault:
			return nil, invalidSpec(f, "unlocked at %s after being locked to its default", s.Version)
		case prev.PreRelease == Deprecated && s.PreRelease != Deprecated:
			return nil, invalidSpec(f, "leaves %s at %s; deprecation is terminal", Deprecated, s.Version)
		case s.PreRelease != Deprecated && s.PreRelease.rank() < prev.PreRelease.rank():
			return nil, invalidSpec(f, "regresses from %s to %s at %s", prev.PreRelease, s.PreRelease, s.Version)
		}
	}
	return out, nil
}

// specAt returns the spec in force at emulation version v: the newest entry not after v.
// A nil v means "no emulation": the newest entry. Before the first entry the feature is
// PreAlpha.
func specAt(specs VersionedSpecs, v *version.Version) FeatureSpec {
	if v == nil {
		return specs[len(specs)-1]
	}
	for i := len(specs) - 1; i >= 0; i-- {
		if !specs[i].Version.GreaterThan(v) {
			return specs[i]
		}
	}
	return preAlphaSpec
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
			!x.Version.EqualTo(y.Version) {
			return false
		}
	}
	return true
}
