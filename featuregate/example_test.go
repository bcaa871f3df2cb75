package featuregate_test

import (
	"errors"
	"fmt"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/version"
	clientfeatures "k8s.io/client-go/features"

	"github.com/ctrlkit/ctrlkit/featuregate"
)

// The usual lifecycle: register, expose the flag, parse, freeze, read.
func Example() {
	gate := featuregate.New(featuregate.WithLogger(discard()))
	if err := gate.Add(map[featuregate.Feature]featuregate.FeatureSpec{
		"FastResync":   {Default: false, PreRelease: featuregate.Alpha},
		"BatchUpdates": {Default: true, PreRelease: featuregate.Beta},
	}); err != nil {
		fmt.Println(err)
		return
	}
	fs := pflag.NewFlagSet("controller", pflag.ContinueOnError)
	gate.AddFlag(fs)
	if err := fs.Parse([]string{"--feature-gates=FastResync=true,BatchUpdates=false"}); err != nil {
		fmt.Println(err)
		return
	}
	gate.Freeze()

	fmt.Println("FastResync:", gate.Enabled("FastResync"))
	fmt.Println("BatchUpdates:", gate.Enabled("BatchUpdates"))
	fmt.Println("flag value:", gate.String())
	// Output:
	// FastResync: true
	// BatchUpdates: false
	// flag value: BatchUpdates=false,FastResync=true
}

// A feature's history decides what it is at the emulated version.
func ExampleGate_SetEmulationVersion() {
	base := featuregate.New()
	_ = base.AddVersioned(map[featuregate.Feature]featuregate.VersionedSpecs{
		"InPlaceResize": {
			{Version: version.MajorMinor(1, 30), Default: false, PreRelease: featuregate.Alpha},
			{Version: version.MajorMinor(1, 32), Default: true, PreRelease: featuregate.Beta},
			{Version: version.MajorMinor(1, 34), Default: true, PreRelease: featuregate.GA, LockToDefault: true},
		},
	})
	for _, v := range []string{"1.29", "1.31", "1.33", "1.34"} {
		gate := base.DeepCopy() // a fresh copy per version
		if err := gate.SetEmulationVersion(version.MustParse(v)); err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%s: %-5t %v\n", v, gate.Enabled("InPlaceResize"), gate.Set("InPlaceResize=false"))
	}
	// Output:
	// 1.29: false cannot set feature gate InPlaceResize to false, feature is PreAlpha at emulated version 1.29, min compatibility version 1.28
	// 1.31: false <nil>
	// 1.33: true  <nil>
	// 1.34: true  cannot set feature gate InPlaceResize to false, feature is locked to true
}

// Errors name the culprit, match a few sentinels and carry a Reason; a failed Set changes
// nothing.
func ExampleGate_Set() {
	gate := featuregate.New()
	_ = gate.Add(map[featuregate.Feature]featuregate.FeatureSpec{
		"A": {PreRelease: featuregate.Beta},
		"B": {PreRelease: featuregate.GA, Default: true, LockToDefault: true},
	})
	err := gate.Set("A=true,B=false,C=true")
	fmt.Println(err)
	fmt.Println("invalid value:", errors.Is(err, featuregate.ErrInvalidValue), "unknown:", errors.Is(err, featuregate.ErrUnknownFeature))
	var first *featuregate.Error
	if errors.As(err, &first) {
		fmt.Println("first:", first.Reason, first.Feature, first.Value)
	}
	fmt.Println("A unchanged:", gate.Enabled("A"))

	fmt.Println(gate.Set("A=maybe"))
	fmt.Println(gate.Set("A"))
	fmt.Println(gate.Set("A=true"), gate.Enabled("A"))
	// Output:
	// cannot set feature gate B to false, feature is locked to true
	// unrecognized feature gate: C
	// invalid value: true unknown: true
	// first: Locked B false
	// A unchanged: false
	// invalid value of A=maybe, err: strconv.ParseBool: parsing "maybe": invalid syntax
	// missing bool value for A
	// <nil> true
}

// AllAlpha and AllBeta set every alpha/beta feature not set explicitly, in any order.
func ExampleAllAlpha() {
	gate := featuregate.New()
	_ = gate.Add(map[featuregate.Feature]featuregate.FeatureSpec{
		"X": {PreRelease: featuregate.Alpha},
		"Y": {PreRelease: featuregate.Alpha},
	})
	_ = gate.Set("Y=false,AllAlpha=true")
	fmt.Println("X:", gate.Enabled("X"), "Y:", gate.Enabled("Y"))
	// Output:
	// X: true Y: false
}

// KnownFeatures is the help text of --feature-gates.
func ExampleGate_KnownFeatures() {
	gate := featuregate.New()
	_ = gate.Add(map[featuregate.Feature]featuregate.FeatureSpec{
		"Shiny":  {Default: true, PreRelease: featuregate.Beta},
		"Stable": {Default: true, PreRelease: featuregate.GA, LockToDefault: true}, // hidden
	})
	for _, line := range gate.KnownFeatures() {
		fmt.Println(line)
	}
	// Output:
	// AllAlpha=true|false (ALPHA - default=false)
	// AllBeta=true|false (BETA - default=false)
	// Shiny=true|false (BETA - default=true)
}

// An unregistered feature reads false instead of panicking (and is reported once).
func ExampleGate_Enabled() {
	gate := featuregate.New(featuregate.WithLogger(discard()))
	fmt.Println(gate.Enabled("NeverRegistered"))
	// Output:
	// false
}

// One --feature-gates flag drives client-go's gates too.
func ExampleClientGoAdapter() {
	gate := featuregate.New()
	if err := gate.AddClientGoFeatures(); err != nil {
		fmt.Println(err)
		return
	}
	_ = gate.Set("WatchListClient=false")

	original := clientfeatures.FeatureGates()
	clientfeatures.ReplaceFeatureGates(featuregate.ClientGoAdapter(gate))
	defer clientfeatures.ReplaceFeatureGates(original) // only because this is an example

	fmt.Println("client-go WatchListClient:", clientfeatures.FeatureGates().Enabled(clientfeatures.WatchListClient))
	// Output:
	// client-go WatchListClient: false
}
