package featuregate_test

import (
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/version"

	"github.com/ctrlkit/ctrlkit/featuregate"
)

func v(major, minor uint) *version.Version { return version.MajorMinor(major, minor) }

func TestAddVersionedRejectsBadHistories(t *testing.T) {
	a, b, ga, dep := featuregate.Alpha, featuregate.Beta, featuregate.GA, featuregate.Deprecated
	tests := []struct {
		name    string
		feature featuregate.Feature
		specs   featuregate.VersionedSpecs
		msg     string
	}{
		{name: "empty history", feature: "F", specs: nil,
			msg: `feature "F" has an empty history`},
		{name: "no version", feature: "F", specs: featuregate.VersionedSpecs{{PreRelease: a}},
			msg: `feature "F" did not provide a version`},
		{name: "patch version", feature: "F", specs: featuregate.VersionedSpecs{{PreRelease: a, Version: version.MustParse("1.30.1")}},
			msg: `feature "F" specified patch version: 1.30.1`},
		{name: "unknown stage", feature: "F", specs: featuregate.VersionedSpecs{{PreRelease: "GAMMA", Version: v(1, 30)}},
			msg: `feature "F" has unknown stage "GAMMA" at 1.30`},
		{name: "pre-alpha registered", feature: "F", specs: featuregate.VersionedSpecs{{PreRelease: featuregate.PreAlpha, Version: v(1, 30)}},
			msg: `feature "F" cannot register stage PRE-ALPHA at 1.30: it is implied before the first entry`},
		{name: "decreasing versions", feature: "F", specs: featuregate.VersionedSpecs{
			{PreRelease: a, Version: v(1, 32)}, {PreRelease: b, Version: v(1, 30)}},
			msg: `feature "F" lists version transitions in decreasing order (1.30 < 1.32)`},
		{name: "duplicate version", feature: "F", specs: featuregate.VersionedSpecs{
			{PreRelease: a, Version: v(1, 30)}, {PreRelease: b, Version: v(1, 30)}},
			msg: `feature "F" lists duplicate entries with the same versions (1.30 = 1.30)`},
		{name: "transition changing nothing", feature: "F", specs: featuregate.VersionedSpecs{
			{PreRelease: b, Version: v(1, 30)}, {PreRelease: b, Version: v(1, 31)}},
			msg: `feature "F" lists transition without stability change (1.30 -> 1.31)`},
		{name: "beta back to alpha", feature: "F", specs: featuregate.VersionedSpecs{
			{PreRelease: b, Version: v(1, 30)}, {PreRelease: a, Version: v(1, 31)}},
			msg: `feature "F" regresses stability from more stable level to ALPHA in 1.31`},
		{name: "GA back to beta", feature: "F", specs: featuregate.VersionedSpecs{
			{PreRelease: ga, Default: true, Version: v(1, 30)}, {PreRelease: b, Default: true, Version: v(1, 31)}},
			msg: `feature "F" regresses stability from more stable level to BETA in 1.31`},
		{name: "resurrected from deprecated", feature: "F", specs: featuregate.VersionedSpecs{
			{PreRelease: ga, Version: v(1, 0)}, {PreRelease: dep, Version: v(1, 30)}, {PreRelease: ga, Version: v(1, 31)}},
			msg: `deprecated feature "F" must not resurrect from its terminal state`},
		{name: "introduced as deprecated", feature: "D", specs: featuregate.VersionedSpecs{{PreRelease: dep, Version: v(1, 29)}},
			msg: `feature "D" introduced as deprecated must provide a 1.0 entry indicating initial state`},
		{name: "same version, other stage", feature: "F", specs: featuregate.VersionedSpecs{
			{PreRelease: a, Version: v(1, 30)}, {PreRelease: b, Default: true, Version: v(1, 30), MinCompatibilityVersion: v(1, 30)}},
			msg: `feature "F" lists stability changes with the same version (ALPHA -> BETA)`},
		{name: "same version, other lock", feature: "F", specs: featuregate.VersionedSpecs{
			{PreRelease: b, Version: v(1, 30)}, {PreRelease: b, LockToDefault: true, Version: v(1, 30), MinCompatibilityVersion: v(1, 30)}},
			msg: `feature "F" lists locked to default changes with the same version (false -> true)`},
		{name: "min compatibility on the first entry", feature: "F", specs: featuregate.VersionedSpecs{
			{PreRelease: b, Version: v(1, 30), MinCompatibilityVersion: v(1, 30)}},
			msg: `feature "F" specified MinCompatibilityVersion: 1.30 without a preceding entry at the same Version without MinCompatibilityVersion set`},
		{name: "min compatibility after version", feature: "F", specs: featuregate.VersionedSpecs{
			{PreRelease: b, Version: v(1, 30)}, {PreRelease: b, Default: true, Version: v(1, 30), MinCompatibilityVersion: v(1, 31)}},
			msg: `feature "F" MinCompatibilityVersion 1.31 greater than Version 1.30`},
		{name: "min compatibility with a patch", feature: "F", specs: featuregate.VersionedSpecs{
			{PreRelease: b, Version: v(1, 30)}, {PreRelease: b, Default: true, Version: v(1, 30), MinCompatibilityVersion: version.MustParse("1.29.1")}},
			msg: `feature "F" specified patch MinCompatibilityVersion: 1.29.1`},
		{name: "min compatibility decreasing", feature: "F", specs: featuregate.VersionedSpecs{
			{PreRelease: b, Version: v(1, 30)}, {PreRelease: b, Default: true, Version: v(1, 30), MinCompatibilityVersion: v(1, 30)},
			{PreRelease: ga, Default: true, Version: v(1, 31)}, {PreRelease: ga, Default: true, LockToDefault: true, Version: v(1, 31), MinCompatibilityVersion: v(1, 29)}},
			msg: `feature "F" lists min compatibility version transitions in decreasing order (1.29 < 1.30)`},
		{name: "unlocked after locking", feature: "F", specs: featuregate.VersionedSpecs{
			{PreRelease: ga, Default: true, LockToDefault: true, Version: v(1, 30)}, {PreRelease: dep, Default: true, Version: v(1, 31)}},
			msg: `feature "F" must not unlock after locking to default`},
		{name: "name with a comma", feature: "A,B", specs: featuregate.VersionedSpecs{{PreRelease: a, Version: v(1, 30)}},
			msg: `feature "A,B" must not contain ',' or '=' or surrounding spaces`},
		{name: "name with spaces", feature: " A", specs: featuregate.VersionedSpecs{{PreRelease: a, Version: v(1, 30)}},
			msg: `feature " A" must not contain ',' or '=' or surrounding spaces`},
		{name: "empty name", feature: "", specs: featuregate.VersionedSpecs{{PreRelease: a, Version: v(1, 30)}},
			msg: `feature "" has an empty name`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := featuregate.New()
			err := g.AddVersioned(map[featuregate.Feature]featuregate.VersionedSpecs{tc.feature: tc.specs})
			require.Error(t, err)
			assert.Equal(t, tc.msg, err.Error())
			assertReason(t, err, featuregate.ReasonInvalidSpec)
			var se *featuregate.Error
			require.ErrorAs(t, err, &se)
			assert.Equal(t, tc.feature, se.Feature)
		})
	}
}

func TestAddVersionedAcceptsConsistentHistories(t *testing.T) {
	g := featuregate.New()
	require.NoError(t, g.AddVersioned(map[featuregate.Feature]featuregate.VersionedSpecs{
		"Later": laterHistory,
		// Same stage, the default flips: a real Kubernetes pattern (WatchListClient).
		"DefaultFlip": {
			{Version: v(1, 30), PreRelease: featuregate.Beta},
			{Version: v(1, 35), PreRelease: featuregate.Beta, Default: true},
		},
		// Alpha straight to deprecated, then locked.
		"Dropped": {
			{Version: v(1, 0), PreRelease: featuregate.Alpha},
			{Version: v(1, 20), PreRelease: featuregate.Deprecated},
			{Version: v(1, 22), PreRelease: featuregate.Deprecated, LockToDefault: true},
		},
		// Parsed versions compare by value with MajorMinor ones.
		"Parsed": {{Version: version.MustParse("1.31"), PreRelease: featuregate.Alpha}},
	}))
	// Re-adding the same histories is a no-op, even spelled with other *Version values.
	require.NoError(t, g.AddVersioned(map[featuregate.Feature]featuregate.VersionedSpecs{
		"Parsed": {{Version: v(1, 31), PreRelease: featuregate.Alpha}},
		"Later":  append(featuregate.VersionedSpecs(nil), laterHistory...),
	}))
	assert.True(t, g.Enabled("DefaultFlip"))
	assert.False(t, g.Enabled("Dropped"))
}

func TestAddConflicts(t *testing.T) {
	g := featuregate.New()
	require.NoError(t, g.Add(map[featuregate.Feature]featuregate.FeatureSpec{"A": {PreRelease: featuregate.Beta, Default: true}}))
	// Identical: fine, nil Version and an explicit 0.0 are the same.
	require.NoError(t, g.Add(map[featuregate.Feature]featuregate.FeatureSpec{"A": {PreRelease: featuregate.Beta, Default: true, Version: v(0, 0)}}))

	for name, spec := range map[string]featuregate.FeatureSpec{
		"other default": {PreRelease: featuregate.Beta, Default: false},
		"other stage":   {PreRelease: featuregate.GA, Default: true},
		"locked":        {PreRelease: featuregate.Beta, Default: true, LockToDefault: true},
		"other version": {PreRelease: featuregate.Beta, Default: true, Version: v(1, 2)},
	} {
		err := g.Add(map[featuregate.Feature]featuregate.FeatureSpec{"A": spec})
		assertReason(t, err, featuregate.ReasonConflictingSpec, name)
	}
	// A history differing from the registered one conflicts as well.
	err := g.AddVersioned(map[featuregate.Feature]featuregate.VersionedSpecs{"A": {
		{Version: v(0, 0), PreRelease: featuregate.Beta, Default: true},
		{Version: v(1, 40), PreRelease: featuregate.GA, Default: true},
	}})
	assertReason(t, err, featuregate.ReasonConflictingSpec)
	// The pseudo gates are registered and can only be re-added as they are.
	assert.NoError(t, g.Add(map[featuregate.Feature]featuregate.FeatureSpec{featuregate.AllAlpha: {PreRelease: featuregate.Alpha}}))
	assertReason(t, g.Add(map[featuregate.Feature]featuregate.FeatureSpec{featuregate.AllBeta: {PreRelease: featuregate.Beta, Default: true}}),
		featuregate.ReasonConflictingSpec)
}

func TestAddIsAllOrNothing(t *testing.T) {
	g := featuregate.New()
	err := g.AddVersioned(map[featuregate.Feature]featuregate.VersionedSpecs{
		"Good": {{Version: v(1, 30), PreRelease: featuregate.Alpha}},
		"Bad":  {{PreRelease: featuregate.Alpha}},
	})
	requireReason(t, err, featuregate.ReasonInvalidSpec)
	assertReason(t, g.Set("Good=true"), featuregate.ReasonUnknownFeature, "nothing of a failed Add is registered")
	assert.Equal(t, []string{"AllAlpha=true|false (ALPHA - default=false)", "AllBeta=true|false (BETA - default=false)"}, g.KnownFeatures())
}

func TestRegistrationCloses(t *testing.T) {
	more := map[featuregate.Feature]featuregate.FeatureSpec{"More": {PreRelease: featuregate.Alpha}}
	tests := []struct {
		name  string
		close func(*featuregate.Gate)
		want  featuregate.Reason
		msg   string
	}{
		{name: "after a read", close: func(g *featuregate.Gate) { g.Enabled(alphaOff) },
			want: featuregate.ReasonAlreadyRead, msg: "cannot add feature gates [More]: feature gate was already read"},
		{name: "after a read of an unknown feature", close: func(g *featuregate.Gate) { g.Enabled("Typo") },
			want: featuregate.ReasonAlreadyRead},
		{name: "after AddFlag", close: func(g *featuregate.Gate) { g.AddFlag(pflag.NewFlagSet("x", pflag.ContinueOnError)) },
			want: featuregate.ReasonFlagRegistered, msg: "cannot add a feature gate after adding it to the flag set"},
		{name: "after Freeze", close: func(g *featuregate.Gate) { g.Freeze() },
			want: featuregate.ReasonFrozen, msg: "cannot add feature gates [More]: feature gate is frozen"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// The unknown-feature case is reported; keep test output clean.
			g := newTestGate(t, featuregate.WithLogger(discard()))
			tc.close(g)
			err := g.Add(more)
			requireReason(t, err, tc.want)
			if tc.msg != "" {
				assert.Equal(t, tc.msg, err.Error())
			}
			assertReason(t, g.AddVersioned(map[featuregate.Feature]featuregate.VersionedSpecs{"More": {{Version: v(1, 1)}}}), tc.want)
		})
	}
	t.Run("Set still works after a read", func(t *testing.T) {
		g := newTestGate(t)
		assert.False(t, g.Enabled(alphaOff))
		require.NoError(t, g.Set("AlphaOff=true"))
		assert.True(t, g.Enabled(alphaOff))
	})
}

func TestVersionedResolution(t *testing.T) {
	// LaterFeature: alpha off at 1.30, beta on at 1.32, GA locked at 1.34.
	tests := []struct {
		emulation *version.Version
		enabled   bool
		help      string             // its KnownFeatures line, "" when hidden
		settable  featuregate.Reason // why Set("LaterFeature=<!default>") fails, "" when it works
	}{
		{emulation: v(1, 29), enabled: false, help: "", settable: featuregate.ReasonPreAlpha},
		{emulation: v(1, 30), enabled: false, help: "LaterFeature=true|false (ALPHA - default=false)"},
		{emulation: v(1, 31), enabled: false, help: "LaterFeature=true|false (ALPHA - default=false)"},
		{emulation: version.MustParse("1.31.9"), enabled: false, help: "LaterFeature=true|false (ALPHA - default=false)"},
		{emulation: v(1, 32), enabled: true, help: "LaterFeature=true|false (BETA - default=true)"},
		{emulation: version.MustParse("1.32.0"), enabled: true, help: "LaterFeature=true|false (BETA - default=true)"},
		{emulation: v(1, 33), enabled: true, help: "LaterFeature=true|false (BETA - default=true)"},
		{emulation: v(1, 34), enabled: true, help: "", settable: featuregate.ReasonLocked},
		{emulation: v(2, 0), enabled: true, help: "", settable: featuregate.ReasonLocked},
		{emulation: nil, enabled: true, help: "", settable: featuregate.ReasonLocked},
	}
	for _, tc := range tests {
		t.Run(tc.emulation.String(), func(t *testing.T) {
			check := func(t *testing.T, g *featuregate.Gate) {
				assert.Equal(t, tc.enabled, g.Enabled(laterFeature))
				var line string
				for _, l := range g.KnownFeatures() {
					if len(l) > len(laterFeature) && l[:len(laterFeature)] == string(laterFeature) {
						line = l
					}
				}
				assert.Equal(t, tc.help, line)
				err := g.SetFromMap(map[string]bool{string(laterFeature): !tc.enabled})
				if tc.settable == "" {
					require.NoError(t, err)
					assert.Equal(t, !tc.enabled, g.Enabled(laterFeature))
				} else {
					assertReason(t, err, tc.settable)
					assert.Equal(t, tc.enabled, g.Enabled(laterFeature))
				}
			}
			t.Run("option", func(t *testing.T) {
				g := newTestGate(t, featuregate.WithEmulationVersion(tc.emulation))
				assert.True(t, g.EmulationVersion().EqualTo(tc.emulation))
				check(t, g)
			})
			t.Run("SetEmulationVersion", func(t *testing.T) {
				g := newTestGate(t, featuregate.WithEmulationVersion(v(1, 10)))
				require.NoError(t, g.SetEmulationVersion(tc.emulation))
				check(t, g)
			})
		})
	}
}

func TestSetEmulationVersionRechecksValues(t *testing.T) {
	g := newTestGate(t, featuregate.WithEmulationVersion(v(1, 32)))
	require.NoError(t, g.Set("LaterFeature=false"))

	// At 1.34 the feature is locked to true: the stored false would be invalid there.
	err := g.SetEmulationVersion(v(1, 34))
	requireReason(t, err, featuregate.ReasonLocked)
	assert.Equal(t, "cannot set feature gate LaterFeature to false, feature is locked to true", err.Error())
	assert.Equal(t, "1.32", g.EmulationVersion().String(), "a failed SetEmulationVersion changes nothing")
	assert.False(t, g.Enabled(laterFeature))

	// Before 1.30 the feature does not exist.
	requireReason(t, g.SetEmulationVersion(v(1, 29)), featuregate.ReasonPreAlpha)
	assert.Equal(t, "1.32", g.EmulationVersion().String())

	// Going back to alpha keeps the (valid) explicit value.
	require.NoError(t, g.SetEmulationVersion(v(1, 30)))
	assert.False(t, g.Enabled(laterFeature))
	require.NoError(t, g.Set("LaterFeature=true"))
	assert.True(t, g.Enabled(laterFeature))
}

func TestKnownFeatures(t *testing.T) {
	g := newTestGate(t, featuregate.WithEmulationVersion(v(1, 32)))
	// GA and deprecated features are hidden, as upstream; locked non-GA ones are listed.
	assert.Equal(t, []string{
		"AllAlpha=true|false (ALPHA - default=false)",
		"AllBeta=true|false (BETA - default=false)",
		"AlphaLocked=true|false (ALPHA - default=false)",
		"AlphaOff=true|false (ALPHA - default=false)",
		"AlphaOn=true|false (ALPHA - default=true)",
		"BetaLocked=true|false (BETA - default=false)",
		"BetaOff=true|false (BETA - default=false)",
		"BetaOn=true|false (BETA - default=true)",
		"LaterFeature=true|false (BETA - default=true)",
	}, g.KnownFeatures())
	// Setting values does not change the help: it documents defaults.
	require.NoError(t, g.Set("BetaOn=false,AllAlpha=true"))
	assert.Contains(t, g.KnownFeatures(), "BetaOn=true|false (BETA - default=true)")
}

func TestDeepCopyIsIndependent(t *testing.T) {
	g := newTestGate(t, featuregate.WithEmulationVersion(v(1, 30)))
	require.NoError(t, g.Set("AlphaOff=true"))
	g.Freeze()

	c := g.DeepCopy()
	assert.Equal(t, state(g), state(c))
	assert.Equal(t, "1.30", c.EmulationVersion().String())
	assert.Equal(t, "AlphaOff=true", c.String())

	// The copy is not frozen: try a configuration on it.
	require.NoError(t, c.Set("BetaOn=false"))
	require.NoError(t, c.SetEmulationVersion(v(1, 32)))
	d := featuregate.New()
	require.NoError(t, d.Add(map[featuregate.Feature]featuregate.FeatureSpec{"X": {}}))
	c2 := d.DeepCopy()
	require.NoError(t, c2.Add(map[featuregate.Feature]featuregate.FeatureSpec{"Y": {}}), "a copy starts unread")

	assert.Equal(t, with(map[featuregate.Feature]bool{alphaOff: true, laterFeature: false}), state(g), "the original is untouched")
	assert.Equal(t, "1.30", g.EmulationVersion().String())
	assertReason(t, d.Set("Y=true"), featuregate.ReasonUnknownFeature)
}

func TestZeroGateIsUsable(t *testing.T) {
	var g featuregate.Gate
	assert.Equal(t, "", g.String())
	assert.False(t, g.Enabled(featuregate.AllAlpha), "pseudo gates exist in a zero gate")
	assert.Nil(t, g.EmulationVersion())
	assert.Len(t, g.KnownFeatures(), 2)

	var h featuregate.Gate
	require.NoError(t, h.Add(map[featuregate.Feature]featuregate.FeatureSpec{"A": {PreRelease: featuregate.Beta}}))
	require.NoError(t, h.Set("A=true"))
	assert.True(t, h.Enabled("A"))
}
