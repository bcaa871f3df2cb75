package featuregate_test

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctrlkit/ctrlkit/featuregate"
)

func TestRegisterMetrics(t *testing.T) {
	g := newTestGate(t, featuregate.WithLogger(discard()), featuregate.WithEmulationVersion(v(1, 29)))
	other := featuregate.New()
	require.NoError(t, other.Add(map[featuregate.Feature]featuregate.FeatureSpec{"OtherGate": {PreRelease: featuregate.Beta, Default: true}}))
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, featuregate.RegisterMetrics(reg, g, other))
	require.NoError(t, g.Set("AlphaOff=true,AllBeta=true"))

	want := `# HELP kubernetes_feature_enabled [BETA] This metric records the data about the stage and enablement of a k8s feature.
# TYPE kubernetes_feature_enabled gauge
kubernetes_feature_enabled{name="AllAlpha",stage="ALPHA"} 0
kubernetes_feature_enabled{name="AllBeta",stage="BETA"} 1
kubernetes_feature_enabled{name="AlphaLocked",stage="ALPHA"} 0
kubernetes_feature_enabled{name="AlphaOff",stage="ALPHA"} 1
kubernetes_feature_enabled{name="AlphaOn",stage="ALPHA"} 1
kubernetes_feature_enabled{name="BetaLocked",stage="BETA"} 0
kubernetes_feature_enabled{name="BetaOff",stage="BETA"} 1
kubernetes_feature_enabled{name="BetaOn",stage="BETA"} 1
kubernetes_feature_enabled{name="Deprecated",stage="DEPRECATED"} 0
kubernetes_feature_enabled{name="GALocked",stage=""} 1
kubernetes_feature_enabled{name="GAOpen",stage=""} 1
kubernetes_feature_enabled{name="OtherGate",stage="BETA"} 1
`
	// LaterFeature is PreAlpha at 1.29: not exported, as upstream.
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(want), featuregate.MetricName))

	// The collector reads the current state at each scrape.
	require.NoError(t, g.SetEmulationVersion(v(1, 32)))
	n, err := testutil.GatherAndCount(reg, featuregate.MetricName)
	require.NoError(t, err)
	assert.Equal(t, 13, n, "LaterFeature appears once it exists")

	// One collector per registry: a second one, even for another gate, is refused.
	var already prometheus.AlreadyRegisteredError
	require.ErrorAs(t, featuregate.RegisterMetrics(reg, other), &already)
	require.ErrorAs(t, reg.Register(featuregate.NewMetricsCollector(g)), &already)
}

// A scrape is not a read: registration stays open.
func TestScrapeDoesNotCloseRegistration(t *testing.T) {
	g := featuregate.New()
	reg := prometheus.NewRegistry()
	require.NoError(t, featuregate.RegisterMetrics(reg, g))
	_, err := reg.Gather()
	require.NoError(t, err)
	require.NoError(t, g.Add(map[featuregate.Feature]featuregate.FeatureSpec{"Late": {PreRelease: featuregate.Alpha}}))
}
