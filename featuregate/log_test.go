package featuregate_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"

	"github.com/ctrlkit/ctrlkit/featuregate"
)

// discard is a logger that drops everything (the zero logr.Logger does).
func discard() klog.Logger { return klog.Logger{} }

// bufferedLogger returns a logger whose entries the test can inspect.
func bufferedLogger(t *testing.T) (klog.Logger, func() ktesting.Log) {
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true)))
	return logger, func() ktesting.Log {
		return logger.GetSink().(ktesting.Underlier).GetBuffer().Data()
	}
}

func TestEnabledOfUnregisteredFeatureIsFalseAndReportedOnce(t *testing.T) {
	logger, entries := bufferedLogger(t)
	g := newTestGate(t, featuregate.WithLogger(logger))
	require.NotPanics(t, func() {
		for range 100 {
			assert.False(t, g.Enabled("Typo"))
		}
		assert.False(t, g.Enabled("OtherTypo"))
	})

	var reported []featuregate.Feature
	for _, e := range entries() {
		if e.Type != ktesting.LogError {
			continue
		}
		var uf *featuregate.Error
		require.ErrorAs(t, e.Err, &uf)
		require.Equal(t, featuregate.ReasonUnknownFeature, uf.Reason)
		assert.Equal(t, []any{"featureGate", uf.Feature}, e.ParameterKVList)
		reported = append(reported, uf.Feature)
	}
	assert.Equal(t, []featuregate.Feature{"Typo", "OtherTypo"}, reported, "each unknown feature is reported once")
	assert.True(t, g.Enabled(betaOn), "known features are unaffected")
}

func TestSettingGAOrDeprecatedWarns(t *testing.T) {
	logger, entries := bufferedLogger(t)
	g := newTestGate(t, featuregate.WithLogger(logger))
	require.NoError(t, g.Set("GAOpen=false,Deprecated=true,BetaOn=false,AllBeta=true"))
	assert.False(t, g.Enabled(gaOpen))
	assert.True(t, g.Enabled(deprecated))

	var warnings []string
	for _, e := range entries() {
		if e.Type == ktesting.LogInfo && e.Verbosity == 0 {
			warnings = append(warnings, e.Message)
			require.Len(t, e.ParameterKVList, 4)
			assert.Equal(t, "featureGate", e.ParameterKVList[0])
			assert.Equal(t, "value", e.ParameterKVList[2])
		}
	}
	assert.Equal(t, []string{
		"Warning: setting GA feature gate. It will be removed in a future release.",
		"Warning: setting deprecated feature gate. It will be removed in a future release.",
	}, warnings, "only GA and deprecated features warn, in input order")
}

func TestFailedSetDoesNotWarn(t *testing.T) {
	logger, entries := bufferedLogger(t)
	g := newTestGate(t, featuregate.WithLogger(logger))
	require.Error(t, g.Set("GAOpen=false,Nope=true"))
	assert.Empty(t, entries(), "nothing was set, so nothing is announced")
}

func TestEmulationChangeAfterReadWarns(t *testing.T) {
	logger, entries := bufferedLogger(t)
	g := newTestGate(t, featuregate.WithLogger(logger), featuregate.WithEmulationVersion(v(1, 30)))
	assert.False(t, g.Enabled(laterFeature))
	require.NoError(t, g.SetEmulationVersion(v(1, 32)))
	var found bool
	for _, e := range entries() {
		if e.Message == "Warning: emulation version changed features that were already read" {
			found = true
			assert.Equal(t, []featuregate.Feature{laterFeature}, e.ParameterKVList[5])
		}
	}
	assert.True(t, found)
}
