package featuregate_test

import (
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"k8s.io/apimachinery/pkg/util/version"

	"github.com/ctrlkit/ctrlkit/featuregate"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// The features of the test gate, one per interesting kind.
const (
	alphaOff     featuregate.Feature = "AlphaOff"     // alpha, default false
	alphaOn      featuregate.Feature = "AlphaOn"      // alpha, default true
	betaOn       featuregate.Feature = "BetaOn"       // beta, default true
	betaOff      featuregate.Feature = "BetaOff"      // beta, default false
	gaLocked     featuregate.Feature = "GALocked"     // GA, locked to true
	gaOpen       featuregate.Feature = "GAOpen"       // GA, not locked
	deprecated   featuregate.Feature = "Deprecated"   // deprecated, default false
	betaLocked   featuregate.Feature = "BetaLocked"   // beta, locked to false
	alphaLocked  featuregate.Feature = "AlphaLocked"  // alpha, locked to false
	laterFeature featuregate.Feature = "LaterFeature" // versioned: alpha 1.30, beta 1.32, GA locked 1.34
)

var testSpecs = map[featuregate.Feature]featuregate.FeatureSpec{
	alphaOff:    {Default: false, PreRelease: featuregate.Alpha},
	alphaOn:     {Default: true, PreRelease: featuregate.Alpha},
	betaOn:      {Default: true, PreRelease: featuregate.Beta},
	betaOff:     {Default: false, PreRelease: featuregate.Beta},
	gaLocked:    {Default: true, PreRelease: featuregate.GA, LockToDefault: true},
	gaOpen:      {Default: true, PreRelease: featuregate.GA},
	deprecated:  {Default: false, PreRelease: featuregate.Deprecated},
	betaLocked:  {Default: false, PreRelease: featuregate.Beta, LockToDefault: true},
	alphaLocked: {Default: false, PreRelease: featuregate.Alpha, LockToDefault: true},
}

var laterHistory = featuregate.VersionedSpecs{
	{Version: version.MajorMinor(1, 30), Default: false, PreRelease: featuregate.Alpha},
	{Version: version.MajorMinor(1, 32), Default: true, PreRelease: featuregate.Beta},
	{Version: version.MajorMinor(1, 34), Default: true, PreRelease: featuregate.GA, LockToDefault: true},
}

// allTestFeatures lists every registered feature of newTestGate, pseudo gates included.
var allTestFeatures = []featuregate.Feature{
	alphaOff, alphaOn, betaOn, betaOff, gaLocked, gaOpen, deprecated, betaLocked, alphaLocked,
	laterFeature, featuregate.AllAlpha, featuregate.AllBeta,
}

func newTestGate(t testing.TB, opts ...featuregate.Option) *featuregate.Gate {
	t.Helper()
	g := featuregate.New(opts...)
	require.NoError(t, g.Add(testSpecs))
	require.NoError(t, g.AddVersioned(map[featuregate.Feature]featuregate.VersionedSpecs{laterFeature: laterHistory}))
	return g
}

// state reads every test feature. It marks the gate read, so call it after registration.
func state(g featuregate.Gates) map[featuregate.Feature]bool {
	out := make(map[featuregate.Feature]bool, len(allTestFeatures))
	for _, f := range allTestFeatures {
		out[f] = g.Enabled(f)
	}
	return out
}

// defaults is the state of an untouched test gate without emulation.
func defaults() map[featuregate.Feature]bool {
	return map[featuregate.Feature]bool{
		alphaOff: false, alphaOn: true, betaOn: true, betaOff: false, gaLocked: true, gaOpen: true,
		deprecated: false, betaLocked: false, alphaLocked: false, laterFeature: true,
		featuregate.AllAlpha: false, featuregate.AllBeta: false,
	}
}

// with returns defaults() changed by kv pairs.
func with(kv map[featuregate.Feature]bool) map[featuregate.Feature]bool {
	out := defaults()
	for k, v := range kv {
		out[k] = v
	}
	return out
}

func pflagSet() *pflag.FlagSet { return pflag.NewFlagSet("test", pflag.ContinueOnError) }
