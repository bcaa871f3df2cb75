package featuregatetesting_test

import (
	"fmt"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/util/version"

	"github.com/ctrlkit/ctrlkit/featuregate"
	"github.com/ctrlkit/ctrlkit/featuregate/featuregatetesting"
)

// demoT stands in for the *testing.T of a real test so the example can show the cleanup;
// in your tests pass t.
type demoT struct {
	testing.TB
	cleanups []func()
}

func (d *demoT) Helper()                        {}
func (d *demoT) Name() string                   { return "TestDemo" }
func (d *demoT) Cleanup(f func())               { d.cleanups = append(d.cleanups, f) }
func (d *demoT) Fatalf(format string, a ...any) { fmt.Printf("FATAL: "+format+"\n", a...) }
func (d *demoT) end() {
	for _, f := range slices.Backward(d.cleanups) {
		f()
	}
}

func ExampleSetDuringTest() {
	gate := featuregate.New()
	_ = gate.Add(map[featuregate.Feature]featuregate.FeatureSpec{
		"NewScheduler": {Default: false, PreRelease: featuregate.Alpha},
	})
	gate.Freeze() // production code can no longer change it; tests still can

	t := &demoT{}
	featuregatetesting.SetDuringTest(t, gate, "NewScheduler", true)
	fmt.Println("during the test:", gate.Enabled("NewScheduler"))
	t.end() // the test finishes: t.Cleanup restores the gate
	fmt.Println("after the test:", gate.Enabled("NewScheduler"))

	// Validation still applies: an unknown feature fails the test.
	featuregatetesting.SetDuringTest(&demoT{}, gate, "Typo", true)
	// Output:
	// during the test: true
	// after the test: false
	// FATAL: featuregatetesting: cannot set Typo=true: unrecognized feature gate: Typo
}

func ExampleSetEmulationVersionDuringTest() {
	gate := featuregate.New(featuregate.WithEmulationVersion(version.MajorMinor(1, 33)))
	_ = gate.AddVersioned(map[featuregate.Feature]featuregate.VersionedSpecs{
		"InPlaceResize": {
			{Version: version.MajorMinor(1, 30), Default: false, PreRelease: featuregate.Alpha},
			{Version: version.MajorMinor(1, 32), Default: true, PreRelease: featuregate.Beta},
		},
	})
	gate.Freeze()

	t := &demoT{}
	featuregatetesting.SetEmulationVersionDuringTest(t, gate, version.MajorMinor(1, 31))
	fmt.Println("at 1.31:", gate.Enabled("InPlaceResize"))
	t.end()
	fmt.Println("after the test, at", gate.EmulationVersion(), gate.Enabled("InPlaceResize"))
	// Output:
	// at 1.31: false
	// after the test, at 1.33 true
}
