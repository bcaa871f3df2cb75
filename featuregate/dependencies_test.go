package featuregate_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctrlkit/ctrlkit/featuregate"
)

func dependencyGate(t *testing.T) *featuregate.Gate {
	t.Helper()
	g := featuregate.New(featuregate.WithLogger(discard()))
	require.NoError(t, g.Add(map[featuregate.Feature]featuregate.FeatureSpec{
		"Base":   {PreRelease: featuregate.Beta, Default: true},
		"Child":  {PreRelease: featuregate.Beta, Default: true},
		"Alpha1": {PreRelease: featuregate.Alpha},
		"Alpha2": {PreRelease: featuregate.Alpha},
	}))
	require.NoError(t, g.AddDependencies(map[featuregate.Feature][]featuregate.Feature{
		"Child": {"Base"}, "Alpha2": {"Alpha1", "Base"},
	}))
	return g
}

func TestDependenciesAreEnforcedBySet(t *testing.T) {
	g := dependencyGate(t)
	assert.Equal(t, map[featuregate.Feature][]featuregate.Feature{"Child": {"Base"}, "Alpha2": {"Alpha1", "Base"}}, g.Dependencies())

	err := g.Set("Base=false")
	requireReason(t, err, featuregate.ReasonDependency)
	assert.Equal(t, "Child is enabled, but depends on features that are disabled: [Base]", err.Error())
	var de *featuregate.Error
	require.ErrorAs(t, err, &de)
	assert.Equal(t, featuregate.Feature("Child"), de.Feature)
	assert.Equal(t, []featuregate.Feature{"Base"}, de.Disabled)
	assert.True(t, g.Enabled("Base"), "a refused Set changes nothing")

	require.NoError(t, g.Set("Base=false,Child=false"))
	err = g.Set("Alpha2=true")
	assert.Equal(t, "Alpha2 is enabled, but depends on features that are disabled: [Alpha1 Base]", err.Error())
	require.NoError(t, g.Set("Base=true,Alpha1=true,Alpha2=true"))
	// AllAlpha=false turns off Alpha1 only if it was not set: here it was.
	require.NoError(t, g.Set("AllAlpha=false"))
	assert.True(t, g.Enabled("Alpha2"))
}

func TestDependenciesAreEnforcedForPseudoGatesAndEmulation(t *testing.T) {
	g := dependencyGate(t)
	require.NoError(t, g.Set("Alpha1=true,Alpha2=true"))
	// AllBeta=false would turn Base off under Alpha2.
	err := g.Set("AllBeta=false")
	requireReason(t, err, featuregate.ReasonDependency)
	assert.Equal(t, "Alpha2 is enabled, but depends on features that are disabled: [Base]", err.Error(),
		"Child is beta too, so AllBeta turns it off with Base")
	require.NoError(t, g.Set("AllBeta=false,Base=true"))
}

func TestAddDependenciesRejects(t *testing.T) {
	tests := []struct {
		name  string
		specs map[featuregate.Feature]featuregate.VersionedSpecs
		deps  map[featuregate.Feature][]featuregate.Feature
		msg   string
	}{
		{name: "unknown feature", deps: map[featuregate.Feature][]featuregate.Feature{"Nope": {"A"}},
			msg: "cannot add dependency for unknown feature Nope"},
		{name: "unknown dependency", deps: map[featuregate.Feature][]featuregate.Feature{"A": {"Nope"}},
			msg: "cannot add dependency from A to unknown feature Nope"},
		{name: "beta on alpha", deps: map[featuregate.Feature][]featuregate.Feature{"B": {"A"}},
			msg: "BETA feature B cannot depend on ALPHA feature A at version 0.0"},
		{name: "GA on beta (GA prints as upstream's empty stage)", deps: map[featuregate.Feature][]featuregate.Feature{"G": {"B"}},
			msg: " feature G cannot depend on BETA feature B at version 0.0"},
		{name: "beta on deprecated", deps: map[featuregate.Feature][]featuregate.Feature{"B": {"D"}},
			msg: "BETA feature B cannot depend on DEPRECATED feature D at version 0.0"},
		{name: "default on, dependency off", deps: map[featuregate.Feature][]featuregate.Feature{"AOn": {"A"}},
			msg: "default-enabled feature AOn cannot depend on default-disabled feature A at version 0.0"},
		{name: "locked on unlocked", deps: map[featuregate.Feature][]featuregate.Feature{"GL": {"G"}},
			msg: "locked-to-default feature GL cannot depend on unlocked feature G at version 0.0"},
		{name: "cycle", deps: map[featuregate.Feature][]featuregate.Feature{"A": {"A2"}, "A2": {"A"}},
			msg: "cycle detected with feature A"},
		{name: "checked at every version of the dependent, newest first",
			specs: map[featuregate.Feature]featuregate.VersionedSpecs{
				"V": {{Version: v(1, 30), PreRelease: featuregate.Alpha}, {Version: v(1, 32), PreRelease: featuregate.Beta, Default: true}},
				"W": {{Version: v(1, 30), PreRelease: featuregate.Alpha}, {Version: v(1, 33), PreRelease: featuregate.Beta, Default: true}},
			},
			deps: map[featuregate.Feature][]featuregate.Feature{"V": {"W"}},
			msg:  "BETA feature V cannot depend on ALPHA feature W at version 1.32"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := featuregate.New()
			require.NoError(t, g.Add(map[featuregate.Feature]featuregate.FeatureSpec{
				"A": {PreRelease: featuregate.Alpha}, "A2": {PreRelease: featuregate.Alpha}, "AOn": {PreRelease: featuregate.Alpha, Default: true},
				"B": {PreRelease: featuregate.Beta}, "G": {PreRelease: featuregate.GA, Default: true},
				"GL": {PreRelease: featuregate.GA, Default: true, LockToDefault: true}, "D": {PreRelease: featuregate.Deprecated},
			}))
			if tc.specs != nil {
				require.NoError(t, g.AddVersioned(tc.specs))
			}
			err := g.AddDependencies(tc.deps)
			requireReason(t, err, featuregate.ReasonInvalidDependency)
			assert.Equal(t, tc.msg, err.Error())
			assert.Empty(t, g.Dependencies(), "nothing added")
		})
	}
}

func TestAddDependenciesMergesAndCloses(t *testing.T) {
	g := featuregate.New()
	require.NoError(t, g.Add(map[featuregate.Feature]featuregate.FeatureSpec{
		"A": {PreRelease: featuregate.Alpha}, "B": {PreRelease: featuregate.Alpha}, "C": {PreRelease: featuregate.Alpha},
	}))
	in := map[featuregate.Feature][]featuregate.Feature{"A": {"C", "B", "C"}}
	require.NoError(t, g.AddDependencies(in))
	require.NoError(t, g.AddDependencies(map[featuregate.Feature][]featuregate.Feature{"A": {"B"}, "B": {"C"}}))
	assert.Equal(t, map[featuregate.Feature][]featuregate.Feature{"A": {"B", "C"}, "B": {"C"}}, g.Dependencies())
	assert.Equal(t, []featuregate.Feature{"C", "B", "C"}, in["A"], "the caller's map is not touched")
	// A cycle through earlier dependencies is found too.
	assert.EqualError(t, g.AddDependencies(map[featuregate.Feature][]featuregate.Feature{"C": {"A"}}), "cycle detected with feature A")

	g.Dependencies()["A"][0] = "Z" // a copy
	assert.Equal(t, []featuregate.Feature{"B", "C"}, g.Dependencies()["A"])

	g.AddFlag(pflagSet())
	assert.EqualError(t, g.AddDependencies(map[featuregate.Feature][]featuregate.Feature{"B": {"A"}}),
		"cannot add a feature gate dependency after adding it to the flag set")
	g.Freeze()
	assertReason(t, g.AddDependencies(nil), featuregate.ReasonFrozen)
}
