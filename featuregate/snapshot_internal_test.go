package featuregate

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// One SetFromMap publishes one snapshot: a reader never sees half of a multi-feature
// change. A and B are always set together, so every snapshot has A == B.
func TestSnapshotsAreNeverTorn(t *testing.T) {
	g := New()
	require.NoError(t, g.Add(map[Feature]FeatureSpec{
		"A": {PreRelease: Beta}, "B": {PreRelease: Beta}, "C": {PreRelease: Beta, Default: true},
	}))
	const writes = 2000
	var wg sync.WaitGroup
	done := make(chan struct{})
	wg.Go(func() {
		defer close(done)
		for i := range writes {
			v := i%2 == 0
			if err := g.SetFromMap(map[string]bool{"A": v, "B": v}); err != nil {
				t.Error(err)
				return
			}
			// The test override path publishes whole snapshots too.
			restore, err := g.setOverrides(map[Feature]bool{"A": !v}, nil)
			if err != nil {
				t.Error(err)
				return
			}
			restore()
		}
	})
	const readers = 2
	torn := make([]int, readers)
	for r := range readers {
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				s := g.snap.Load()
				_, overridden := s.overrides["A"]
				if !overridden && s.enabled["A"] != s.enabled["B"] {
					torn[r]++
				}
				if overridden && s.enabled["A"] == s.enabled["B"] {
					torn[r]++
				}
				if !s.enabled["C"] {
					torn[r]++
				}
			}
		})
	}
	wg.Wait()
	assert.Equal(t, make([]int, readers), torn)
	assert.Empty(t, g.snap.Load().overrides)
}

// Enabled must not allocate (checked here, measured in the benchmarks).
func TestEnabledDoesNotAllocate(t *testing.T) {
	g := New()
	require.NoError(t, g.Add(map[Feature]FeatureSpec{"A": {PreRelease: Beta, Default: true}}))
	allocs := testing.AllocsPerRun(1000, func() {
		if !g.Enabled("A") {
			t.Fatal("A should be on")
		}
	})
	assert.Zero(t, allocs)
}
