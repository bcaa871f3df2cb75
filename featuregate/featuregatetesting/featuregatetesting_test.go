package featuregatetesting_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"k8s.io/apimachinery/pkg/util/version"

	"github.com/ctrlkit/ctrlkit/featuregate"
	"github.com/ctrlkit/ctrlkit/featuregate/featuregatetesting"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	alpha  featuregate.Feature = "Alpha"
	beta   featuregate.Feature = "Beta"
	locked featuregate.Feature = "Locked"
	later  featuregate.Feature = "Later"
)

func newGate(t *testing.T) *featuregate.Gate {
	t.Helper()
	g := featuregate.New(featuregate.WithEmulationVersion(version.MajorMinor(1, 30)))
	require.NoError(t, g.Add(map[featuregate.Feature]featuregate.FeatureSpec{
		alpha:  {PreRelease: featuregate.Alpha},
		beta:   {PreRelease: featuregate.Beta, Default: true},
		locked: {PreRelease: featuregate.GA, Default: true, LockToDefault: true},
	}))
	require.NoError(t, g.AddVersioned(map[featuregate.Feature]featuregate.VersionedSpecs{
		later: {{Version: version.MajorMinor(1, 31), PreRelease: featuregate.Alpha}},
	}))
	return g
}

func TestSetDuringTestRestores(t *testing.T) {
	g := newGate(t)
	require.NoError(t, g.Set("Beta=false"))
	t.Run("inner", func(t *testing.T) {
		featuregatetesting.SetDuringTest(t, g, alpha, true)
		featuregatetesting.SetDuringTest(t, g, beta, true)
		assert.True(t, g.Enabled(alpha))
		assert.True(t, g.Enabled(beta), "overrides win over explicit values")
		assert.Equal(t, "Beta=false", g.String(), "overrides are not flag values")
	})
	assert.False(t, g.Enabled(alpha))
	assert.False(t, g.Enabled(beta), "the explicit value is back")
	assert.Equal(t, "Beta=false", g.String())
}

func TestSetDuringTestWorksOnReadAndFrozenGates(t *testing.T) {
	g := newGate(t)
	assert.False(t, g.Enabled(alpha)) // read: registration is closed
	g.Freeze()                        // frozen: Set is refused
	require.ErrorIs(t, g.Set("Alpha=true"), featuregate.ErrFrozen)

	t.Run("inner", func(t *testing.T) {
		featuregatetesting.SetDuringTest(t, g, alpha, true)
		assert.True(t, g.Enabled(alpha))
	})
	assert.False(t, g.Enabled(alpha))
	require.ErrorIs(t, g.Set("Alpha=true"), featuregate.ErrFrozen, "still frozen afterwards")
}

func TestNestedOverridesRestoreInReverse(t *testing.T) {
	g := newGate(t)
	t.Run("outer", func(t *testing.T) {
		featuregatetesting.SetDuringTest(t, g, alpha, true)
		t.Run("inner", func(t *testing.T) {
			featuregatetesting.SetDuringTest(t, g, alpha, false)
			assert.False(t, g.Enabled(alpha))
			featuregatetesting.SetDuringTest(t, g, alpha, true) // same test again: fine
			assert.True(t, g.Enabled(alpha))
		})
		assert.True(t, g.Enabled(alpha), "outer value restored")
	})
	assert.False(t, g.Enabled(alpha), "default restored")
}

func TestSetManyDuringTest(t *testing.T) {
	g := newGate(t)
	t.Run("inner", func(t *testing.T) {
		featuregatetesting.SetManyDuringTest(t, g, map[featuregate.Feature]bool{alpha: true, beta: false})
		assert.True(t, g.Enabled(alpha))
		assert.False(t, g.Enabled(beta))
	})
	assert.False(t, g.Enabled(alpha))
	assert.True(t, g.Enabled(beta))
}

func TestAllAlphaOverride(t *testing.T) {
	g := newGate(t)
	t.Run("inner", func(t *testing.T) {
		featuregatetesting.SetDuringTest(t, g, featuregate.AllAlpha, true)
		assert.True(t, g.Enabled(alpha))
		assert.True(t, g.Enabled(featuregate.AllAlpha))
		assert.True(t, g.Enabled(beta))
	})
	assert.False(t, g.Enabled(alpha))
}

// fakeTB records Fatalf instead of stopping the real test.
type fakeTB struct {
	testing.TB
	name   string
	fatals []string
}

func (f *fakeTB) Helper()      {}
func (f *fakeTB) Name() string { return f.name }
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.fatals = append(f.fatals, fmt.Sprintf(format, args...))
}

func TestInvalidOverridesFailTheTest(t *testing.T) {
	g := newGate(t)
	for _, tc := range []struct {
		f    featuregate.Feature
		v    bool
		want string
	}{
		{f: "Nope", v: true, want: "featuregatetesting: cannot set Nope=true: unrecognized feature gate: Nope"},
		{f: locked, v: false, want: "featuregatetesting: cannot set Locked=false: cannot set feature gate Locked to false, feature is locked to true"},
		{f: later, v: true, want: "featuregatetesting: cannot set Later=true: cannot set feature gate Later to true, feature is PreAlpha at emulated version 1.30"},
	} {
		fake := &fakeTB{TB: t, name: t.Name() + "/fake"}
		featuregatetesting.SetDuringTest(fake, g, tc.f, tc.v)
		assert.Equal(t, []string{tc.want}, fake.fatals)
	}
	// A failed override does not hold the feature: another test can override it.
	t.Run("after", func(t *testing.T) {
		featuregatetesting.SetDuringTest(t, g, locked, true)
		assert.True(t, g.Enabled(locked))
	})
}

func TestParallelTestsMayNotShareAFeature(t *testing.T) {
	g := newGate(t)
	var wg sync.WaitGroup
	holding, release := make(chan struct{}), make(chan struct{})
	wg.Go(func() {
		t.Run("holder", func(t *testing.T) {
			featuregatetesting.SetDuringTest(t, g, alpha, true)
			close(holding)
			<-release
		})
	})
	<-holding
	fake := &fakeTB{TB: t, name: "TestSomethingElse"}
	featuregatetesting.SetDuringTest(fake, g, alpha, false)
	close(release)
	wg.Wait()
	require.Len(t, fake.fatals, 1)
	assert.Contains(t, fake.fatals[0], "feature Alpha is already overridden by test TestParallelTestsMayNotShareAFeature/holder")
	assert.False(t, g.Enabled(alpha))
}
