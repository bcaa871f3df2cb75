package featuregate

import (
	clientfeatures "k8s.io/client-go/features"
)

// ClientGoGates lets a Gate back client-go's own feature gates (WatchListClient,
// InOrderInformers, ...), so one --feature-gates flag controls both your features and
// client-go's, as in kube-controller-manager:
//
//	gate := featuregate.New()
//	if err := gate.AddClientGoFeatures(); err != nil { ... }
//	clientfeatures.ReplaceFeatureGates(featuregate.ClientGoAdapter(gate))
//
// It implements client-go's features.Gates, Registry and VersionedRegistry, and the
// Set/SetForTesting pair that k8s.io/client-go/features/testing.SetFeatureDuringTest uses.
type ClientGoGates struct {
	gate *Gate
}

var (
	_ clientfeatures.Gates             = (*ClientGoGates)(nil)
	_ clientfeatures.Registry          = (*ClientGoGates)(nil)
	_ clientfeatures.VersionedRegistry = (*ClientGoGates)(nil)
)

// ClientGoAdapter returns the client-go view of g. Pass it to
// clientfeatures.ReplaceFeatureGates after registering client-go's features in g.
func ClientGoAdapter(g *Gate) *ClientGoGates { return &ClientGoGates{gate: g} }

// AddClientGoFeatures registers client-go's known features in g with their version
// histories, so they follow g's emulation version and can be set with --feature-gates.
// Call it before the gate is read or its flag registered.
func (g *Gate) AddClientGoFeatures() error {
	return clientfeatures.AddVersionedFeaturesToExistingFeatureGates(ClientGoAdapter(g))
}

// Enabled implements clientfeatures.Gates with (*Gate).Enabled's semantics (an unknown
// feature reads false and is reported once).
func (a *ClientGoGates) Enabled(f clientfeatures.Feature) bool {
	return a.gate.Enabled(Feature(f))
}

// Add implements clientfeatures.Registry (client-go passes unversioned specs).
func (a *ClientGoGates) Add(features map[clientfeatures.Feature]clientfeatures.FeatureSpec) error {
	m := make(map[Feature]FeatureSpec, len(features))
	for f, s := range features {
		m[Feature(f)] = fromClientGo(s)
	}
	return a.gate.Add(m)
}

// AddVersioned implements clientfeatures.VersionedRegistry.
func (a *ClientGoGates) AddVersioned(features map[clientfeatures.Feature]clientfeatures.VersionedSpecs) error {
	m := make(map[Feature]VersionedSpecs, len(features))
	for f, specs := range features {
		out := make(VersionedSpecs, len(specs))
		for i, s := range specs {
			out[i] = fromClientGo(s)
		}
		m[Feature(f)] = out
	}
	return a.gate.AddVersioned(m)
}

// Set sets one feature with (*Gate).SetFromMap's rules (it fails once the gate is frozen).
func (a *ClientGoGates) Set(f clientfeatures.Feature, value bool) error {
	return a.gate.SetFromMap(map[string]bool{string(f): value})
}

// SetForTesting is for client-go's features/testing.SetFeatureDuringTest: it overrides the
// feature through the test override path, so it works on a gate that was already read.
// Setting the value the feature would have anyway drops the override, which is how that
// helper's restore step leaves the gate as it found it. Because anyone can call it, it
// respects Freeze (ErrClosed), unlike package featuregatetesting.
func (a *ClientGoGates) SetForTesting(f clientfeatures.Feature, value bool) error {
	return a.gate.setOverrideValue(Feature(f), value)
}

func fromClientGo(s clientfeatures.FeatureSpec) FeatureSpec {
	return FeatureSpec{
		Default:       s.Default,
		LockToDefault: s.LockToDefault,
		PreRelease:    Stage(s.PreRelease),
		Version:       s.Version,
	}
}
