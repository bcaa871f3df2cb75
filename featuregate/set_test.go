package featuregate_test

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/version"

	"github.com/ctrlkit/ctrlkit/featuregate"
)

func TestSetParsing(t *testing.T) {
	tests := []struct {
		name   string
		value  string
		want   map[featuregate.Feature]bool // expected state after a successful Set
		render string                       // expected String()
	}{
		{name: "empty", value: "", want: defaults(), render: ""},
		{name: "only separators and spaces", value: " , ,, ", want: defaults(), render: ""},
		{name: "two values", value: "AlphaOff=true,BetaOn=false",
			want: with(map[featuregate.Feature]bool{alphaOff: true, betaOn: false}), render: "AlphaOff=true,BetaOn=false"},
		{name: "spaces trimmed, empty entries skipped", value: " AlphaOff = true ,, BetaOn= false ,",
			want: with(map[featuregate.Feature]bool{alphaOff: true, betaOn: false}), render: "AlphaOff=true,BetaOn=false"},
		{name: "ParseBool spellings", value: "AlphaOff=1,BetaOn=F,BetaOff=TRUE,AlphaOn=False",
			want:   with(map[featuregate.Feature]bool{alphaOff: true, betaOn: false, betaOff: true, alphaOn: false}),
			render: "AlphaOff=true,AlphaOn=false,BetaOff=true,BetaOn=false"},
		{name: "last value of a repeated name wins", value: "AlphaOff=true,AlphaOff=false",
			want: with(map[featuregate.Feature]bool{alphaOff: false}), render: "AlphaOff=false"},
		{name: "locked feature set to its default is fine", value: "GALocked=true,BetaLocked=false",
			want: defaults(), render: "BetaLocked=false,GALocked=true"},
		{name: "GA and deprecated can be set", value: "GAOpen=false,Deprecated=true",
			want: with(map[featuregate.Feature]bool{gaOpen: false, deprecated: true}), render: "Deprecated=true,GAOpen=false"},
		{name: "pseudo gates", value: "AllAlpha=true",
			want: with(map[featuregate.Feature]bool{featuregate.AllAlpha: true, alphaOff: true}), render: "AllAlpha=true"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := newTestGate(t)
			require.NoError(t, g.Set(tc.value))
			assert.Equal(t, tc.want, state(g))
			assert.Equal(t, tc.render, g.String())
		})
	}
}

func TestSetErrors(t *testing.T) {
	_, parseBoolErr := strconv.ParseBool("maybe")
	tests := []struct {
		name      string
		emulation *version.Version
		value     string
		msg       string               // exact error text users see
		reasons   []featuregate.Reason // of the errors joined, in order
		cause     error                // what the error wraps besides, if anything
	}{
		{name: "unknown feature", value: "Nope=true",
			msg: "unrecognized feature gate: Nope", reasons: []featuregate.Reason{featuregate.ReasonUnknownFeature}},
		{name: "missing value", value: "AlphaOff",
			msg: "missing bool value for AlphaOff", reasons: []featuregate.Reason{featuregate.ReasonMalformed}},
		{name: "missing value, spaces trimmed", value: " AlphaOff ",
			msg: "missing bool value for AlphaOff", reasons: []featuregate.Reason{featuregate.ReasonMalformed}},
		{name: "missing name", value: "=true",
			msg: `missing feature name in "=true"`, reasons: []featuregate.Reason{featuregate.ReasonMalformed}},
		{name: "invalid value", value: "AlphaOff=maybe",
			msg:     "invalid value of AlphaOff=maybe, err: " + parseBoolErr.Error(),
			reasons: []featuregate.Reason{featuregate.ReasonMalformed}, cause: strconv.ErrSyntax},
		{name: "empty value", value: "AlphaOff=",
			msg:     `invalid value of AlphaOff=, err: strconv.ParseBool: parsing "": invalid syntax`,
			reasons: []featuregate.Reason{featuregate.ReasonMalformed}},
		{name: "locked to true", value: "GALocked=false",
			msg: "cannot set feature gate GALocked to false, feature is locked to true", reasons: []featuregate.Reason{featuregate.ReasonLocked}},
		{name: "locked to false", value: "BetaLocked=true",
			msg: "cannot set feature gate BetaLocked to true, feature is locked to false", reasons: []featuregate.Reason{featuregate.ReasonLocked}},
		{name: "pre-alpha at the emulated version", emulation: version.MajorMinor(1, 29), value: "LaterFeature=true",
			msg:     "cannot set feature gate LaterFeature to true, feature is PreAlpha at emulated version 1.29, min compatibility version 1.28",
			reasons: []featuregate.Reason{featuregate.ReasonPreAlpha}},
		{name: "locked at the emulated version", emulation: version.MajorMinor(1, 34), value: "LaterFeature=false",
			msg: "cannot set feature gate LaterFeature to false, feature is locked to true", reasons: []featuregate.Reason{featuregate.ReasonLocked}},
		{name: "every error is reported, in input order", value: "Nope=true,AlphaOff=true,GALocked=false",
			msg:     "unrecognized feature gate: Nope\ncannot set feature gate GALocked to false, feature is locked to true",
			reasons: []featuregate.Reason{featuregate.ReasonUnknownFeature, featuregate.ReasonLocked}},
		{name: "every parse error is reported", value: "A,B=x",
			msg:     "missing bool value for A\ninvalid value of B=x, err: strconv.ParseBool: parsing \"x\": invalid syntax",
			reasons: []featuregate.Reason{featuregate.ReasonMalformed, featuregate.ReasonMalformed}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := newTestGate(t, featuregate.WithEmulationVersion(tc.emulation))
			before := g.String()
			err := g.Set(tc.value)
			require.Error(t, err)
			assert.Equal(t, tc.msg, err.Error())
			assert.Equal(t, tc.reasons, reasons(err))
			for _, r := range tc.reasons {
				assertReason(t, err, r)
			}
			if tc.cause != nil {
				assert.ErrorIs(t, err, tc.cause)
			}
			assert.Equal(t, before, g.String(), "a failed Set must change nothing")
		})
	}
}

func TestTypedErrors(t *testing.T) {
	g := newTestGate(t)

	var unknown *featuregate.Error
	require.ErrorAs(t, g.Set("Nope=true"), &unknown)
	assert.Equal(t, featuregate.ReasonUnknownFeature, unknown.Reason)
	assert.Equal(t, featuregate.Feature("Nope"), unknown.Feature)

	var parse *featuregate.Error
	require.ErrorAs(t, g.Set("AlphaOff=maybe"), &parse)
	assert.Equal(t, featuregate.ReasonMalformed, parse.Reason)
	assert.Equal(t, "AlphaOff=maybe", parse.Entry)
	assert.Equal(t, alphaOff, parse.Feature)
	assert.Equal(t, "maybe", parse.Value)
	assert.ErrorIs(t, parse.Err, strconv.ErrSyntax)

	var locked *featuregate.Error
	require.ErrorAs(t, g.SetFromMap(map[string]bool{"GALocked": false}), &locked)
	assert.Equal(t, featuregate.ReasonLocked, locked.Reason)
	assert.Equal(t, gaLocked, locked.Feature)
	assert.Equal(t, "false", locked.Value)
	assert.EqualError(t, locked, "cannot set feature gate GALocked to false, feature is locked to true")

	require.NoError(t, g.SetEmulationVersion(version.MajorMinor(1, 29)))
	var pre *featuregate.Error
	require.ErrorAs(t, g.Set("LaterFeature=true"), &pre)
	assert.Equal(t, featuregate.ReasonPreAlpha, pre.Reason)
	assert.Equal(t, laterFeature, pre.Feature)
	assert.Equal(t, "true", pre.Value)
	assert.Equal(t, "1.29", pre.EmulationVersion.String())

	var spec *featuregate.Error
	err := g.Add(map[featuregate.Feature]featuregate.FeatureSpec{alphaOff: {Default: true, PreRelease: featuregate.Alpha}})
	require.ErrorAs(t, err, &spec)
	assert.Equal(t, alphaOff, spec.Feature)
	assertReason(t, err, featuregate.ReasonConflictingSpec)
	assert.Equal(t, `feature gate "AlphaOff" with different spec already exists: [{false false ALPHA 0.0 <nil>}]`, err.Error())
}

func TestSetFromMap(t *testing.T) {
	g := newTestGate(t)
	require.NoError(t, g.SetFromMap(map[string]bool{"AlphaOff": true, "BetaOn": false}))
	assert.Equal(t, with(map[featuregate.Feature]bool{alphaOff: true, betaOn: false}), state(g))

	// Errors come in name order (a map has none) and the gate is unchanged.
	err := g.SetFromMap(map[string]bool{"Zed": true, "AlphaOff": false, "GALocked": false, "Abc": true})
	require.Error(t, err)
	assert.Equal(t, "unrecognized feature gate: Abc\ncannot set feature gate GALocked to false, feature is locked to true\nunrecognized feature gate: Zed", err.Error())
	assert.Equal(t, with(map[featuregate.Feature]bool{alphaOff: true, betaOn: false}), state(g))
}

// Upstream stores a bad entry before validating it, so after one failed Set every later Set
// fails too. Here a failed Set leaves the gate exactly as it was.
func TestFailedSetLeavesGateUnchangedAndLaterSetsWork(t *testing.T) {
	for _, bad := range []string{
		"BetaOff=true,Nope=true",      // unknown after a good entry
		"BetaOff=true,GALocked=false", // locked
		"BetaOff=true,AlphaOff=maybe", // unparsable
		"BetaOff=true,AlphaOff",       // missing value
		"AllBeta=true,Nope=false",     // pseudo gate in a failing Set
	} {
		t.Run(bad, func(t *testing.T) {
			g := newTestGate(t)
			require.NoError(t, g.Set("AlphaOff=true"))
			want := with(map[featuregate.Feature]bool{alphaOff: true})

			require.Error(t, g.Set(bad))
			assert.Equal(t, want, state(g))
			assert.Equal(t, "AlphaOff=true", g.String())

			require.NoError(t, g.Set("BetaOff=true"), "a later Set must not be poisoned by the failed one")
			assert.Equal(t, with(map[featuregate.Feature]bool{alphaOff: true, betaOff: true}), state(g))
			assert.Equal(t, "AlphaOff=true,BetaOff=true", g.String())
		})
	}
}

func TestSetAccumulates(t *testing.T) {
	g := newTestGate(t)
	require.NoError(t, g.Set("AlphaOff=true"))
	require.NoError(t, g.Set("BetaOn=false"))
	require.NoError(t, g.Set("AlphaOff=false"))
	assert.Equal(t, with(map[featuregate.Feature]bool{alphaOff: false, betaOn: false}), state(g))
	assert.Equal(t, "AlphaOff=false,BetaOn=false", g.String())
}

func TestAllAlphaAllBeta(t *testing.T) {
	tests := []struct {
		name string
		sets []string // applied in order, each must succeed
		want map[featuregate.Feature]bool
	}{
		{name: "AllAlpha=true turns on unset alpha features, not locked ones",
			sets: []string{"AllAlpha=true"},
			want: with(map[featuregate.Feature]bool{featuregate.AllAlpha: true, alphaOff: true})},
		{name: "AllAlpha=false turns off default-on alpha features",
			sets: []string{"AllAlpha=false"},
			want: with(map[featuregate.Feature]bool{alphaOn: false})},
		{name: "AllBeta=false turns off beta features, not GA, locked or alpha",
			sets: []string{"AllBeta=false"},
			want: with(map[featuregate.Feature]bool{betaOn: false, laterFeature: true})},
		{name: "AllBeta=true",
			sets: []string{"AllBeta=true"},
			want: with(map[featuregate.Feature]bool{featuregate.AllBeta: true, betaOff: true})},
		{name: "explicit after pseudo, one string",
			sets: []string{"AllAlpha=true,AlphaOff=false"},
			want: with(map[featuregate.Feature]bool{featuregate.AllAlpha: true, alphaOff: false})},
		{name: "explicit before pseudo, one string",
			sets: []string{"AlphaOff=false,AllAlpha=true"},
			want: with(map[featuregate.Feature]bool{featuregate.AllAlpha: true, alphaOff: false})},
		{name: "explicit after pseudo, two Sets",
			sets: []string{"AllBeta=false", "BetaOn=true"},
			want: with(map[featuregate.Feature]bool{betaOn: true})},
		{name: "explicit before pseudo, two Sets",
			sets: []string{"BetaOn=true", "AllBeta=false"},
			want: with(map[featuregate.Feature]bool{betaOn: true})},
		{name: "both pseudo gates with explicit values both sides",
			sets: []string{"AlphaOn=true,AllAlpha=false,AllBeta=true", "BetaOff=false"},
			want: with(map[featuregate.Feature]bool{featuregate.AllBeta: true, alphaOn: true, betaOff: false})},
		{name: "changing the pseudo gate later re-applies it to unset features only",
			sets: []string{"AllAlpha=true", "AlphaOn=false", "AllAlpha=false"},
			want: with(map[featuregate.Feature]bool{alphaOn: false})},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := newTestGate(t)
			for _, s := range tc.sets {
				require.NoError(t, g.Set(s))
			}
			assert.Equal(t, tc.want, state(g))
		})
	}
}

func TestAllAlphaFollowsEmulationVersion(t *testing.T) {
	// LaterFeature is alpha at 1.30 and beta at 1.32: the pseudo gate that applies to it
	// depends on the emulated version.
	g := newTestGate(t, featuregate.WithEmulationVersion(version.MajorMinor(1, 30)))
	require.NoError(t, g.Set("AllAlpha=true,AllBeta=false"))
	assert.True(t, g.Enabled(laterFeature), "alpha at 1.30: AllAlpha applies")
	require.NoError(t, g.SetEmulationVersion(version.MajorMinor(1, 32)))
	assert.False(t, g.Enabled(laterFeature), "beta at 1.32: AllBeta applies")
	require.NoError(t, g.SetEmulationVersion(version.MajorMinor(1, 34)))
	assert.True(t, g.Enabled(laterFeature), "GA locked at 1.34: neither applies")
}

func TestFrozenGateRefusesSets(t *testing.T) {
	g := newTestGate(t)
	require.NoError(t, g.Set("AlphaOff=true"))
	g.Freeze()
	for name, err := range map[string]error{
		"Set":                 g.Set("BetaOn=false"),
		"SetFromMap":          g.SetFromMap(map[string]bool{"BetaOn": false}),
		"SetEmulationVersion": g.SetEmulationVersion(version.MajorMinor(1, 31)),
		"Add":                 g.Add(map[featuregate.Feature]featuregate.FeatureSpec{"New": {}}),
	} {
		assertReason(t, err, featuregate.ReasonFrozen, name)
	}
	assert.Equal(t, with(map[featuregate.Feature]bool{alphaOff: true}), state(g))
	assert.Nil(t, g.EmulationVersion())
	assertReason(t, g.Set(""), featuregate.ReasonFrozen, "even an empty Set is refused: the gate is read-only")
}

// As upstream (which parses into a map), a feature named twice in one Set keeps its last
// value, and only that value is checked.
func TestSetRepeatedFeatureLastWins(t *testing.T) {
	g := newTestGate(t)
	require.NoError(t, g.Set("GALocked=false,GALocked=true,AlphaOff=true,AlphaOff=false"))
	assert.Equal(t, defaults(), state(g))
	assert.Equal(t, "AlphaOff=false,GALocked=true", g.String())
	assert.EqualError(t, g.Set("GALocked=true,GALocked=false"), "cannot set feature gate GALocked to false, feature is locked to true")
}
