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
	require.ErrorIs(t, g.Set("Alpha=true"), featuregate.ErrClosed)

	t.Run("inner", func(t *testing.T) {
		featuregatetesting.SetDuringTest(t, g, alpha, true)
		assert.True(t, g.Enabled(alpha))
	})
	assert.False(t, g.Enabled(alpha))
	require.ErrorIs(t, g.Set("Alpha=true"), featuregate.ErrClosed, "still frozen afterwards")
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
		{f: later, v: true, want: "featuregatetesting: cannot set Later=true: cannot set feature gate Later to true, feature is PreAlpha at emulated version 1.30, min compatibility version 1.29"},
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

// Issue 22 (1): an AllAlpha/AllBeta override wins over values set earlier with Set, as
// component-base's helper makes it; features named in the same call win over it.
func TestAllAlphaAllBetaOverridesWinOverSet(t *testing.T) {
	g := newGate(t)
	require.NoError(t, g.Set("Alpha=false,Beta=false"))
	t.Run("all alpha", func(t *testing.T) {
		featuregatetesting.SetDuringTest(t, g, featuregate.AllAlpha, true)
		assert.True(t, g.Enabled(alpha), "the override beats Alpha=false from Set")
		assert.False(t, g.Enabled(beta), "AllAlpha does not touch beta features")
	})
	assert.False(t, g.Enabled(alpha))
	t.Run("all beta with an explicit exception", func(t *testing.T) {
		featuregatetesting.SetManyDuringTest(t, g, map[featuregate.Feature]bool{featuregate.AllBeta: true, featuregate.AllAlpha: true, alpha: false})
		assert.True(t, g.Enabled(beta))
		assert.False(t, g.Enabled(alpha), "a feature named in the call beats AllAlpha")
		assert.True(t, g.Enabled(locked), "locked features are left alone")
	})
	assert.False(t, g.Enabled(beta))
	assert.Equal(t, "Alpha=false,Beta=false", g.String())
}

func newDependentGate(t *testing.T) *featuregate.Gate {
	t.Helper()
	g := featuregate.New()
	require.NoError(t, g.Add(map[featuregate.Feature]featuregate.FeatureSpec{
		"Base":     {PreRelease: featuregate.Beta, Default: true},
		"Mid":      {PreRelease: featuregate.Beta, Default: true},
		"Top":      {PreRelease: featuregate.Beta, Default: true},
		"Other":    {PreRelease: featuregate.Beta, Default: true},
		"AlphaDep": {PreRelease: featuregate.Alpha},
		"NeedsDep": {PreRelease: featuregate.Alpha},
	}))
	require.NoError(t, g.AddDependencies(map[featuregate.Feature][]featuregate.Feature{
		"Mid": {"Base"}, "Top": {"Mid"}, "NeedsDep": {"AlphaDep"},
	}))
	return g
}

// Turning a dependency off turns off what depends on it (transitively), as upstream's
// helper does, and says so in the test log.
func TestOverrideDisablesDependents(t *testing.T) {
	g := newDependentGate(t)
	var logs []string
	t.Run("inner", func(t *testing.T) {
		logger := &logTB{TB: t, logs: &logs}
		featuregatetesting.SetDuringTest(logger, g, "Base", false)
		assert.False(t, g.Enabled("Base"))
		assert.False(t, g.Enabled("Mid"))
		assert.False(t, g.Enabled("Top"))
		assert.True(t, g.Enabled("Other"))
	})
	assert.Equal(t, []string{
		"Disabling feature Mid since it depends on disabled feature Base",
		"Disabling feature Top since it depends on disabled feature Base",
	}, logs)
	assert.True(t, g.Enabled("Top"), "restored")
}

// A feature and its dependency switch on together in one call; alone, the dependent
// cannot be on while its dependency is off.
func TestOverrideChecksDependencies(t *testing.T) {
	g := newDependentGate(t)
	fake := &fakeTB{TB: t, name: t.Name() + "/fake"}
	featuregatetesting.SetDuringTest(fake, g, "NeedsDep", true)
	assert.Equal(t, []string{"featuregatetesting: cannot set NeedsDep=true: NeedsDep is enabled, but depends on features that are disabled: [AlphaDep]"}, fake.fatals)
	assert.False(t, g.Enabled("NeedsDep"))
	t.Run("together", func(t *testing.T) {
		featuregatetesting.SetManyDuringTest(t, g, map[featuregate.Feature]bool{"NeedsDep": true, "AlphaDep": true})
		assert.True(t, g.Enabled("NeedsDep"))
	})
	assert.False(t, g.Enabled("NeedsDep"))
}

// logTB collects Logf lines.
type logTB struct {
	testing.TB
	logs *[]string
}

func (l *logTB) Logf(format string, args ...any) {
	*l.logs = append(*l.logs, fmt.Sprintf(format, args...))
}

func TestSetEmulationVersionDuringTest(t *testing.T) {
	g := newGate(t) // emulates 1.30: Later is PreAlpha
	assert.False(t, g.Enabled(later))
	g.Freeze()
	t.Run("inner", func(t *testing.T) {
		featuregatetesting.SetEmulationVersionDuringTest(t, g, version.MajorMinor(1, 31))
		assert.Equal(t, "1.31", g.EmulationVersion().String())
		assert.Equal(t, "1.30", g.MinCompatibilityVersion().String())
		featuregatetesting.SetDuringTest(t, g, later, true)
		assert.True(t, g.Enabled(later), "Later exists at 1.31 and can be overridden")
		t.Run("nested", func(t *testing.T) {
			featuregatetesting.SetVersionsDuringTest(t, g, version.MajorMinor(1, 32), version.MajorMinor(1, 32))
			assert.Equal(t, "1.32", g.MinCompatibilityVersion().String())
		})
		assert.Equal(t, "1.31", g.EmulationVersion().String())
	})
	assert.Equal(t, "1.30", g.EmulationVersion().String())
	assert.Equal(t, "1.29", g.MinCompatibilityVersion().String())
	assert.False(t, g.Enabled(later))
	require.ErrorIs(t, g.SetEmulationVersion(version.MajorMinor(1, 31)), featuregate.ErrClosed, "still frozen")
}

func TestSetVersionsDuringTestFailures(t *testing.T) {
	g := newGate(t)
	fake := &fakeTB{TB: t, name: t.Name() + "/fake"}
	featuregatetesting.SetVersionsDuringTest(fake, g, version.MajorMinor(1, 30), version.MajorMinor(1, 31))
	assert.Equal(t, []string{"featuregatetesting: cannot set versions (emu=1.30, min=1.31): minCompatibilityVersion version 1.31 is not between [0.0, 1.30]"}, fake.fatals)

	// Two parallel tests may not set different versions on one gate.
	var wg sync.WaitGroup
	holding, release := make(chan struct{}), make(chan struct{})
	wg.Go(func() {
		t.Run("holder", func(t *testing.T) {
			featuregatetesting.SetEmulationVersionDuringTest(t, g, version.MajorMinor(1, 31))
			close(holding)
			<-release
		})
	})
	<-holding
	other := &fakeTB{TB: t, name: "TestSomethingElse"}
	featuregatetesting.SetEmulationVersionDuringTest(other, g, version.MajorMinor(1, 32))
	close(release)
	wg.Wait()
	assert.Equal(t, []string{"featuregatetesting: the versions of the gate are already set by test TestSetVersionsDuringTestFailures/holder, cannot set them in TestSomethingElse"}, other.fatals)
	assert.Equal(t, "1.30", g.EmulationVersion().String())
}
