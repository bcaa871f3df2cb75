// Package featuregatetesting switches feature gates for the duration of a test.
//
// Production code cannot change a gate once it is frozen, and cannot register features
// once the gate was read. Tests need to flip features anyway, on the very gate the code
// under test reads, so this package uses an override path that package featuregate keeps
// private to its own subtree: overrides bypass Freeze and the read check (not validation)
// and are undone in t.Cleanup.
//
//	func TestNewBehaviour(t *testing.T) {
//		featuregatetesting.SetDuringTest(t, features.Gate, features.NewBehaviour, true)
//		// ... code reading features.Gate.Enabled(features.NewBehaviour) sees true ...
//	}
//
// As with component-base's SetFeatureGatesDuringTest, an AllAlpha/AllBeta override
// switches every (unlocked) alpha/beta feature, winning over values set with Set; features
// named in the same call win over it; and a feature turned off takes the features that
// depend on it (see featuregate.Gate.AddDependencies) down with it, logged with t.Logf.
//
// SetEmulationVersionDuringTest and SetVersionsDuringTest do the same for the emulation
// and min compatibility versions (component-base's SetFeatureGateEmulationVersionDuringTest
// and SetFeatureGateVersionsDuringTest).
//
// Overrides are process-wide state on the gate: tests that run in parallel must not
// override the same feature of the same gate (the second one fails).
package featuregatetesting
