package featuregate

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/version"
)

// snapshot is one immutable state of the gate. Its maps are never written after it is
// published; mutations copy them.
type snapshot struct {
	// enabled holds the resolved value of every known feature, pseudo gates included.
	enabled map[Feature]bool
	// known is every registered feature's validated history.
	known map[Feature]VersionedSpecs
	// explicit holds what Set/SetFromMap stored (AllAlpha/AllBeta included).
	explicit map[Feature]bool
	// overrides are test overrides (featuregatetesting); they win over explicit.
	overrides map[Feature]bool
	// emulation is the emulated version; nil means the newest spec of each feature.
	emulation *version.Version
	// minCompat is the min compatibility version; nil means one minor before emulation
	// (no bound without emulation).
	minCompat *version.Version
	// deps maps a feature to the features it depends on (sorted, no duplicates).
	deps map[Feature][]Feature
	// read is set once the gate answered Enabled (Gate.read says the same); until then
	// Enabled takes the slow path, which records the read.
	read bool
}

func initialSnapshot() *snapshot {
	known := make(map[Feature]VersionedSpecs, len(pseudoSpecs))
	for f, s := range pseudoSpecs {
		known[f] = VersionedSpecs{s}
	}
	s := &snapshot{known: known, explicit: map[Feature]bool{}, overrides: map[Feature]bool{}}
	return s.rebuild()
}

// check validates f=v against the snapshot's registry and versions.
func (s *snapshot) check(f Feature, v bool) error {
	specs, ok := s.known[f]
	if !ok {
		return unknownFeature(f)
	}
	spec := specAt(specs, s.emulation, s.minCompat)
	switch {
	case spec.LockToDefault && spec.Default != v:
		return locked(f, v, spec.Default)
	case spec.PreRelease == PreAlpha:
		return preAlpha(f, v, s.emulation, s.minCompat)
	}
	return nil
}

// specAt is the spec of a known feature in force at the snapshot's versions.
func (s *snapshot) specAt(f Feature) FeatureSpec {
	return specAt(s.known[f], s.emulation, s.minCompat)
}

// rebuild resolves every feature and returns s with a fresh enabled map.
//
// Precedence: test override > explicit value > AllAlpha/AllBeta (for a feature at that
// stage, not locked) > the spec's default. PreAlpha features are false. Because AllAlpha and
// AllBeta are applied here, from the whole explicit set, the order in which values were set
// never matters.
func (s *snapshot) rebuild() *snapshot {
	lookup := func(f Feature) (bool, bool) {
		if v, ok := s.overrides[f]; ok {
			return v, true
		}
		v, ok := s.explicit[f]
		return v, ok
	}
	enabled := make(map[Feature]bool, len(s.known))
	for f, specs := range s.known {
		if v, ok := lookup(f); ok {
			enabled[f] = v
			continue
		}
		spec := specAt(specs, s.emulation, s.minCompat)
		v := spec.Default
		if !isPseudo(f) && !spec.LockToDefault {
			switch spec.PreRelease {
			case Alpha:
				if all, ok := lookup(AllAlpha); ok {
					v = all
				}
			case Beta:
				if all, ok := lookup(AllBeta); ok {
					v = all
				}
			}
		}
		enabled[f] = v
	}
	s.enabled = enabled
	return s
}

func (s *snapshot) String() string {
	pairs := make([]string, 0, len(s.explicit))
	for _, f := range slices.Sorted(maps.Keys(s.explicit)) {
		pairs = append(pairs, fmt.Sprintf("%s=%t", f, s.explicit[f]))
	}
	return strings.Join(pairs, ",")
}
