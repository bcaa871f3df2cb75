// Package override is the private channel between featuregate and featuregatetesting.
//
// Tests must be able to switch a feature even on a gate that was already read or frozen
// (production code cannot, by design). Rather than exporting such a method on
// featuregate.Gate for everyone, featuregate installs Set here at init and only packages
// under featuregate/ can reach it.
package override

import "k8s.io/apimachinery/pkg/util/version"

// Set overrides features on gate (a *featuregate.Gate) with values, all at once,
// bypassing Freeze and the read check but not validation (unknown, locked and PreAlpha
// features and broken dependencies are refused). AllAlpha/AllBeta override every alpha/beta
// feature the same call does not name; turning a feature off also turns off the features
// that depend on it, reporting each through logf. The returned restore puts back exactly
// the override state that was there before.
//
// It is typed loosely because this package cannot import featuregate (which imports it);
// featuregate checks the gate's type.
var Set func(gate any, values map[string]bool, logf func(format string, args ...any)) (restore func(), err error)

// SetVersions sets the emulation and min compatibility versions of gate (a
// *featuregate.Gate), bypassing Freeze but not validation (values set must stay valid).
// A nil minCompat means one minor before emu. The returned restore puts back the versions
// in force before, and fails if values set meanwhile are invalid there.
var SetVersions func(gate any, emu, minCompat *version.Version) (restore func() error, err error)
