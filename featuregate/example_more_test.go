package featuregate_test

import (
	"fmt"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/util/version"

	"github.com/ctrlkit/ctrlkit/featuregate"
)

// A feature that needs another cannot be on without it.
func ExampleGate_AddDependencies() {
	gate := featuregate.New()
	_ = gate.Add(map[featuregate.Feature]featuregate.FeatureSpec{
		"Sharding":        {Default: false, PreRelease: featuregate.Alpha},
		"ShardedHandover": {Default: false, PreRelease: featuregate.Alpha},
	})
	if err := gate.AddDependencies(map[featuregate.Feature][]featuregate.Feature{
		"ShardedHandover": {"Sharding"},
	}); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(gate.Set("ShardedHandover=true"))
	fmt.Println(gate.Set("ShardedHandover=true,Sharding=true"))
	// Output:
	// ShardedHandover is enabled, but depends on features that are disabled: [Sharding]
	// <nil>
}

// A binary adopts a new default before parsing flags; the flag still wins.
func ExampleGate_OverrideDefault() {
	gate := featuregate.New()
	_ = gate.Add(map[featuregate.Feature]featuregate.FeatureSpec{
		"BatchUpdates": {Default: false, PreRelease: featuregate.Beta},
	})
	if err := gate.OverrideDefault("BatchUpdates", true); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(gate.KnownFeatures()[2])
	fmt.Println("default:", gate.Enabled("BatchUpdates"))
	_ = gate.Set("BatchUpdates=false")
	fmt.Println("after --feature-gates=BatchUpdates=false:", gate.Enabled("BatchUpdates"))
	// Output:
	// BatchUpdates=true|false (BETA - default=true)
	// default: true
	// after --feature-gates=BatchUpdates=false: false
}

// A feature whose default turns on only once every component of the control plane is new
// enough: the min compatibility version decides.
func ExampleGate_SetEmulationVersionAndMinCompatibilityVersion() {
	base := featuregate.New()
	_ = base.AddVersioned(map[featuregate.Feature]featuregate.VersionedSpecs{
		"SkewSensitive": {
			{Version: version.MajorMinor(1, 35), Default: false, PreRelease: featuregate.Beta},
			{Version: version.MajorMinor(1, 35), Default: true, PreRelease: featuregate.Beta,
				MinCompatibilityVersion: version.MajorMinor(1, 35)},
		},
	})
	for _, minCompat := range []string{"1.34", "1.35"} {
		gate := base.DeepCopy()
		if err := gate.SetEmulationVersionAndMinCompatibilityVersion(version.MajorMinor(1, 35), version.MustParse(minCompat)); err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("min compatibility %s: %t\n", minCompat, gate.Enabled("SkewSensitive"))
	}
	fmt.Println(base.SetEmulationVersionAndMinCompatibilityVersion(version.MajorMinor(1, 35), version.MajorMinor(1, 36)))
	// Output:
	// min compatibility 1.34: false
	// min compatibility 1.35: true
	// minCompatibilityVersion version 1.36 is not between [0.0, 1.35]
}

// The Manager registers the gauge on its registry; here a plain one.
func ExampleRegisterMetrics() {
	gate := featuregate.New()
	_ = gate.Add(map[featuregate.Feature]featuregate.FeatureSpec{
		"FastResync": {Default: false, PreRelease: featuregate.Alpha},
	})
	reg := prometheus.NewRegistry()
	if err := featuregate.RegisterMetrics(reg, gate); err != nil {
		fmt.Println(err)
		return
	}
	_ = gate.Set("FastResync=true")
	err := testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP kubernetes_feature_enabled [BETA] This metric records the data about the stage and enablement of a k8s feature.
# TYPE kubernetes_feature_enabled gauge
kubernetes_feature_enabled{name="AllAlpha",stage="ALPHA"} 0
kubernetes_feature_enabled{name="AllBeta",stage="BETA"} 0
kubernetes_feature_enabled{name="FastResync",stage="ALPHA"} 1
`), featuregate.MetricName)
	fmt.Println(err)
	// Output:
	// <nil>
}
