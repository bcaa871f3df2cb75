package featuregate_test

import (
	"flag"
	"io"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctrlkit/ctrlkit/featuregate"
)

func TestAddFlag(t *testing.T) {
	g := newTestGate(t)
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	g.AddFlag(fs)

	fl := fs.Lookup(featuregate.FlagName)
	require.NotNil(t, fl)
	assert.Equal(t, "mapStringBool", fl.Value.Type())
	for _, line := range g.KnownFeatures() {
		assert.Contains(t, fl.Usage, "\n"+line, "help lists every known feature")
	}
	assert.NotContains(t, fl.Usage, "GALocked", "GA features are not advertised")

	// Repeated flags accumulate; the last value of a feature wins.
	require.NoError(t, fs.Parse([]string{"--feature-gates=AlphaOff=true,BetaOn=false", "--feature-gates", "AlphaOff=false, AllAlpha=true"}))
	assert.Equal(t, with(map[featuregate.Feature]bool{alphaOff: false, betaOn: false, featuregate.AllAlpha: true}), state(g))
	assert.Equal(t, "AllAlpha=true,AlphaOff=false,BetaOn=false", fl.Value.String())

	// A bad value fails parsing with the gate's message and changes nothing.
	err := fs.Parse([]string{"--feature-gates=BetaOff=true,GALocked=false"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "cannot set feature gate GALocked to false, feature is locked to true")
	assert.False(t, g.Enabled(betaOff))
}

func TestAddGoFlag(t *testing.T) {
	g := newTestGate(t)
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	g.AddGoFlag(fs)

	fl := fs.Lookup(featuregate.FlagName)
	require.NotNil(t, fl)
	assert.True(t, strings.HasPrefix(fl.Usage, "A set of key=value pairs that describe feature gates"))
	require.NoError(t, fs.Parse([]string{"-feature-gates=BetaOff=true", "--feature-gates=AllBeta=false"}))
	assert.Equal(t, with(map[featuregate.Feature]bool{betaOff: true, betaOn: false}), state(g))

	err := fs.Parse([]string{"-feature-gates=Nope=true"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "unrecognized feature gate: Nope")

	// PrintDefaults calls String on a zero *Gate made by reflection: it must not panic.
	var out strings.Builder
	fs.SetOutput(&out)
	fs.PrintDefaults()
	assert.Contains(t, out.String(), "-feature-gates")
}

func TestFlagAfterFreezeIsRefused(t *testing.T) {
	g := newTestGate(t)
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	g.AddFlag(fs)
	g.Freeze()
	assert.ErrorContains(t, fs.Parse([]string{"--feature-gates=AlphaOff=true"}), "feature gate is frozen")
	assert.False(t, g.Enabled(alphaOff))
}
