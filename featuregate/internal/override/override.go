// Package override is the private channel between featuregate and featuregatetesting.
//
// Tests must be able to switch a feature even on a gate that was already read or frozen
// (production code cannot, by design). Rather than exporting such a method on
// featuregate.Gate for everyone, featuregate installs Set here at init and only packages
// under featuregate/ can reach it.
package override

// Set overrides feature on gate (a *featuregate.Gate) with value, bypassing Freeze and the
// read check but not validation (unknown, locked and PreAlpha features are refused). The
// returned restore puts back exactly the override state that was there before.
//
// It is typed loosely because this package cannot import featuregate (which imports it);
// featuregate checks the gate's type.
var Set func(gate any, feature string, value bool) (restore func(), err error)
