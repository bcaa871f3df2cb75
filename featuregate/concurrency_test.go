package featuregate_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctrlkit/ctrlkit/featuregate"
	"github.com/ctrlkit/ctrlkit/featuregate/featuregatetesting"
)

// hundredFeatures returns a gate with 100 features of mixed stages and their names.
func hundredFeatures(t testing.TB) (*featuregate.Gate, []featuregate.Feature) {
	t.Helper()
	specs := make(map[featuregate.Feature]featuregate.FeatureSpec, 100)
	names := make([]featuregate.Feature, 0, 100)
	stages := []featuregate.Stage{featuregate.Alpha, featuregate.Beta, featuregate.GA, featuregate.Deprecated}
	for i := range 100 {
		f := featuregate.Feature(fmt.Sprintf("ControllerFeatureNumber%03d", i))
		specs[f] = featuregate.FeatureSpec{Default: i%3 == 0, PreRelease: stages[i%len(stages)]}
		names = append(names, f)
	}
	g := featuregate.New(featuregate.WithLogger(discard()))
	require.NoError(t, g.Add(specs))
	return g, names
}

func TestConcurrentEnabledReadsWhileNothingMutates(t *testing.T) {
	g, names := hundredFeatures(t)
	require.NoError(t, g.Set(fmt.Sprintf("%s=true,%s=false", names[1], names[3])))
	g.Freeze()
	want := make(map[featuregate.Feature]bool, len(names))
	for i, f := range names {
		want[f] = i%3 == 0
	}
	want[names[1]], want[names[3]] = true, false

	const readers, rounds = 8, 200
	var wg sync.WaitGroup
	mismatches := make([]int, readers)
	for r := range readers {
		wg.Go(func() {
			for range rounds {
				for _, f := range names {
					if g.Enabled(f) != want[f] {
						mismatches[r]++
					}
				}
			}
		})
	}
	wg.Wait()
	assert.Equal(t, make([]int, readers), mismatches)
}

// While a test override flips one feature back and forth, readers of other features
// never see a change, and readers of the flipped one see only the two published values.
func TestReadsDuringOverrideMutation(t *testing.T) {
	g, names := hundredFeatures(t)
	g.Freeze()
	flipped, stable := names[1], names[0] // defaults false and true
	const flips = 300

	var wg sync.WaitGroup
	done := make(chan struct{})
	wg.Go(func() {
		defer close(done)
		for i := range flips {
			t.Run(fmt.Sprintf("flip%d", i), func(t *testing.T) {
				featuregatetesting.SetDuringTest(t, g, flipped, true)
				if !g.Enabled(flipped) {
					t.Error("override not visible to its own goroutine")
				}
			})
		}
	})
	var stableChanged, seenTrue int
	wg.Go(func() {
		for {
			select {
			case <-done:
				return
			default:
			}
			if !g.Enabled(stable) {
				stableChanged++
			}
			if g.Enabled(flipped) {
				seenTrue++
			}
		}
	})
	wg.Wait()
	assert.Zero(t, stableChanged)
	assert.False(t, g.Enabled(flipped), "every override was restored")
	t.Logf("reader saw the override %d times", seenTrue)
}

// A value published by Set is seen by any goroutine that synchronises with the writer
// afterwards (here through a channel).
func TestSetIsVisibleAfterHandOff(t *testing.T) {
	g, names := hundredFeatures(t)
	f := names[1]
	values, acks := make(chan bool), make(chan struct{})
	var wg sync.WaitGroup
	wrong := 0
	wg.Go(func() {
		for want := range values {
			if g.Enabled(f) != want {
				wrong++
			}
			acks <- struct{}{} // the writer waits, so the next Set cannot overtake this read
		}
	})
	for i := range 500 {
		want := i%2 == 0
		require.NoError(t, g.SetFromMap(map[string]bool{string(f): want}))
		values <- want
		<-acks
	}
	close(values)
	wg.Wait()
	assert.Zero(t, wrong)
}
