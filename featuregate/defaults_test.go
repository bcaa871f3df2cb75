package featuregate_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctrlkit/ctrlkit/featuregate"
)

func TestOverrideDefault(t *testing.T) {
	g := newTestGate(t, featuregate.WithLogger(discard()), featuregate.WithEmulationVersion(v(1, 32)))
	require.NoError(t, g.OverrideDefault(alphaOff, true))
	require.NoError(t, g.OverrideDefault(betaOn, false))
	require.NoError(t, g.OverrideDefault(gaOpen, false), "GA works, with a warning")
	// The 1.32 entry of LaterFeature (beta, on) changes; the 1.30 one (alpha) does not.
	require.NoError(t, g.OverrideDefault(laterFeature, false))
	assert.Contains(t, g.KnownFeatures(), "AlphaOff=true|false (ALPHA - default=true)")
	assert.Contains(t, g.KnownFeatures(), "LaterFeature=true|false (BETA - default=false)")

	// An explicit value still wins over the new default.
	require.NoError(t, g.Set("BetaOn=true"))
	assert.True(t, g.Enabled(betaOn))
	assert.True(t, g.Enabled(alphaOff))
	assert.False(t, g.Enabled(gaOpen))
	assert.False(t, g.Enabled(laterFeature))

	// At 1.30 LaterFeature is alpha with its registered default.
	require.NoError(t, g.SetEmulationVersion(v(1, 30)))
	assert.False(t, g.Enabled(laterFeature))
	require.NoError(t, g.OverrideDefaultAtVersion(laterFeature, true, v(1, 31)))
	assert.True(t, g.Enabled(laterFeature), "the 1.30 entry is in force at 1.31")
}

func TestOverrideDefaultErrors(t *testing.T) {
	g := newTestGate(t, featuregate.WithLogger(discard()), featuregate.WithEmulationVersion(v(1, 29)))
	for _, tc := range []struct {
		err    error
		reason featuregate.Reason
		msg    string
	}{
		{err: g.OverrideDefault("Nope", true), reason: featuregate.ReasonUnknownFeature,
			msg: `cannot override default: feature "Nope" is not registered`},
		{err: g.OverrideDefault(gaLocked, false), reason: featuregate.ReasonLocked,
			msg: `cannot override default: feature "GALocked" default is locked to true`},
		{err: g.OverrideDefault(laterFeature, true), reason: featuregate.ReasonPreAlpha,
			msg: `cannot override default: feature "LaterFeature" is not available before version 1.29`},
		{err: g.OverrideDefaultAtVersion(laterFeature, false, v(1, 35)), reason: featuregate.ReasonLocked,
			msg: `cannot override default: feature "LaterFeature" default is locked to true`},
	} {
		requireReason(t, tc.err, tc.reason)
		assert.EqualError(t, tc.err, tc.msg)
	}
	g.AddFlag(pflagSet())
	err := g.OverrideDefault(alphaOff, true)
	requireReason(t, err, featuregate.ReasonFlagRegistered)
	assert.EqualError(t, err, `cannot override default for feature "AlphaOff": gates already added to a flag set`)
	g.Freeze()
	assertReason(t, g.OverrideDefault(alphaOff, true), featuregate.ReasonFrozen)
	assert.False(t, g.Enabled(alphaOff))
}

// As upstream, OverrideDefault does not check dependencies; the next Set does.
func TestOverrideDefaultLeavesDependenciesToTheNextSet(t *testing.T) {
	g := featuregate.New()
	require.NoError(t, g.Add(map[featuregate.Feature]featuregate.FeatureSpec{
		"Base": {PreRelease: featuregate.Beta, Default: true}, "Child": {PreRelease: featuregate.Beta, Default: true},
	}))
	require.NoError(t, g.AddDependencies(map[featuregate.Feature][]featuregate.Feature{"Child": {"Base"}}))
	require.NoError(t, g.OverrideDefault("Base", false))
	assert.EqualError(t, g.Set(""), "Child is enabled, but depends on features that are disabled: [Base]")
	require.NoError(t, g.Set("Child=false"))
}
