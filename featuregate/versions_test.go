package featuregate_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/version"

	"github.com/ctrlkit/ctrlkit/featuregate"
)

// A beta feature that turns on by default at 1.35 only once every component is 1.35.
var compatHistory = featuregate.VersionedSpecs{
	{Version: v(1, 33), PreRelease: featuregate.Alpha},
	{Version: v(1, 35), PreRelease: featuregate.Beta},
	{Version: v(1, 35), PreRelease: featuregate.Beta, Default: true, MinCompatibilityVersion: v(1, 35)},
	{Version: v(1, 37), PreRelease: featuregate.GA, Default: true, LockToDefault: true},
}

func compatGate(t *testing.T) *featuregate.Gate {
	t.Helper()
	g := featuregate.New(featuregate.WithLogger(discard()))
	require.NoError(t, g.AddVersioned(map[featuregate.Feature]featuregate.VersionedSpecs{"Skew": compatHistory}))
	return g
}

func TestMinCompatibilityVersion(t *testing.T) {
	tests := []struct {
		emu, min string // "" = SetEmulationVersion(emu) / no emulation
		want     bool
		help     string
	}{
		{emu: "1.35", want: false, help: "Skew=true|false (BETA - default=false), or Skew=true|false (BETA - default=true) if --min-compatibility-version>=1.35"},
		{emu: "1.35", min: "1.35", want: true, help: "Skew=true|false (BETA - default=true)"},
		{emu: "1.36", want: true, help: "Skew=true|false (BETA - default=true)"},
		{emu: "1.36", min: "1.34", want: false, help: "Skew=true|false (BETA - default=false), or Skew=true|false (BETA - default=true) if --min-compatibility-version>=1.35"},
		// GA at 1.37 inherits the 1.35 min compatibility: with min 1.34 the 1.35 beta
		// entry without it is in force.
		{emu: "1.37", min: "1.34", want: false, help: "Skew=true|false (BETA - default=false)"},
		{emu: "1.37", want: true, help: ""},
		{emu: "1.34", want: false, help: "Skew=true|false (ALPHA - default=false)"},
		// No emulation: no bound unless set.
		{want: true},
		{min: "1.34", want: false},
	}
	for _, tc := range tests {
		t.Run(tc.emu+"/"+tc.min, func(t *testing.T) {
			g := compatGate(t)
			var emu, minCompat = parseOpt(tc.emu), parseOpt(tc.min)
			if tc.min == "" {
				require.NoError(t, g.SetEmulationVersion(emu))
			} else {
				require.NoError(t, g.SetEmulationVersionAndMinCompatibilityVersion(emu, minCompat))
			}
			if tc.emu != "" {
				if tc.min == "" {
					assert.Equal(t, emu.SubtractMinor(1).String(), g.MinCompatibilityVersion().String())
				}
				var lines []string
				for _, l := range g.KnownFeatures() {
					if l[0] == 'S' {
						lines = append(lines, l)
					}
				}
				if tc.help == "" {
					assert.Empty(t, lines)
				} else {
					assert.Equal(t, []string{tc.help}, lines)
				}
			}
			assert.Equal(t, tc.want, g.Enabled("Skew"))
		})
	}
}

func TestMinCompatibilityVersionErrors(t *testing.T) {
	g := compatGate(t)
	err := g.SetEmulationVersionAndMinCompatibilityVersion(v(1, 31), v(1, 32))
	requireReason(t, err, featuregate.ReasonInvalidVersion)
	assert.EqualError(t, err, "minCompatibilityVersion version 1.32 is not between [0.0, 1.31]")
	assert.Nil(t, g.EmulationVersion(), "nothing changed")

	require.NoError(t, g.SetEmulationVersionAndMinCompatibilityVersion(v(1, 32), v(1, 30)))
	err = g.Set("Skew=true")
	requireReason(t, err, featuregate.ReasonPreAlpha)
	assert.EqualError(t, err, "cannot set feature gate Skew to true, feature is PreAlpha at emulated version 1.32, min compatibility version 1.30")

	// Values set are re-checked when the versions change.
	require.NoError(t, g.SetEmulationVersion(v(1, 35)))
	require.NoError(t, g.Set("Skew=false"))
	err = g.SetEmulationVersion(v(1, 38))
	assert.EqualError(t, err, "cannot set feature gate Skew to false, feature is locked to true")
	assert.Equal(t, "1.35", g.EmulationVersion().String())
}

func TestVersionFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--emulated-version=1.36", "--min-compatibility-version=1.34"},
		{"--min-compatibility-version=1.34", "--emulated-version=1.36"},
		{"--min-compatibility-version", "1.34", "--feature-gates=Skew=true", "--emulated-version=1.36"},
	} {
		g := compatGate(t)
		fs := pflagSet()
		g.AddFlag(fs)
		g.AddVersionFlags(fs)
		require.NoError(t, fs.Parse(args), args)
		assert.Equal(t, "1.36", g.EmulationVersion().String(), args)
		assert.Equal(t, "1.34", g.MinCompatibilityVersion().String(), args)
		assert.Equal(t, "1.36", fs.Lookup("emulated-version").Value.String())
	}

	g := compatGate(t)
	fs := pflagSet()
	g.AddVersionFlags(fs)
	require.NoError(t, fs.Parse([]string{"--emulated-version=1.35"}))
	assert.Equal(t, "1.34", g.MinCompatibilityVersion().String(), "defaults to one minor before")
	assert.ErrorContains(t, fs.Parse([]string{"--emulated-version=1.35.1"}), "patch version not allowed, got: 1.35.1")
	assert.ErrorContains(t, fs.Parse([]string{"--min-compatibility-version=1.36"}), "minCompatibilityVersion version 1.36 is not between [0.0, 1.35]")
	assert.ErrorContains(t, fs.Parse([]string{"--emulated-version=x"}), `invalid feature gate version "x": could not parse`)
	assertReason(t, fs.Lookup("emulated-version").Value.Set("1.35.2"), featuregate.ReasonInvalidVersion)
}

// parseOpt parses a major.minor version, nil for "".
func parseOpt(s string) *version.Version {
	if s == "" {
		return nil
	}
	return version.MustParse(s)
}

func TestFrozenGateRefusesTheNewSetters(t *testing.T) {
	g := compatGate(t)
	g.Freeze()
	assertReason(t, g.SetEmulationVersionAndMinCompatibilityVersion(v(1, 36), v(1, 35)), featuregate.ReasonFrozen)
	assertReason(t, g.OverrideDefaultAtVersion("Skew", true, v(1, 36)), featuregate.ReasonFrozen)
	assert.Nil(t, g.MinCompatibilityVersion())
}
