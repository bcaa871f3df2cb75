package featuregate_test

import (
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
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

// sentinelOf is the sentinel each Reason matches, as errors.go documents it.
var sentinelOf = map[featuregate.Reason]error{
	featuregate.ReasonUnknownFeature:    featuregate.ErrUnknownFeature,
	featuregate.ReasonMalformed:         featuregate.ErrInvalidValue,
	featuregate.ReasonLocked:            featuregate.ErrInvalidValue,
	featuregate.ReasonPreAlpha:          featuregate.ErrInvalidValue,
	featuregate.ReasonDependency:        featuregate.ErrInvalidValue,
	featuregate.ReasonInvalidVersion:    featuregate.ErrInvalidValue,
	featuregate.ReasonInvalidSpec:       featuregate.ErrInvalidSpec,
	featuregate.ReasonConflictingSpec:   featuregate.ErrInvalidSpec,
	featuregate.ReasonInvalidDependency: featuregate.ErrInvalidSpec,
	featuregate.ReasonFrozen:            featuregate.ErrClosed,
	featuregate.ReasonAlreadyRead:       featuregate.ErrClosed,
	featuregate.ReasonFlagRegistered:    featuregate.ErrClosed,
}

// reasons lists the Reason of every *featuregate.Error in err's tree, depth first.
func reasons(err error) []featuregate.Reason {
	var out []featuregate.Reason
	var walk func(error)
	walk = func(err error) {
		switch e := err.(type) {
		case *featuregate.Error:
			out = append(out, e.Reason)
		case interface{ Unwrap() []error }:
			for _, inner := range e.Unwrap() {
				walk(inner)
			}
		case interface{ Unwrap() error }:
			walk(e.Unwrap())
		}
	}
	walk(err)
	return out
}

// assertReason asserts that err is, wraps or joins an *featuregate.Error of reason, and that
// it matches the reason's sentinel with errors.Is.
func assertReason(t testing.TB, err error, reason featuregate.Reason, msgAndArgs ...any) bool {
	t.Helper()
	return assert.Contains(t, reasons(err), reason, msgAndArgs...) &&
		assert.ErrorIs(t, err, sentinelOf[reason], msgAndArgs...)
}

// requireReason is assertReason that stops the test on failure.
func requireReason(t testing.TB, err error, reason featuregate.Reason, msgAndArgs ...any) {
	t.Helper()
	if !assertReason(t, err, reason, msgAndArgs...) {
		t.FailNow()
	}
}
