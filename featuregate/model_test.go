package featuregate_test

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/version"

	"github.com/ctrlkit/ctrlkit/featuregate"
)

// model is an independent, naive re-statement of the gate's rules: it keeps the explicit
// values and the emulation version and resolves features from scratch every time.
type model struct {
	explicit  map[featuregate.Feature]bool
	emulation *version.Version
}

type modelSpec struct {
	known  bool
	stage  featuregate.Stage
	def    bool
	locked bool
}

func (m *model) spec(f featuregate.Feature) modelSpec {
	if f == featuregate.AllAlpha || f == featuregate.AllBeta {
		return modelSpec{known: true, stage: "pseudo"}
	}
	if f == laterFeature {
		e := m.emulation
		switch {
		case e == nil || e.AtLeast(v(1, 34)):
			return modelSpec{known: true, stage: featuregate.GA, def: true, locked: true}
		case e.AtLeast(v(1, 32)):
			return modelSpec{known: true, stage: featuregate.Beta, def: true}
		case e.AtLeast(v(1, 30)):
			return modelSpec{known: true, stage: featuregate.Alpha}
		default:
			return modelSpec{known: true, stage: featuregate.PreAlpha}
		}
	}
	s, ok := testSpecs[f]
	return modelSpec{known: ok, stage: s.PreRelease, def: s.Default, locked: s.LockToDefault}
}

func (m *model) valid(f featuregate.Feature, val bool) bool {
	s := m.spec(f)
	return s.known && s.stage != featuregate.PreAlpha && !(s.locked && s.def != val)
}

func (m *model) enabled(f featuregate.Feature) bool {
	if val, ok := m.explicit[f]; ok {
		return val
	}
	s := m.spec(f)
	if !s.locked {
		if all, ok := m.explicit[featuregate.AllAlpha]; ok && s.stage == featuregate.Alpha {
			return all
		}
		if all, ok := m.explicit[featuregate.AllBeta]; ok && s.stage == featuregate.Beta {
			return all
		}
	}
	return s.def && s.stage != featuregate.PreAlpha
}

// TestSetMatchesModel drives the gate and the model with the same random operations
// (valid and invalid Set strings, SetFromMap, emulation changes) and compares them after
// every step: same accept/reject decision, same state.
func TestSetMatchesModel(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	names := append([]featuregate.Feature{"Nope", "alphaoff"}, allTestFeatures...)
	values := []string{"true", "false", "1", "0", "T", "F", "maybe", ""}
	versions := []*version.Version{nil, v(1, 29), v(1, 30), v(1, 31), v(1, 32), v(1, 34)}

	steps := 3000
	if testing.Short() {
		steps = 300
	}
	g := featuregate.New(featuregate.WithLogger(discard()))
	require.NoError(t, g.Add(testSpecs))
	require.NoError(t, g.AddVersioned(map[featuregate.Feature]featuregate.VersionedSpecs{laterFeature: laterHistory}))
	m := &model{explicit: map[featuregate.Feature]bool{}}

	for step := range steps {
		switch op := rng.IntN(10); {
		case op < 6: // Set with 0..3 entries
			var entries []string
			ok := true
			pending := map[featuregate.Feature]bool{}
			for range rng.IntN(4) {
				f := names[rng.IntN(len(names))]
				val := values[rng.IntN(len(values))]
				entries = append(entries, " "+string(f)+"="+val)
				b, err := strconv.ParseBool(val)
				if err != nil {
					ok = false
					continue
				}
				pending[f] = b // a feature named twice keeps its last value
			}
			for f, b := range pending {
				ok = ok && m.valid(f, b)
			}
			in := strings.Join(entries, ",")
			err := g.Set(in)
			require.Equal(t, ok, err == nil, "step %d: Set(%q) error %v", step, in, err)
			if ok {
				for f, b := range pending {
					m.explicit[f] = b
				}
			}
		case op < 8: // SetFromMap of one entry
			f := names[rng.IntN(len(names))]
			b := rng.IntN(2) == 0
			err := g.SetFromMap(map[string]bool{string(f): b})
			ok := m.valid(f, b)
			require.Equal(t, ok, err == nil, "step %d: SetFromMap(%s=%t) error %v", step, f, b, err)
			if ok {
				m.explicit[f] = b
			}
		default: // SetEmulationVersion
			ver := versions[rng.IntN(len(versions))]
			next := &model{explicit: m.explicit, emulation: ver}
			ok := true
			for f, b := range m.explicit {
				ok = ok && next.valid(f, b)
			}
			err := g.SetEmulationVersion(ver)
			require.Equal(t, ok, err == nil, "step %d: SetEmulationVersion(%v) error %v", step, ver, err)
			if ok {
				m.emulation = ver
			}
		}
		for _, f := range allTestFeatures {
			require.Equal(t, m.enabled(f), g.Enabled(f), "step %d: feature %s (state %s, emulation %v)", step, f, g.String(), m.emulation)
		}
	}
}
